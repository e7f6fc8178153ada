"""The fusion decorator of the wgpu backend: elementwise chains become one kernel, give the
same values as the unfused backend, reuse their generated code, and never run when dropped.

References: the unfused backend (``wgpu_nofusion``: integers and bools exactly, floats to an
ulp or two, since a shader compiler may contract a multiply and an add that are now in one
kernel) and float64 numpy. The conformance, autodiff and nn/functional suites run
on both forms too (tests/conftest.py).
"""

from __future__ import annotations

import gc
import math

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu.fusion import MAX_STEPS, FusionBackend  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)


@pytest.fixture(scope="module")
def plain() -> pyburn.Device:
    """The wgpu device without fusion."""
    return pyburn.device("wgpu_nofusion")


def values(dev: pyburn.Device, seed: int = 0) -> dict[str, pyburn.Tensor]:
    """The inputs the chains below use, with NaN and infinities among them."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 5)).astype(np.float32) * 3
    x[0, 0], x[1, 2], x[2, 4] = np.nan, np.inf, -np.inf
    return {
        "x": pyburn.tensor(x, device=dev),
        "y": pyburn.tensor(rng.uniform(0.5, 2, size=(3, 5)).astype(np.float32), device=dev),
        "row": pyburn.tensor(rng.normal(size=(1, 5)).astype(np.float32), device=dev),
        "col": pyburn.tensor(rng.normal(size=(3, 1)).astype(np.float32), device=dev),
        "i": pyburn.tensor(rng.integers(-20, 20, size=(3, 5)).astype(np.int32), device=dev),
        "j": pyburn.tensor(rng.integers(1, 6, size=(3, 5)).astype(np.int32), device=dev),
        "m": pyburn.tensor(rng.integers(0, 2, size=(3, 5)).astype(bool), device=dev),
    }


CHAINS = {
    "eight-float-ops": lambda v: ((v["y"] * 2.0 + 1.0).exp().log() - 0.5).abs().sqrt().tanh(),
    "nan-and-inf": lambda v: (v["x"] * 0.5).exp().minimum(v["x"]).maximum(v["y"]) / v["x"],
    "broadcast-row-col": lambda v: (v["row"] + v["col"]) * v["y"] - v["row"].sin(),
    "broadcast-of-pending": lambda v: (v["row"].exp() * 2.0) + (v["col"] - 1.0).cos() * v["y"],
    "scalars": lambda v: 3.0 - v["y"] ** 2 + 1.5 / v["y"],
    "casts": lambda v: (v["x"] * 4.0).int().float() + v["i"].float() * 0.25,
    "int-ops": lambda v: (v["i"] * 3 + 7) // v["j"] + (v["i"] % v["j"]) - (v["i"] << 2),
    "bool-ops": lambda v: (v["x"] > 0) & ~v["m"] | (v["i"] == 3) ^ v["x"].isnan(),
    "where": lambda v: pyburn.where(v["x"] > v["y"], v["x"] * 2.0, v["row"] - v["y"]),
    "where-int": lambda v: pyburn.where(v["m"], v["i"], -v["j"]).abs() + 1,
    "compare-nan": lambda v: ((v["x"] != v["x"]) | (v["x"] >= v["col"])).int() * 5,
    "uint8-wraps": lambda v: (v["i"].to(pyburn.uint8) * 37 + 200).int() - 3,
    "bool-to-float": lambda v: v["m"].float() * v["y"] + (v["x"].isfinite()).float(),
    "pow-and-erf": lambda v: v["y"].pow(v["row"]).erf() + v["y"].log1p().expm1(),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_fusion_gives_the_unfused_values(name, fused, plain):
    chain = CHAINS[name]
    got = chain(values(fused)).numpy()
    want = chain(values(plain)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def test_fused_chain_matches_float64_numpy(fused):
    v = values(fused)
    got = CHAINS["broadcast-row-col"](v).numpy()
    row, col, y = (v[k].numpy().astype(np.float64) for k in ("row", "col", "y"))
    np.testing.assert_allclose(got, (row + col) * y - np.sin(row), rtol=1e-5, atol=1e-6)


def test_a_chain_of_eight_ops_is_one_dispatch(fused):
    y = values(fused)["y"]
    wgpu.reset_stats()
    out = CHAINS["eight-float-ops"]({"y": y})
    assert wgpu.stats().dispatches == 0  # nothing has run yet: the chain is only recorded
    got = out.numpy()
    counted = wgpu.stats()
    assert counted.dispatches == 1 and counted.fused_kernels == 1
    assert counted.fused_steps == 8
    yn = y.numpy().astype(np.float64)
    want = np.tanh(np.sqrt(np.abs(np.log(np.exp(yn * 2 + 1)) - 0.5)))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_dropped_chain_never_runs(fused):
    y = values(fused)["y"]
    wgpu.reset_stats()
    for _ in range(5):
        (y.exp() * 3.0 + y).sin()
    gc.collect()
    assert wgpu.stats().dispatches == 0


def test_non_elementwise_ops_compute_their_inputs_first(fused):
    y = values(fused)["y"]
    wgpu.reset_stats()
    running = (y * 2.0 + 1.0).exp().cumsum(1)  # a scan is no anchor: its input is computed
    assert wgpu.stats().fused_kernels == 1
    want = np.exp(y.numpy().astype(np.float64) * 2 + 1).cumsum(1)
    np.testing.assert_allclose(running.numpy(), want, rtol=1e-5)


def test_a_long_chain_is_cut_into_kernels_of_bounded_size(fused):
    x = pyburn.tensor([0.25, -0.5, 1.0], device=fused)
    wgpu.reset_stats()
    out = x
    for _ in range(3 * MAX_STEPS):
        out = out * 1.0 + 0.0  # two steps each, value unchanged
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    counted = wgpu.stats()
    assert counted.fused_kernels == 6 and counted.dispatches == 6
    assert counted.fused_steps == 6 * MAX_STEPS


def test_many_distinct_inputs_stay_within_the_binding_limit(fused):
    limit = fused.backend.runtime.limits.max_storage_buffers_per_shader_stage
    leaves = [pyburn.tensor([float(k)] * 4, device=fused) for k in range(limit + 3)]
    total = leaves[0]
    for leaf in leaves[1:]:
        total = total + leaf
    want = sum(range(limit + 3))
    assert total.numpy().tolist() == [want] * 4


def training_step(dev: pyburn.Device, w: pyburn.Tensor, x: pyburn.Tensor) -> pyburn.Tensor:
    """One plain-tensor step of a tiny regression with elementwise updates."""
    pred = (x @ w).tanh()
    err = pred - 0.5
    grad = x.T @ (err * (1.0 - pred * pred))
    return w - grad * 0.1


def test_a_training_loop_generates_its_kernels_once(fused):
    pyburn.manual_seed(0)
    x = pyburn.randn(8, 4, device=fused)
    w = pyburn.randn(4, 2, device=fused)
    w = training_step(fused, w, x)
    w.numpy()
    wgpu.reset_stats()
    for _ in range(10):
        w = training_step(fused, w, x)
    w.numpy()
    counted = wgpu.stats()
    assert counted.fused_kernels > 0
    assert counted.cache_misses == 0 and counted.cache_hits == counted.fused_kernels
    assert counted.pipelines_compiled == 0


STATEFUL = {
    "sgd-momentum": lambda params: pyburn.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: pyburn.optim.Adam(params, lr=0.01),
    "adamw-amsgrad": lambda params: pyburn.optim.AdamW(params, lr=0.01, amsgrad=True),
    "rmsprop": lambda params: pyburn.optim.RMSprop(params, lr=0.01),
    "adagrad": lambda params: pyburn.optim.Adagrad(params, lr=0.01),
}


@pytest.mark.parametrize("name", list(STATEFUL))
def test_state_carried_across_steps_compiles_once_and_holds_no_graph(fused, name):
    # an optimizer's state is computed from its previous value every step: were it left
    # pending, its graph would grow a step's worth each time (a new kernel every step)
    from pyburn.backends.fusion.lazy import LazyTensor

    dev = fused.autodiff()
    pyburn.manual_seed(0)
    model = pyburn.nn.Sequential(pyburn.nn.Linear(6, 16, device=dev), pyburn.nn.ReLU(),
                                 pyburn.nn.Linear(16, 3, device=dev))
    opt = STATEFUL[name](model.parameters())
    x = pyburn.randn(8, 6, device=dev)
    y = pyburn.randn(8, 3, device=dev)

    def step() -> None:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()

    def pending() -> int:
        gc.collect()
        return sum(isinstance(o, LazyTensor) and o.pending for o in gc.get_objects())

    for _ in range(3):
        step()
    model[0].weight.numpy()
    held = pending()
    wgpu.reset_stats()
    for _ in range(12):
        step()
    model[0].weight.numpy()
    assert wgpu.stats().pipelines_compiled == 0
    assert pending() == held


def test_fusion_can_be_turned_off():
    assert not isinstance(wgpu.create(0, fusion=False), FusionBackend)
    assert isinstance(wgpu.create(0, fusion=True), FusionBackend)


@pytest.mark.parametrize("value, on", [("0", False), ("off", False), ("1", True), ("", True)])
def test_the_environment_variable_decides(monkeypatch, value, on):
    monkeypatch.setenv("PYBURN_FUSION", value)
    assert wgpu.fusion_enabled() is on
    assert isinstance(wgpu.create(0), FusionBackend) is on


def test_autodiff_through_fused_chains(fused, plain):
    grads = []
    for dev in (fused, plain):
        x = pyburn.tensor([[0.5, -1.0, 2.0]], device=dev.autodiff(), requires_grad=True)
        ((x * 3.0).sigmoid() * x.exp() + x.tanh()).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=3e-7, atol=0)
    assert math.isfinite(float(grads[0].sum()))


def synthetic_digits(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-shaped images whose class is a bright 7x7 block at one of ten places, in noise:
    learnable in a few steps, so accuracies can be compared."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=count)
    images = rng.uniform(0, 0.3, size=(count, 1, 28, 28)).astype(np.float32)
    for n, label in enumerate(labels):
        row, col = divmod(int(label), 5)
        images[n, 0, 3 + 12 * row:10 + 12 * row, 1 + 5 * col:8 + 5 * col] += 0.7
    return images, labels.astype(np.int32)


def mnist_accuracy(device: str) -> float:
    """Test accuracy of the MNIST MLP after a few Adam steps on `device`, from one seed."""
    from pyburn.models import MnistMLP

    trainer = pyburn.device(device).autodiff()
    pyburn.manual_seed(0)
    model = MnistMLP(hidden=32, device=trainer)
    optimizer = pyburn.optim.Adam(model.parameters(), lr=0.01)
    images, labels = synthetic_digits(256, seed=1)
    for start in range(0, 256, 64):
        optimizer.zero_grad()
        x = pyburn.tensor(images[start:start + 64], device=trainer)
        y = pyburn.tensor(labels[start:start + 64], device=trainer)
        pyburn.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    test_images, test_labels = synthetic_digits(128, seed=2)
    with pyburn.no_grad():
        scores = model(pyburn.tensor(test_images, device=trainer))
    return float((scores.argmax(1).numpy() == test_labels).mean())


def test_mnist_trains_on_wgpu_as_on_cpu(fused):
    on_cpu, on_wgpu = mnist_accuracy("cpu"), mnist_accuracy(fused.name)
    assert on_cpu > 0.9
    assert abs(on_wgpu - on_cpu) <= 0.02
