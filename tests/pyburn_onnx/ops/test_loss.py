"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node

RNG = np.random.default_rng(6)


def _case(shape: tuple[int, ...], weight: bool, ignore: int | None) -> tuple[list, dict]:
    scores = RNG.standard_normal(shape).astype(np.float32)
    target = RNG.integers(0, shape[1], shape[:1] + shape[2:]).astype(np.int64)
    attrs: dict = {}
    if ignore is not None:
        target.flat[::3] = ignore
        attrs["ignore_index"] = ignore
    inputs = [scores, target]
    if weight:
        inputs.append(RNG.random(shape[1]).astype(np.float32))
    return inputs, attrs


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 3, 2, 2)])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("ignore", [None, 1, -3])  # the reference special-cases -1
def test_nll_loss(dev: str, shape: tuple[int, ...], reduction: str, weight: bool,
                  ignore: int | None) -> None:
    inputs, attrs = _case(shape, weight, ignore)
    check_node("NegativeLogLikelihoodLoss", inputs, {**attrs, "reduction": reduction},
               opset=22, device=dev, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4)])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("ignore", [None, 2])
def test_softmax_cross_entropy_loss(dev: str, shape: tuple[int, ...], reduction: str,
                                    weight: bool, ignore: int | None) -> None:
    inputs, attrs = _case(shape, weight, ignore)
    check_node("SoftmaxCrossEntropyLoss", inputs, {**attrs, "reduction": reduction},
               opset=13, device=dev, outputs=2, rtol=1e-5, atol=1e-6)
