"""RNN, GRU and LSTM against onnxruntime (onnx's reference runs only the forward,
default-activation case)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(4)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
OUTPUTS = {"RNN": 2, "GRU": 2, "LSTM": 3}
T, B, IN, H = 4, 3, 5, 2


def _f(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.6).astype(np.float32)


def _inputs(op: str, directions: int, layout: int, *, bias: bool = True, lengths: bool = False,
            initial: bool = False, peepholes: bool = False) -> list[np.ndarray | None]:
    g = GATES[op]
    x = _f(B, T, IN) if layout else _f(T, B, IN)
    state = (B, directions, H) if layout else (directions, B, H)
    inputs = [x, _f(directions, g * H, IN), _f(directions, g * H, H),
              _f(directions, 2 * g * H) if bias else None,
              np.array([4, 2, 1], np.int32) if lengths else None,
              _f(*state) if initial else None]
    if op == "LSTM":
        inputs += [_f(*state) if initial else None, _f(directions, 3 * H) if peepholes else None]
    while inputs[-1] is None:
        inputs.pop()
    return inputs


def _check(op: str, inputs: list, attrs: dict, dev: str) -> None:
    n = OUTPUTS[op]
    if attrs.get("layout"):
        # onnxruntime runs time-major only: the same data time-major, transposed back
        major = [a if a is None or k in (1, 2, 3, 4, 7) else np.swapaxes(a, 0, 1)
                 for k, a in enumerate(inputs)]
        want = ort_outputs(op, major, {**attrs, "layout": 0, "hidden_size": H}, opset=14,
                           outputs=n)
        want = [np.transpose(want[0], (2, 0, 1, 3))] + [np.swapaxes(s, 0, 1) for s in want[1:]]
    else:
        want = ort_outputs(op, inputs, {**attrs, "hidden_size": H}, opset=14, outputs=n)
    check_node(op, inputs, {**attrs, "hidden_size": H}, opset=14, device=dev, outputs=n,
               rtol=1e-4, atol=1e-5, expected=want)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts(dev: str, op: str, direction: str, layout: int) -> None:
    d = 2 if direction == "bidirectional" else 1
    _check(op, _inputs(op, d, layout, initial=True), {"direction": direction, "layout": layout},
           dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens(dev: str, op: str, direction: str) -> None:
    d = 2 if direction == "bidirectional" else 1
    _check(op, _inputs(op, d, 0, lengths=True, initial=True), {"direction": direction}, dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", list(GATES))
def test_no_bias_and_clip(dev: str, op: str) -> None:
    inputs = [(x * 4).astype(np.float32) if x is not None and x.ndim == 3 else x
              for x in _inputs(op, 1, 0, bias=False)]
    _check(op, inputs, {"clip": 0.7}, dev)


ACTIVATIONS = {
    "RNN": (["Relu"], [], []),
    "GRU": (["HardSigmoid", "LeakyRelu"], [0.3, 0.2], [0.4]),
    "LSTM": (["HardSigmoid", "Affine", "ScaledTanh"], [0.3, 0.8, 1.5], [0.4, 0.1, 0.7]),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", list(GATES))
def test_activations(dev: str, op: str) -> None:
    names, alphas, betas = ACTIVATIONS[op]
    attrs = {"activations": names * 2, "activation_alpha": alphas * 2,
             "activation_beta": betas * 2, "direction": "bidirectional"}
    if not alphas:
        del attrs["activation_alpha"], attrs["activation_beta"]
    _check(op, _inputs(op, 2, 0), attrs, dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_gru_linear_before_reset(dev: str) -> None:
    _check("GRU", _inputs("GRU", 2, 0, initial=True, lengths=True),
           {"linear_before_reset": 1, "direction": "bidirectional"}, dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_peepholes(dev: str, input_forget: int) -> None:
    _check("LSTM", _inputs("LSTM", 2, 0, initial=True, peepholes=True, lengths=True),
           {"direction": "bidirectional", "input_forget": input_forget}, dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", list(GATES))
def test_against_onnx_reference(dev: str, op: str) -> None:
    check_node(op, _inputs(op, 1, 0, initial=True), {"hidden_size": H}, opset=14, device=dev,
               outputs=2, rtol=1e-4, atol=1e-5)
