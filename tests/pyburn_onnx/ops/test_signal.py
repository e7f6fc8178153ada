"""The window functions, DFT, STFT and MelWeightMatrix against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node

RNG = np.random.default_rng(9)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("dtype", [1, 11])
def test_windows(dev: str, op: str, periodic: int, dtype: int) -> None:
    check_node(op, [np.array(10, np.int64)], {"periodic": periodic, "output_datatype": dtype},
               opset=17, device=dev, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("complex_input", [False, True])
@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("length", [None, 4, 9])
@pytest.mark.parametrize("onesided", [0, 1])
def test_dft(dev: str, complex_input: bool, axis: int, length: int | None,
             onesided: int) -> None:
    x = RNG.standard_normal((2, 6, 5, 2 if complex_input else 1)).astype(np.float32)
    if onesided and complex_input:
        pytest.skip("a one-sided transform takes a real signal")
    inputs = [x, None if length is None else np.array(length, np.int64), np.array(axis)]
    check_node("DFT", inputs, {"onesided": onesided}, opset=20, device=dev, rtol=1e-4,
               atol=1e-4)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("length", [None, 12])
def test_inverse_dft(dev: str, onesided: int, length: int | None) -> None:
    x = RNG.standard_normal((2, 7, 2)).astype(np.float32)
    inputs = [x, None if length is None else np.array(length, np.int64), np.array(1)]
    check_node("DFT", inputs, {"inverse": 1, "onesided": onesided}, opset=20, device=dev,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
def test_dft_opset17_axis_attribute(dev: str) -> None:
    x = RNG.standard_normal((3, 8, 1)).astype(np.float32)
    check_node("DFT", [x], {"axis": 1}, opset=17, device=dev, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("window", [False, True])
@pytest.mark.parametrize("onesided", [0, 1])
def test_stft(dev: str, window: bool, onesided: int) -> None:
    signal = RNG.standard_normal((2, 40, 1)).astype(np.float32)
    inputs = [signal, np.array(6, np.int64),
              np.hanning(10).astype(np.float32) if window else None, np.array(10, np.int64)]
    check_node("STFT", inputs, {"onesided": onesided}, opset=17, device=dev, rtol=1e-4,
               atol=1e-4)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("bins, length", [(8, 16), (5, 31)])
def test_mel_weight_matrix(dev: str, bins: int, length: int) -> None:
    inputs = [np.array(bins, np.int64), np.array(length, np.int64), np.array(8000, np.int64),
              np.array(100.0, np.float32), np.array(3500.0, np.float32)]
    check_node("MelWeightMatrix", inputs, {}, opset=17, device=dev, rtol=1e-6, atol=1e-6)
