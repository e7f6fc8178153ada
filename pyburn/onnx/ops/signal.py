"""Signal processing: the Hann, Hamming and Blackman windows, DFT, STFT and
MelWeightMatrix.

A DFT along one axis is a matmul with cos/sin matrices (computed in Python, float64, then
held in the signal's dtype): O(n^2) per transform rather than an FFT's O(n log n), but a
handful of tensor ops that run on every device and differentiate. Complex values are ONNX's
trailing dim of 2 (real, imaginary); a trailing dim of 1 is a real signal.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ... import Tensor, float64, stack, tensor
from ...nn.functional.windows import windows
from ..registry import check, ints, onnx_op
from .cast import held_code


def _held_floats(values: list, output_datatype: int, device) -> Tensor:
    """Python floats as a tensor of ONNX type `output_datatype` (made in float64 only when
    that is the type asked for)."""
    dtype = held_code(output_datatype, device)
    made = dtype if dtype.is_floating_point else "float32"
    return tensor(values, dtype=made, device=device).cast(dtype)


def _window(size: Tensor, output_datatype: int, periodic: int, device,
            value: Callable[[float], float]) -> Tensor:
    n = ints(size)[0]
    check(n >= 0, f"window size must be non-negative, got {n}")
    period = n if periodic else n - 1
    values = [value(2.0 * math.pi * i / period) if period else 1.0 for i in range(n)]
    return _held_floats(values, output_datatype, device)


@onnx_op("HannWindow", since=17)
def hann_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1,
                device=None) -> Tensor:
    """HannWindow: ``0.5 - 0.5 cos(2 pi n / N)`` with N = size (periodic) or size - 1."""
    return _window(size, output_datatype, periodic, device, lambda t: 0.5 - 0.5 * math.cos(t))


@onnx_op("HammingWindow", since=17)
def hamming_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1,
                   device=None) -> Tensor:
    """HammingWindow: ``25/46 - 21/46 cos(2 pi n / N)``."""
    return _window(size, output_datatype, periodic, device,
                   lambda t: 25.0 / 46.0 - 21.0 / 46.0 * math.cos(t))


@onnx_op("BlackmanWindow", since=17)
def blackman_window(size: Tensor, *, output_datatype: int = 1, periodic: int = 1,
                    device=None) -> Tensor:
    """BlackmanWindow: ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``."""
    return _window(size, output_datatype, periodic, device,
                   lambda t: 0.42 - 0.5 * math.cos(t) + 0.08 * math.cos(2.0 * t))


def _parts(x: Tensor, op: str) -> tuple[Tensor, Tensor | None]:
    """The real and imaginary parts of ONNX's (..., 1 or 2) signal layout."""
    check(x.ndim >= 2 and x.shape[-1] in (1, 2),
          f"{op}: the last dim must be 1 (real) or 2 (complex), got shape {x.shape}")
    return x[..., 0], (x[..., 1] if x.shape[-1] == 2 else None)


def _matrices(used: int, length: int, bins: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """cos and sin of ``2 pi k n / length`` for n < used (rows) and k < bins (columns)."""
    angles = [[2.0 * math.pi * ((k * n) % length) / length for k in range(bins)]
              for n in range(used)]
    cos = tensor([[math.cos(a) for a in row] for row in angles], dtype=like.dtype,
                 device=like.device)
    sin = tensor([[math.sin(a) for a in row] for row in angles], dtype=like.dtype,
                 device=like.device)
    return cos.reshape(used, bins), sin.reshape(used, bins)


def _precise(t: Tensor) -> Tensor:
    """t in float64 where its device holds it: the sums of a long DFT lose float32's last
    bits."""
    return t.cast(float64) if float64 in t.device.backend.dtypes else t


def dft_last(real: Tensor, imag: Tensor | None, length: int, bins: int,
             inverse: bool) -> tuple[Tensor, Tensor]:
    """The first `bins` coefficients of the length-`length` DFT (or inverse DFT, divided by
    length) along the last dim, the signal cut or zero-padded to `length`."""
    dtype = real.dtype
    real, imag = _precise(real), None if imag is None else _precise(imag)
    used = min(real.shape[-1], length)
    real = real[..., :used]
    imag = None if imag is None else imag[..., :used]
    cos, sin = _matrices(used, length, bins, real)
    sign = 1.0 if inverse else -1.0  # e^{sign i theta}
    out_real = real @ cos
    out_imag = (real @ sin) * sign
    if imag is not None:
        out_real = out_real - (imag @ sin) * sign
        out_imag = out_imag + imag @ cos
    if inverse:
        out_real, out_imag = out_real / length, out_imag / length
    return out_real.cast(dtype), out_imag.cast(dtype)


def _irfft_last(real: Tensor, imag: Tensor | None, length: int) -> Tensor:
    """The real signal of length `length` whose one-sided spectrum (bins 0 .. length // 2,
    cut or zero-padded) is given, along the last dim."""
    dtype = real.dtype
    real, imag = _precise(real), None if imag is None else _precise(imag)
    bins = min(real.shape[-1], length // 2 + 1)
    # each bin k stands for itself and its mirror length - k, except 0 and length / 2
    weights = [1.0 if k == 0 or 2 * k == length else 2.0 for k in range(bins)]
    angles = [[2.0 * math.pi * ((k * n) % length) / length for n in range(length)]
              for k in range(bins)]
    cos = tensor([[w * math.cos(a) / length for a in row] for w, row in zip(weights, angles)],
                 dtype=real.dtype, device=real.device).reshape(bins, length)
    out = real[..., :bins] @ cos
    if imag is not None:
        sin = tensor([[w * math.sin(a) / length for a in row]
                      for w, row in zip(weights, angles)],
                     dtype=real.dtype, device=real.device).reshape(bins, length)
        out = out - imag[..., :bins] @ sin
    return out.cast(dtype)


def _dft(x: Tensor, dft_length: Tensor | None, axis: int, inverse: int, onesided: int) -> Tensor:
    op = "DFT"
    rank = x.ndim
    check(-rank <= axis < rank - 1 or axis == -rank,
          f"{op}: axis {axis} must name a signal dim of input shape {x.shape}")
    axis %= rank
    check(axis != rank - 1, f"{op}: axis {axis} is the real/imaginary dim of shape {x.shape}")
    real, imag = _parts(x, op)
    real, imag = real.movedim(axis, -1), None if imag is None else imag.movedim(axis, -1)
    n = real.shape[-1]
    if dft_length is not None:
        length = ints(dft_length)[0]
    else:
        length = 2 * (n - 1) if inverse and onesided else n
    check(length > 0, f"{op}: dft_length must be positive, got {length}")
    if inverse and onesided:
        out = _irfft_last(real, imag, length).movedim(-1, axis)
        return out.unsqueeze(-1)
    bins = length // 2 + 1 if onesided else length
    out_real, out_imag = dft_last(real, imag, length, bins, bool(inverse))
    return stack([out_real.movedim(-1, axis), out_imag.movedim(-1, axis)], -1)


@onnx_op("DFT", since=17)
def dft_17(x: Tensor, dft_length: Tensor | None = None, *, axis: int = 1, inverse: int = 0,
           onesided: int = 0) -> Tensor:
    """DFT (opset 17): as opset 20 with the axis an attribute (default 1)."""
    return _dft(x, dft_length, axis, inverse, onesided)


@onnx_op("DFT", since=20)
def dft(x: Tensor, dft_length: Tensor | None = None, axis: Tensor | None = None, *,
        inverse: int = 0, onesided: int = 0) -> Tensor:
    """DFT: the discrete Fourier transform along `axis` (default -2) of a real (..., 1) or
    complex (..., 2) signal, cut or zero-padded to dft_length: (..., bins, 2). onesided
    keeps bins 0 .. n // 2; inverse divides by n; inverse with onesided is the real signal
    (..., n, 1) of a one-sided spectrum (n defaults to 2 * (bins - 1))."""
    return _dft(x, dft_length, ints(axis)[0] if axis is not None else -2, inverse, onesided)


@onnx_op("STFT", since=17)
def stft(signal: Tensor, frame_step: Tensor, window: Tensor | None = None,
         frame_length: Tensor | None = None, *, onesided: int = 1) -> Tensor:
    """STFT: the DFT of every frame (frame_length samples, frame_step apart, times the
    window) of signal (B, n, 1 or 2): (B, frames, bins, 2); onesided keeps
    frame_length // 2 + 1 bins of a real signal."""
    op = "STFT"
    real, imag = _parts(signal, op)
    check(signal.ndim == 3, f"{op}: signal must be (batch, length, 1 or 2), got {signal.shape}")
    step = ints(frame_step)[0]
    length = ints(frame_length)[0] if frame_length is not None else (
        window.shape[0] if window is not None else 0)
    check(step > 0 and 0 < length <= real.shape[1],
          f"{op}: frame_step {step} and frame_length {length} do not fit a signal of "
          f"{real.shape[1]} samples")
    frames = (real.shape[1] - length) // step + 1

    def framed(part: Tensor) -> Tensor:
        # (B, n) -> (B, frames, length), each frame times the window
        cut = windows(part, (length,), (step,), (1,), (frames,)).transpose(1, 2)
        return cut if window is None else cut * window.cast(cut.dtype)

    bins = length // 2 + 1 if onesided else length
    out_real, out_imag = dft_last(framed(real), None if imag is None else framed(imag), length,
                                  bins, False)
    return stack([out_real, out_imag], -1)


@onnx_op("MelWeightMatrix", since=17)
def mel_weight_matrix(num_mel_bins: Tensor, dft_length: Tensor, sample_rate: Tensor,
                      lower_edge_hertz: Tensor, upper_edge_hertz: Tensor, *,
                      output_datatype: int = 1, device=None) -> Tensor:
    """MelWeightMatrix: (dft_length // 2 + 1, num_mel_bins) triangular filters spaced evenly
    on the mel scale between the two edge frequencies."""
    mels, length, rate = ints(num_mel_bins)[0], ints(dft_length)[0], ints(sample_rate)[0]
    low = float(lower_edge_hertz.reshape(-1).tolist()[0])
    high = float(upper_edge_hertz.reshape(-1).tolist()[0])

    def mel(hz: float) -> float:
        return 2595.0 * math.log10(1.0 + hz / 700.0)

    step = (mel(high) - mel(low)) / (mels + 2)
    edges = [int(((length + 1) * (700.0 * (10 ** ((i * step + mel(low)) / 2595.0) - 1.0)))
                 // rate) for i in range(mels + 2)]
    rows = length // 2 + 1
    out = [[0.0] * mels for _ in range(rows)]
    for i in range(mels):
        left, centre, right = edges[i], edges[i + 1], edges[i + 2]
        if centre == left:
            out[centre][i] = 1.0
        else:
            for j in range(left, centre + 1):
                out[j][i] = (j - left) / (centre - left)
        for j in range(centre, right):
            out[j][i] = (right - j) / (right - centre)
    return _held_floats(out, output_datatype, device).reshape(rows, mels)
