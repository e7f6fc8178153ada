"""`pyburn.autocast` (pyburn/precision.py): the dtype each op class gives inside and outside a
region, as `POLICY` says, on every device; matmul, linear and convolutions against a float64
reference within float16's error bound; gradients in the parameters' own dtype; nesting,
``enabled=False``, the decorator, threads, and the no-op on a device without float16."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn import precision
from pyburn.precision import POLICY, autocast_inputs

torch = pytest.importorskip("torch")

#: float16's unit roundoff
U16 = 2.0 ** -11


def _has_half(device: pyburn.Device) -> bool:
    return pyburn.float16 in device.backend.dtypes


def _rand(shape: tuple[int, ...], device: pyburn.Device, seed: int) -> pyburn.Tensor:
    values = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    return pyburn.tensor(values, device=device)


# op name (a key of POLICY, or an op that promotes) -> the op on inputs of one dtype
CASES = {
    "matmul": lambda x, dt: x(3, 4, dt) @ x(4, 2, dt),
    "linear": lambda x, dt: F.linear(x(3, 4, dt), x(2, 4, dt), x(2, dt)),
    "conv2d": lambda x, dt: F.conv2d(x(1, 2, 5, 5, dt), x(3, 2, 3, 3, dt), x(3, dt)),
    "conv_transpose2d": lambda x, dt: F.conv_transpose2d(x(1, 2, 3, 3, dt), x(2, 3, 2, 2, dt)),
    "softmax": lambda x, dt: F.softmax(x(2, 5, dt), dim=-1),
    "log_softmax": lambda x, dt: F.log_softmax(x(2, 5, dt), dim=-1),
    "layer_norm": lambda x, dt: F.layer_norm(x(2, 5, dt), (5,)),
    "batch_norm": lambda x, dt: F.batch_norm(x(4, 3, dt), None, None, training=True),
    "sum": lambda x, dt: x(2, 5, dt).sum(1),
    "exp": lambda x, dt: x(2, 5, dt).exp(),
    "log": lambda x, dt: x(2, 5, dt).abs().log(),
    "mse_loss": lambda x, dt: F.mse_loss(x(2, 5, dt), x(2, 5, dt)),
    "cross_entropy": lambda x, dt: F.cross_entropy(
        x(3, 4, dt), pyburn.tensor([0, 3, 1], device=x(1, dt).device)),
    # not in the table: these promote (run in their inputs' dtype)
    "relu": lambda x, dt: F.relu(x(2, 5, dt)),
    "add": lambda x, dt: x(2, 5, dt) + x(5, dt),
    "amax": lambda x, dt: x(2, 5, dt).amax(1),
}


@pytest.mark.filterwarnings("ignore:autocast does nothing")
@pytest.mark.parametrize("op", CASES)
def test_each_op_class_gives_the_dtype_the_table_names(device, op):
    def make(*args):
        *shape, dtype = args
        return _rand(tuple(shape), device, len(shape)).cast(dtype)

    half = _has_half(device)
    for dtype in (pyburn.float32, pyburn.float16) if half else (pyburn.float32,):
        outside = CASES[op](make, dtype)
        with pyburn.autocast(device):
            inside = CASES[op](make, dtype)
        assert outside.dtype is dtype  # outside a region every op keeps its inputs' dtype
        rule = POLICY.get(op, "promote")
        if rule == "lower" and half:
            assert inside.dtype is pyburn.float16
        elif rule == "float32":
            assert inside.dtype is pyburn.float32
        else:  # "promote", or "lower" on a device without float16: the dtype it had
            assert inside.dtype is dtype


def test_mixed_inputs_promote_and_float64_is_left_alone():
    dev = pyburn.device("cpu")
    a16, a32, a64 = (pyburn.ones(2, 2, device=dev, dtype=d)
                     for d in (pyburn.float16, pyburn.float32, pyburn.float64))
    with pyburn.autocast(dev):
        assert (a16 + a32).dtype is pyburn.float32
        assert pyburn.cat([a16, a32]).dtype is pyburn.float32
        assert (a32 @ a16).dtype is pyburn.float16
        assert (a64 @ a64).dtype is pyburn.float64  # float64 is never lowered
        assert F.softmax(a64, dim=0).dtype is pyburn.float64
        assert F.softmax(a16, dim=0, dtype=pyburn.float16).dtype is pyburn.float16  # asked for


def _check_close(got: pyburn.Tensor, ref: np.ndarray, bound: np.ndarray) -> None:
    """float16 inputs carry a relative error of U16 each, the float32 accumulation next to
    none, and the result one more rounding: |got - ref| <= 2 U16 bound + U16 |ref|, with
    `bound` the same computation on absolute values (x2 slack, and a floor for subnormals)."""
    err = np.abs(got.numpy().astype(np.float64) - ref)
    assert np.all(err <= 2 * (2 * U16 * bound + U16 * np.abs(ref)) + 1e-6), err.max()


@pytest.mark.filterwarnings("ignore:autocast does nothing")
def test_products_match_float64_within_float16_error(device):
    x, w, b = _rand((6, 20), device, 1), _rand((5, 20), device, 2), _rand((5,), device, 3)
    img, k = _rand((2, 3, 6, 6), device, 4), _rand((4, 3, 3, 3), device, 5)
    with pyburn.autocast(device):
        got = {"matmul": x @ w.T, "linear": F.linear(x, w, b),
               "conv2d": F.conv2d(img, k, b[:4], padding=1)}
    plain = {"matmul": x @ w.T, "linear": F.linear(x, w, b),
             "conv2d": F.conv2d(img, k, b[:4], padding=1)}
    if not _has_half(device):  # autocast does nothing there: the same numbers
        assert all(got[op].tolist() == plain[op].tolist() for op in got)
        return
    t = {name: torch.tensor(v.numpy(), dtype=torch.float64)
         for name, v in (("x", x), ("w", w), ("b", b), ("img", img), ("k", k))}
    refs = {"matmul": (t["x"] @ t["w"].T, t["x"].abs() @ t["w"].abs().T),
            "linear": (t["x"] @ t["w"].T + t["b"], t["x"].abs() @ t["w"].abs().T + t["b"].abs()),
            "conv2d": (torch.nn.functional.conv2d(t["img"], t["k"], t["b"][:4], padding=1),
                       torch.nn.functional.conv2d(t["img"].abs(), t["k"].abs(),
                                                  t["b"][:4].abs(), padding=1))}
    for op, (ref, bound) in refs.items():
        assert got[op].dtype is pyburn.float16
        _check_close(got[op], ref.numpy(), bound.numpy())


@pytest.mark.filterwarnings("ignore:autocast does nothing")
def test_gradients_reach_float32_parameters_in_float32(device):
    dev = device.autodiff()
    pyburn.manual_seed(0)
    img = _rand((2, 3, 5, 5), dev, 6)
    k = _rand((4, 3, 3, 3), dev, 7).requires_grad_()
    w = _rand((2, 4 * 3 * 3), dev, 8).requires_grad_()

    def loss_of(img, k, w, conv, lin):
        return lin(conv(img, k).reshape(2, -1), w).float().square().mean()

    with pyburn.autocast(dev):
        loss = loss_of(img, k, w, F.conv2d, F.linear)
    loss.backward()
    assert loss.dtype is pyburn.float32
    assert k.grad.dtype is pyburn.float32 and w.grad.dtype is pyburn.float32
    tk, tw = (torch.tensor(v.detach().numpy(), dtype=torch.float64, requires_grad=True)
              for v in (k, w))
    loss_of(torch.tensor(img.numpy(), dtype=torch.float64), tk, tw,
            torch.nn.functional.conv2d, torch.nn.functional.linear).backward()
    for got, want in ((k.grad, tk.grad), (w.grad, tw.grad)):  # float16 forward values
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-2,
                                   atol=2e-2 * float(want.abs().max()))


def test_backward_inside_a_region_runs_in_the_forward_dtypes():
    dev = pyburn.device("cpu").autodiff()
    w = _rand((4, 4), dev, 9).requires_grad_()
    grads = []
    for inside in (False, True):
        w.grad = None
        with pyburn.autocast(dev):
            y = (_rand((3, 4), dev, 10) @ w).sigmoid().sum()
            if inside:
                y.backward()
        if not inside:
            y.backward()
        grads.append(w.grad.tolist())
    assert grads[0] == grads[1]


def test_checkpoint_recomputes_under_the_forward_autocast():
    dev = pyburn.device("cpu").autodiff()
    x, w = _rand((3, 4), dev, 11), _rand((4, 4), dev, 12).requires_grad_()
    results = []
    for wrap in (lambda f, *a: f(*a), pyburn.autodiff.checkpoint):
        w.grad = None
        with pyburn.autocast(dev):
            y = wrap(lambda a, b: (a @ b).relu(), x, w)
        assert y.dtype is pyburn.float16
        y.float().sum().backward()
        results.append(w.grad.tolist())
    assert results[0] == results[1]


def test_regions_nest_switch_off_and_decorate():
    cpu, flex = pyburn.device("cpu"), pyburn.device("flex")
    a = pyburn.ones(2, 2, device=cpu)
    assert not pyburn.is_autocast_enabled(cpu) and pyburn.get_autocast_dtype(cpu) is None
    with pyburn.autocast("cpu"):
        assert pyburn.is_autocast_enabled(cpu) and not pyburn.is_autocast_enabled(flex)
        assert pyburn.get_autocast_dtype(cpu.autodiff()) is pyburn.float16
        assert (pyburn.ones(2, 2, device=flex) @ pyburn.ones(2, 2, device=flex)).dtype \
            is pyburn.float32  # another device kind
        with pyburn.autocast(cpu, enabled=False):
            assert (a @ a).dtype is pyburn.float32
            with pyburn.autocast(cpu):
                assert (a @ a).dtype is pyburn.float16
            assert (a @ a).dtype is pyburn.float32
        assert (a @ a).dtype is pyburn.float16
    assert (a @ a).dtype is pyburn.float32

    @pyburn.autocast(cpu)
    def product(t):
        """Doc."""
        return t @ t

    assert product(a).dtype is pyburn.float16 and product.__doc__ == "Doc."
    assert (a @ a).dtype is pyburn.float32


def test_the_mode_belongs_to_the_thread():
    a = pyburn.ones(2, 2, device="cpu")
    seen = []
    with pyburn.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.append((a @ a).dtype))
        worker.start()
        worker.join()
        assert (a @ a).dtype is pyburn.float16
    assert seen == [pyburn.float32]


def test_autocast_inputs_passes_through_what_it_does_not_cast():
    a = pyburn.ones(2, device="cpu")
    ints = pyburn.ones(2, device="cpu", dtype=pyburn.int32)
    with pyburn.autocast("cpu"):
        out = autocast_inputs("matmul", a, None, 2.0, ints)
        assert out[0].dtype is pyburn.float16 and out[1:] == (None, 2.0, ints)
        assert autocast_inputs("not an op", a)[0] is a


def test_only_float16_is_a_lower_dtype():
    with pytest.raises(pyburn.DTypeError, match="autocast lowers to float16, got float32"):
        pyburn.autocast("cpu", dtype=pyburn.float32)


def test_a_device_without_float16_warns_once_and_is_left_alone(monkeypatch):
    monkeypatch.setattr(precision, "_warned", set())  # as in a fresh process
    lacking = [d for d in pyburn.available_devices() if not _has_half(d)]
    if not lacking:
        pytest.skip("every available device has float16")
    dev = lacking[0]
    a = pyburn.ones(2, 2, device=dev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with pyburn.autocast(dev):
                assert (a @ a).dtype is pyburn.float32
                assert not pyburn.is_autocast_enabled(dev)
    assert [str(w.message) for w in caught] == [
        f"autocast does nothing on {dev.name!r}: the device has no float16; its ops run in "
        "their own dtypes"]
