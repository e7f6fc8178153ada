"""The wasm backend's "softmax", "layer_norm" and "avg_pool" capabilities against PyTorch's
CPU backend in float64: the kernels on wasmtime with canary bytes around every buffer
(rows and columns, lengths with a tail, length 1, ±inf and NaN rows), then through the
public functions on the wasm device, each call counted so that the capability (not the
composite) is what ran: axes not last, inner dims under 4, empty tensors, no weight or bias,
sliding windows with padding counted both ways, ceil mode, a divisor, adaptive windows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyburn
import pyburn.nn.functional as F
from pyburn.backends.wasm import native, pooling, rows
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.backend import WasmBackend

CANARY = bytes([0xA5, 0x5A, 0xC3, 0x3C]) * 8
INF, NAN = float("inf"), float("nan")


# ---- the kernels, between canaries -------------------------------------------------------

@pytest.fixture(scope="module")
def wasm():
    engine = native.NativeEngine(64)  # 4 MiB
    return engine, engine.instantiate(Module([*rows.kernels(), *pooling.kernels()]).binary())


class Buffers:
    """Buffers laid out from address 1024 on, each between two canaries."""

    def __init__(self, engine):
        self.engine = engine
        self.at = 1024
        self.placed: list[tuple[int, int, bytes | None]] = []

    def put(self, data: bytes, keep: bool = True) -> int:
        """`data` placed; where `keep`, it must be unchanged at the end (an input)."""
        address = self.at + len(CANARY)
        self.engine.write(self.at, CANARY + data + CANARY)
        self.placed.append((address, len(data), data if keep else None))
        self.at = (address + len(data) + len(CANARY) + 15) // 16 * 16
        return address

    def empty(self, nbytes: int) -> int:
        """An output, filled with a pattern no kernel writes everywhere by chance."""
        return self.put(bytes([0x77]) * nbytes, keep=False)

    def read(self, address: int, shape) -> np.ndarray:
        n = int(np.prod(shape))
        return np.frombuffer(self.engine.read(address, 4 * n), np.float32).reshape(shape)

    def check(self) -> None:
        for address, nbytes, data in self.placed:
            assert self.engine.read(address - len(CANARY), len(CANARY)) == CANARY
            assert self.engine.read(address + nbytes, len(CANARY)) == CANARY
            if data is not None:
                assert self.engine.read(address, nbytes) == data  # inputs untouched


def _close(got: np.ndarray, want: np.ndarray, rtol=2e-6, atol=1e-6) -> None:
    """Within float32 rounding of the float64 reference; NaN and infinities where it has
    them."""
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _torch_softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    t = torch.tensor(x, dtype=torch.float64)
    return (torch.log_softmax if log else torch.softmax)(t, axis).numpy()


BLOCKS = [(3, 11, 1), (2, 1000, 1), (4, 8, 1), (2, 1, 1), (3, 3, 1), (2, 9, 7), (1, 5, 8),
          (2, 6, 3), (3, 1, 5), (1, 13, 2), (0, 4, 1), (2, 4, 0)]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("block", BLOCKS, ids=["x".join(map(str, b)) for b in BLOCKS])
def test_the_softmax_kernel_matches_torch(wasm, block, log):
    engine, exports = wasm
    x = (np.random.default_rng(sum(block)).standard_normal(block) * 4).astype(np.float32)
    buffers = Buffers(engine)
    at_x, at_out = buffers.put(x.tobytes()), buffers.empty(x.nbytes)
    exports["softmax_f32"](at_out, at_x, *block, int(log))
    buffers.check()
    if x.size:
        _close(buffers.read(at_out, block), _torch_softmax(x, 1, log), atol=2e-6)


def _special_rows() -> np.ndarray:
    """Rows of 6: large values, some -inf, all -inf, a NaN, a +inf, all equal."""
    return np.array([[1000.0, 0.0, -1000.0, 999.0, 1.0, 2.0],
                     [-INF, 0.0, 1.0, -INF, 2.0, -INF],
                     [-INF] * 6,
                     [1.0, NAN, 2.0, 3.0, 4.0, 5.0],
                     [1.0, INF, 2.0, 3.0, -INF, 5.0],
                     [7.0] * 6], dtype=np.float32)


def _composite_softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    """The contract's softmax in float64: shifted by the max where that is finite, by 0
    where it is not (PyTorch's differs only on a row holding +inf: NaN everywhere)."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        top = x.max(axis=axis, keepdims=True)
        shifted = x - np.where(np.isfinite(top), top, 0.0)
        total = np.exp(shifted).sum(axis=axis, keepdims=True)
        return shifted - np.log(total) if log else np.exp(shifted) / total


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])
def test_the_softmax_kernel_on_infinities_and_nan(wasm, columns, log):
    engine, exports = wasm
    x = _special_rows()
    if columns:  # the same rows down columns: (1, 6, 6) with the rows as inner
        x = np.ascontiguousarray(x.T)
    axis = 0 if columns else 1
    buffers = Buffers(engine)
    at_x, at_out = buffers.put(x.tobytes()), buffers.empty(x.nbytes)
    block = (1, 6, 6) if columns else (6, 6, 1)
    exports["softmax_f32"](at_out, at_x, *block, int(log))
    buffers.check()
    got = buffers.read(at_out, x.shape)
    _close(got, _composite_softmax(x, axis, log), atol=2e-6)
    want = _torch_softmax(x, axis, log)
    nan_rows = np.isinf(x).any(axis=axis) & (x == INF).any(axis=axis)
    agree = ~nan_rows[None, :] if columns else ~nan_rows[:, None]
    agree = np.broadcast_to(agree, x.shape)
    _close(got[agree], want[agree], atol=2e-6)  # PyTorch's, but on +inf rows
    assert np.isnan(got[x == INF]).all()  # where PyTorch has NaN in a +inf row too


LAYERS = [(4, 768), (3, 35), (5, 3), (6, 1), (2, 4), (1, 1003), (0, 8)]


@pytest.mark.parametrize("affine", ["", "_w", "_b", "_w_b"])
@pytest.mark.parametrize("shape", LAYERS, ids=["x".join(map(str, s)) for s in LAYERS])
def test_the_layer_norm_kernel_matches_torch(wasm, shape, affine):
    engine, exports = wasm
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 3 + 100).astype(np.float32)  # a large mean
    w = rng.standard_normal(shape[1:]).astype(np.float32)
    b = rng.standard_normal(shape[1:]).astype(np.float32)
    buffers = Buffers(engine)
    at_x, at_w, at_b = (buffers.put(a.tobytes()) for a in (x, w, b))
    at_out = buffers.empty(x.nbytes)
    exports[f"layer_norm_f32{affine}"](at_out, at_x, at_w, at_b, shape[0], shape[1], 1e-5)
    buffers.check()
    weight = torch.tensor(w, dtype=torch.float64) if "w" in affine else None
    bias = torch.tensor(b, dtype=torch.float64) if "b" in affine else None
    want = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float64), shape[1:],
                                          weight, bias, 1e-5).numpy()
    _close(buffers.read(at_out, shape), want, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("block", [(2, 9, 1), (3, 7, 6), (1, 5, 4), (2, 4, 3)],
                         ids=["rows", "columns", "four", "narrow"])
def test_the_box_sum_kernel_sums_clipped_windows(wasm, block):
    engine, exports = wasm
    outer, length, inner = block
    x = np.random.default_rng(length).standard_normal(block).astype(np.float32)
    bounds = [(0, 1), (0, length), (length - 2, length), (1, 1), (2, length - 1)]
    buffers = Buffers(engine)
    at_x = buffers.put(x.tobytes())
    at_bounds = buffers.put(np.array(bounds, np.int32).tobytes())
    at_out = buffers.empty(4 * outer * len(bounds) * inner)
    exports["box_sum_f32"](at_out, at_x, outer, length, inner, len(bounds), at_bounds)
    buffers.check()
    want = np.stack([x[:, a:b].astype(np.float64).sum(axis=1) for a, b in bounds], axis=1)
    _close(buffers.read(at_out, want.shape), want, atol=2e-6)


# ---- through the public functions on the wasm device --------------------------------------

@pytest.fixture
def dev() -> pyburn.Device:
    return pyburn.device("wasm")


def count_calls(monkeypatch, dev: pyburn.Device, names: tuple[str, ...]) -> dict[str, int]:
    """How often each of the wasm backend's capability methods `names` runs on `dev`
    (patched on the class; fusion's wrapper keeps what it forwarded as an attribute, which
    is dropped here)."""
    counts = dict.fromkeys(names, 0)
    for name in counts:
        method = getattr(WasmBackend, name)

        def counted(self, *args, _method=method, _name=name):
            counts[_name] += 1
            return _method(self, *args)
        monkeypatch.setattr(WasmBackend, name, counted)
        if not isinstance(dev.backend, WasmBackend):
            monkeypatch.delitem(dev.backend.__dict__, name, raising=False)
    return counts


@pytest.fixture
def calls(dev, monkeypatch) -> dict[str, int]:
    """How often the softmax, layer_norm and avg_pool methods run."""
    return count_calls(monkeypatch, dev, ("softmax", "layer_norm", "avg_pool"))


def _on(dev, x: np.ndarray) -> pyburn.Tensor:
    return pyburn.tensor(x.tolist(), device=dev).reshape(x.shape)


def _values(t: pyburn.Tensor) -> np.ndarray:
    return np.array(t.tolist(), dtype=np.float64).reshape(t.shape)


def test_the_device_offers_the_capabilities(dev):
    assert {"softmax", "layer_norm", "avg_pool"} <= dev.caps


SOFTMAX_CASES = [((64, 1000), 1), ((3, 7, 5), 0), ((3, 7, 5), 1), ((3, 7, 5), 2), ((2, 13), -1),
                 ((5, 1), 1), ((1,), 0), ((4, 6, 3), 1), ((2, 5, 6), 1), ((0, 5), 1),
                 ((3, 0), 1), ((2, 0, 3), 0)]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, axis", SOFTMAX_CASES,
                         ids=[f"{'x'.join(map(str, s))}-{a}" for s, a in SOFTMAX_CASES])
def test_softmax_runs_the_capability(dev, calls, shape, axis, log):
    x = (np.random.default_rng(len(shape) + abs(axis)).standard_normal(shape) * 5
         ).astype(np.float32)
    got = (F.log_softmax if log else F.softmax)(_on(dev, x), dim=axis)
    assert calls["softmax"] == 1
    assert got.shape == x.shape and got.dtype == pyburn.float32
    _close(_values(got), _torch_softmax(x, axis, log), atol=2e-6)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_rows_with_infinities_and_nan(dev, calls, log):
    x = _special_rows()
    for axis, data in ((1, x), (0, np.ascontiguousarray(x.T))):
        got = _values((F.log_softmax if log else F.softmax)(_on(dev, data), dim=axis))
        flex = pyburn.tensor(data.tolist(), device="flex")
        composite = (F.log_softmax if log else F.softmax)(flex, dim=axis)
        _close(got, _values(composite), atol=2e-6)  # the contract: the composite's values
    assert calls["softmax"] == 2


def test_softmax_of_a_view_and_its_gradient(dev, calls):
    dev = dev.autodiff()
    x = np.random.default_rng(3).standard_normal((6, 9)).astype(np.float32)
    t = _on(dev, x).T.requires_grad_()  # not contiguous
    y = F.softmax(t, dim=0)
    (y * pyburn.arange(6.0, device=dev)).sum().backward()
    ref = torch.tensor(x, dtype=torch.float64).T.requires_grad_()
    (torch.softmax(ref, 0) * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    _close(_values(y), torch.softmax(ref, 0).detach().numpy())
    _close(_values(t.grad), ref.grad.numpy(), atol=2e-6)
    assert calls["softmax"] >= 1


NORM_CASES = [((64, 768), (768,)), ((3, 5, 7), (5, 7)), ((2, 3), (3,)), ((6, 1), (1,)),
              ((0, 8), (8,)), ((4, 2, 6), (6,)), ((5, 11), (5, 11))]


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("shape, trailing", NORM_CASES,
                         ids=["x".join(map(str, s)) + f"-{len(n)}" for s, n in NORM_CASES])
def test_layer_norm_runs_the_capability(dev, calls, shape, trailing, affine):
    rng = np.random.default_rng(len(shape) + len(trailing))
    x = (rng.standard_normal(shape) * 2 - 3).astype(np.float32)
    w = rng.standard_normal(trailing).astype(np.float32)
    b = rng.standard_normal(trailing).astype(np.float32)
    weight = _on(dev, w) if affine in ("weight", "both") else None
    bias = _on(dev, b) if affine in ("bias", "both") else None
    got = F.layer_norm(_on(dev, x), trailing, weight, bias, eps=1e-4)
    assert calls["layer_norm"] == 1
    torch_w = None if weight is None else torch.tensor(w, dtype=torch.float64)
    torch_b = None if bias is None else torch.tensor(b, dtype=torch.float64)
    want = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float64), trailing,
                                          torch_w, torch_b, 1e-4)
    _close(_values(got), want.numpy(), rtol=1e-5, atol=1e-5)


def test_layer_norm_of_a_view_and_its_gradient(dev, calls):
    dev = dev.autodiff()
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((7, 4), (4,), (4,)))
    t, tw, tb = (_on(dev, a).requires_grad_() for a in (x, w, b))
    y = F.layer_norm(t.flip(0), (4,), tw, tb)  # of a flipped view
    (y * y).sum().backward()
    refs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    ref = torch.nn.functional.layer_norm(refs[0].flip(0), (4,), refs[1], refs[2])
    (ref * ref).sum().backward()
    _close(_values(y), ref.detach().numpy(), atol=1e-5)
    for mine, theirs in zip((t, tw, tb), refs):
        _close(_values(mine.grad), theirs.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert calls["layer_norm"] >= 1


POOLS = [
    ("avg_pool2d", (2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", (2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1,
                                       count_include_pad=False)),
    ("avg_pool2d", (1, 2, 8, 7), dict(kernel_size=(2, 3), stride=(2, 2), padding=(1, 1),
                                      ceil_mode=True)),
    ("avg_pool2d", (1, 2, 8, 7), dict(kernel_size=(2, 3), stride=(2, 2), padding=(1, 1),
                                      ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 5, 6, 6), dict(kernel_size=3, divisor_override=5)),
    ("avg_pool2d", (3, 10, 10), dict(kernel_size=2)),
    ("avg_pool2d", (0, 3, 8, 8), dict(kernel_size=2)),
    ("avg_pool1d", (2, 4, 13), dict(kernel_size=4, stride=3, padding=2)),
    ("avg_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=2, padding=1,
                                         count_include_pad=False)),
    ("adaptive_avg_pool2d", (2, 3, 9, 11), dict(output_size=(4, 5))),
    ("adaptive_avg_pool2d", (1, 2, 7, 3), dict(output_size=(3, 2))),
    ("adaptive_avg_pool2d", (1, 2, 5, 6), dict(output_size=(9, 13))),  # windows overlap
    ("adaptive_avg_pool2d", (2, 3, 6, 8), dict(output_size=1)),
    ("adaptive_avg_pool1d", (3, 10), dict(output_size=7)),
    ("adaptive_avg_pool3d", (1, 2, 5, 7, 3), dict(output_size=(2, 3, 2))),
]


@pytest.mark.parametrize("op, shape, kwargs", POOLS,
                         ids=[f"{op}-{'x'.join(map(str, s))}-{k}" for k, (op, s, _)
                              in enumerate(POOLS)])
def test_avg_pool_runs_the_capability(dev, calls, op, shape, kwargs):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    got = getattr(F, op)(_on(dev, x), **kwargs)
    assert calls["avg_pool"] == 1
    want = getattr(torch.nn.functional, op)(torch.tensor(x, dtype=torch.float64), **kwargs)
    _close(_values(got), want.numpy(), atol=2e-6)


def test_avg_pool_gradient(dev, calls):
    dev = dev.autodiff()
    x = np.random.default_rng(9).standard_normal((2, 3, 7, 9)).astype(np.float32)
    t = _on(dev, x).requires_grad_()
    y = F.avg_pool2d(t, 3, stride=2, padding=1, count_include_pad=False)
    z = F.adaptive_avg_pool2d(t, (3, 4))
    ((y * y).sum() + (z * z).sum()).backward()
    ref = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ry = torch.nn.functional.avg_pool2d(ref, 3, stride=2, padding=1, count_include_pad=False)
    rz = torch.nn.functional.adaptive_avg_pool2d(ref, (3, 4))
    ((ry * ry).sum() + (rz * rz).sum()).backward()
    _close(_values(t.grad), ref.grad.numpy(), atol=2e-6)
    assert calls["avg_pool"] == 2
