"""Fusion into reductions, matmul and conv: elementwise producers computed as a reduction
reads them, elementwise consumers applied to a reduction's, a matmul's or a convolution's
result before it is stored (docs/fusion.md). Each case is one dispatch, gives the unfused
backend's values and the cpu backend's, and stores what anything else still holds.

References: the cpu backend (numpy) and the unfused wgpu backend (``wgpu_nofusion``: floats
to an ulp, since a shader compiler may contract a multiply and an add that are now in one
kernel; integers, bools and indices exactly).
"""

from __future__ import annotations

import dataclasses

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)


REFERENCES = ("cpu", "wgpu_nofusion")


def inputs(dev: pyburn.Device | str, seed: int = 0) -> dict[str, pyburn.Tensor]:
    """The operands of the cases below, on `dev`."""
    rng = np.random.default_rng(seed)
    arrays = {
        "x": rng.normal(size=(6, 7)), "y": rng.uniform(0.5, 2, size=(6, 7)),
        "row": rng.normal(size=(1, 7)), "col": rng.normal(size=(6, 1)),
        "a": rng.normal(size=(5, 8)), "b": rng.normal(size=(8, 9)),
        "bias": rng.normal(size=(9,)), "bias_col": rng.normal(size=(5, 1)),
        "a3": rng.normal(size=(2, 5, 8)), "b3": rng.normal(size=(2, 8, 9)),
        "img": rng.normal(size=(2, 3, 9, 8)), "k": rng.normal(size=(5, 3, 3, 3)),
        "chan": rng.normal(size=(5,)), "scale": rng.uniform(0.5, 2, size=(5,)),
        "plane": rng.normal(size=(7, 6)),
        "seq": rng.normal(size=(2, 4, 11)), "k1": rng.normal(size=(6, 2, 3)),
    }
    found = {k: pyburn.tensor(v.astype(np.float32), device=dev) for k, v in arrays.items()}
    found["i"] = pyburn.tensor(rng.integers(-9, 9, size=(6, 7)).astype(np.int32), device=dev)
    return found


def dispatches(*tensors: pyburn.Tensor) -> int:
    """The dispatches that computing `tensors` takes (without reading them back)."""
    wgpu.reset_stats()
    for t in tensors:
        t.device.backend.ready(t._h)
    return wgpu.stats().dispatches


def agree(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def check(case, fused: pyburn.Device, expected_dispatches: int = 1) -> None:
    """`case` (a function of `inputs`) computed on the fused device in
    `expected_dispatches`, with the values of the references."""
    out = case(inputs(fused))
    assert dispatches(out) == expected_dispatches
    got = out.numpy()
    for reference, rtol in zip(REFERENCES, (2e-5, 1e-6)):
        agree(got, case(inputs(reference)).numpy(), rtol)


# ---- producers fused into reductions ---------------------------------------------------

REDUCTIONS = {
    "sum": lambda p, dim: p.sum(dim),
    "mean": lambda p, dim: p.mean(dim),
    "prod": lambda p, dim: (p * 0.3).prod(dim),
    "amax": lambda p, dim: p.amax(dim),
    "amin": lambda p, dim: p.amin(dim, keepdim=True),
    "argmax": lambda p, dim: p.argmax(dim),
    "argmin": lambda p, dim: p.argmin(dim, keepdim=True),
    "any": lambda p, dim: (p > 1.5).any(dim),
    "all": lambda p, dim: (p > -1.5).all(dim),
}


@pytest.mark.parametrize("dim", [0, 1, None], ids=["dim0", "dim1", "all"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_a_producer_chain_and_its_reduction_are_one_dispatch(name, dim, fused):
    # broadcasts of a row and a column inside the producers
    check(lambda v: REDUCTIONS[name]((v["x"] * v["y"] + v["row"]).sin() - v["col"], dim), fused)


@pytest.mark.parametrize("dim", [0, 1])
def test_integer_producers_and_reductions(dim, fused):
    check(lambda v: ((v["i"] * 3 + 1) % 7 - v["i"].abs()).sum(dim), fused)
    check(lambda v: (v["i"] * v["i"] - 4).argmax(dim), fused)


def test_float16_producers_and_epilogues(fused):
    if "float16" not in fused.backend.caps:
        pytest.skip("the adapter has no shader-f16")
    cases = [lambda v: (v["x"] * v["y"] + 1.0).exp().sum(1),
             lambda v: (v["x"] - v["row"]).amax(0) * 3.0,
             lambda v: (v["x"] * v["y"]).argmin(1),
             lambda v: F.relu(v["a"] @ v["b"] + v["bias"]),
             lambda v: F.relu(F.conv2d(v["img"], v["k"]) + per_channel(v["chan"]))]
    for case in cases:
        def half(dev: str, case=case) -> pyburn.Tensor:
            return case({k: t.to(pyburn.float16) for k, t in inputs(dev).items()})

        out = half(fused.name)
        assert dispatches(out) == 1
        agree(out.numpy(), half("wgpu_nofusion").numpy(), 1e-3)


def test_reductions_of_views_and_permuted_inputs(fused):
    check(lambda v: (v["x"].T * 2.0 + v["y"].T).exp().sum(0), fused)
    check(lambda v: (v["x"] + 1.0).reshape(42).amax(0), fused)
    check(lambda v: (v["x"] + v["col"]).reshape(2, 3, 7).sum((0, 2)), fused)


def test_nan_from_producers_propagates_as_unfused(fused):
    check(lambda v: (v["x"].log() * v["y"]).amax(1), fused)  # log of negatives: NaN
    check(lambda v: (v["x"].log() * v["y"]).argmin(0), fused)


def test_consumers_of_a_reduction_fuse_into_it(fused):
    check(lambda v: ((v["x"] * v["y"]).sum(1) / 7.0 + 1.0).sqrt(), fused)
    check(lambda v: ((v["x"] * v["y"]).amax(0, keepdim=True) > v["row"]).int() * 3, fused)


def test_a_reduction_whose_result_is_broadcast_is_computed_first(fused):
    check(lambda v: v["x"] - v["x"].amax(1, keepdim=True), fused, 2)
    check(lambda v: (v["x"] - v["x"].amax(1, keepdim=True)).exp().sum(1), fused, 2)
    check(lambda v: v["x"].var(1), fused, 2)


def test_a_reshape_that_cannot_read_its_input_in_place_computes_it_first(fused):
    # the transposed product's dims cannot be merged into one: it is laid out first
    check(lambda v: (v["x"].T * 2.0).reshape(42).sum(0), fused, 2)


# ---- consumers fused into matmul -------------------------------------------------------

EPILOGUES = {
    "bias-relu": lambda v: F.relu(v["a"] @ v["b"] + v["bias"]),
    "bias-gelu": lambda v: F.gelu(v["a"] @ v["b"] + v["bias"]),
    "column-bias-sigmoid": lambda v: (v["a"] @ v["b"] + v["bias_col"]).sigmoid(),
    "scalars": lambda v: (v["a"] @ v["b"]) * 0.5 - 1.0,
    "transposed-weight": lambda v: F.linear(v["a"], v["b"].T, v["bias"]).tanh(),
    "three-d-linear": lambda v: F.relu(v["a3"] @ v["b"] + v["bias"]),
    "batched": lambda v: (v["a3"] @ v["b3"] - v["bias"]).abs(),
    "compare": lambda v: (v["a"] @ v["b"]) > v["bias"],
}


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_matmul_and_its_consumers_are_one_dispatch(name, fused):
    check(EPILOGUES[name], fused)


def test_two_products_in_one_graph_are_two_kernels(fused):
    check(lambda v: v["a"] @ v["b"] + (v["a"] * 2.0) @ v["b"], fused, 2)


def test_a_product_whose_result_is_broadcast_is_computed_first(fused):
    # (5, 1) against (5, 9): the product is needed at more points than it is computed at
    check(lambda v: (v["a"] @ v["b"][:, :1]) + v["bias"], fused, 2)


# ---- consumers fused into conv -----------------------------------------------------------

def per_channel(t: pyburn.Tensor) -> pyburn.Tensor:
    return t.reshape(1, -1, 1, 1)


CONV_EPILOGUES = {
    "bias-relu": lambda v: F.relu(F.conv2d(v["img"], v["k"], padding=1)
                                  + per_channel(v["chan"])),
    "own-bias-gelu": lambda v: F.gelu(F.conv2d(v["img"], v["k"], v["chan"], stride=2)),
    "scale-shift": lambda v: (F.conv2d(v["img"], v["k"], dilation=(1, 2))
                              * per_channel(v["scale"]) + per_channel(v["chan"])).sigmoid(),
    "scalars": lambda v: F.conv2d(v["img"], v["k"]) * 0.5 - 1.0,
    "spatial-map": lambda v: F.conv2d(v["img"], v["k"]) * v["plane"] + v["plane"].T.T,
    "compare": lambda v: F.conv2d(v["img"], v["k"], padding=1) > per_channel(v["chan"]),
    "groups-1d": lambda v: F.relu(F.conv1d(v["seq"], v["k1"], padding=2, groups=2)
                                  + v["chan"][:1].reshape(1, 1, 1)),
}


@pytest.mark.parametrize("name", sorted(CONV_EPILOGUES))
def test_conv_and_its_consumers_are_one_dispatch(name, fused):
    check(CONV_EPILOGUES[name], fused)


def test_a_conv_whose_result_is_reused_is_stored_by_the_fused_kernel(fused):
    v = inputs(fused)
    raw = F.conv2d(v["img"], v["k"], padding=1)
    out = F.relu(raw + per_channel(v["chan"]))
    assert dispatches(out) == 1
    assert dispatches(raw) == 0  # stored by the same kernel
    later = raw * 2.0  # a map kernel over the stored result: no convolution again
    assert dispatches(later) == 1
    w = inputs("cpu")
    want = F.conv2d(w["img"], w["k"], padding=1)
    agree(raw.numpy(), want.numpy(), 2e-5)
    agree(out.numpy(), F.relu(want + per_channel(w["chan"])).numpy(), 2e-5)
    agree(later.numpy(), (want * 2.0).numpy(), 2e-5)


def test_fused_conv_within_tiny_limits(tiny):
    # channels and kernel offsets in pieces, then the epilogue; bindings cut into boxes
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 8, 5, 5)).astype(np.float32)
    k = rng.normal(size=(4, 8, 5, 5)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    residual = rng.normal(size=(3, 4, 5, 5)).astype(np.float32)
    cases = [
        lambda t: F.relu(F.conv2d(t(x), t(k), padding=2) + t(b).reshape(1, -1, 1, 1)),
        # one piece; out and the residual bound an image at a time
        lambda t: F.relu(F.conv2d(t(x), t(k)[:, :, 1:4, 1:4], padding=1) + t(residual)),
    ]
    for case in cases:
        got = case(lambda arr: pyburn.tensor(arr, device=tiny)).numpy()
        want = case(lambda arr: pyburn.tensor(arr, device="cpu")).numpy()
        agree(got, want, 3e-5)


# ---- what is stored besides the root --------------------------------------------------

def test_a_producer_that_is_also_read_is_stored_by_the_reduction(fused):
    v = inputs(fused)
    p = (v["x"] * v["y"] + 1.0).exp()
    total = p.sum(1)
    assert dispatches(total) == 1
    assert dispatches(p) == 0  # stored by the reduction as it read it
    w = inputs("cpu")
    want = (w["x"] * w["y"] + 1.0).exp()
    agree(p.numpy(), want.numpy(), 1e-6)
    agree(total.numpy(), want.sum(1).numpy(), 2e-5)


def test_an_unused_producer_is_not_stored(fused, monkeypatch):
    v = inputs(fused)
    total = (v["x"] * v["y"] + 1.0).exp().sum(1)
    gpu = fused.backend.gpu
    made = []
    empty = gpu.empty

    def counted(shape, dtype):
        made.append(shape)
        return empty(shape, dtype)

    monkeypatch.setattr(gpu, "empty", counted)
    assert dispatches(total) == 1
    assert made == [(6,)]  # the result, and no buffer for the exp values


def test_a_product_that_is_also_read_is_stored_by_the_fused_kernel(fused):
    v = inputs(fused)
    product = v["a"] @ v["b"]
    out = F.relu(product + v["bias"])
    assert dispatches(out) == 1
    assert dispatches(product) == 0
    w = inputs("cpu")
    agree(product.numpy(), (w["a"] @ w["b"]).numpy(), 2e-5)
    agree(out.numpy(), F.relu(w["a"] @ w["b"] + w["bias"]).numpy(), 2e-5)


def test_a_held_intermediate_of_the_epilogue_is_stored_by_the_fused_kernel(fused):
    v = inputs(fused)
    pre = v["a"] @ v["b"] + v["bias"]
    out = F.relu(pre)
    assert dispatches(out) == 1
    assert dispatches(pre) == 0  # an output of the matmul kernel too
    w = inputs("cpu")
    agree(pre.numpy(), (w["a"] @ w["b"] + w["bias"]).numpy(), 2e-5)
    agree(out.numpy(), F.relu(w["a"] @ w["b"] + w["bias"]).numpy(), 2e-5)


def test_held_intermediates_of_a_reduction_epilogue_are_stored_whole_and_in_segments(fused):
    rng = np.random.default_rng(3)
    for rows in (30, 3000):  # one kernel; a first pass and a merge storing them
        a = rng.normal(size=(rows, 300)).astype(np.float32)
        x = pyburn.tensor(a, device=fused)
        mean = x.mean(0)
        scaled = mean * 3.0 + 1.0
        out = scaled.exp()
        assert dispatches(out) == (1 if rows == 30 else 2)
        assert dispatches(mean, scaled) == 0
        want = a.astype(np.float64).mean(0)
        for got, expected in ((mean, want), (scaled, want * 3 + 1), (out, np.exp(want * 3 + 1))):
            np.testing.assert_allclose(got.numpy(), expected, rtol=2e-5, atol=2e-6)


def test_a_reduction_result_that_is_also_read_is_stored(fused):
    v = inputs(fused)
    top = (v["x"] * v["y"]).amax(1, keepdim=True)
    above = (top > 1.0).int()  # a bool epilogue on a float result
    assert dispatches(above) == 1
    assert dispatches(top) == 0
    w = inputs("cpu")
    agree(top.numpy(), (w["x"] * w["y"]).amax(1, keepdim=True).numpy(), 1e-6)
    agree(above.numpy(), ((w["x"] * w["y"]).amax(1, keepdim=True) > 1.0).int().numpy(), 0)


def test_a_result_read_in_another_shape_is_stored_once(fused):
    v = inputs(fused)
    kept = (v["x"] * v["y"]).sum(1, keepdim=True)
    flat = kept.reshape(6)
    assert dispatches(flat) == 1
    assert dispatches(kept) == 0  # a view of what flat's kernel stored
    w = inputs("cpu")
    agree(kept.numpy(), (w["x"] * w["y"]).sum(1, keepdim=True).numpy(), 2e-5)


# ---- limits ----------------------------------------------------------------------------

@pytest.fixture
def tiny(fused, monkeypatch):
    """Bindings of at most 1 KiB, 4 workgroups per grid dim and loops of a few dozen
    iterations: small tensors take the paths of huge ones (pieces, partial results, K cut
    into pieces, arg-reductions the long way)."""
    from pyburn.backends.wgpu import launch

    runtime = fused.backend.runtime
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffer_binding_size=1024, max_workgroups_per_dimension=4))
    monkeypatch.setattr(launch, "MAX_LOOP", 1100)
    return fused


def test_fused_kernels_within_tiny_limits(tiny):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 50)).astype(np.float32)
    a = rng.normal(size=(20, 200)).astype(np.float32)
    b = rng.normal(size=(200, 3)).astype(np.float32)
    bias = rng.normal(size=(3,)).astype(np.float32)
    cases = [
        lambda t: ((t(x) * 0.5).erf() + 1.0).sum(0) / 3.0,  # pieces, the epilogue on merge
        lambda t: (t(x) * 2.0 - 1.0).argmax(0),  # long strided rows: the long way
        lambda t: (t(x).exp() - 1.0).mean(),
        lambda t: F.relu(t(a) @ t(b) + t(bias)),  # K in pieces, then the epilogue
    ]
    for case in cases:
        got = case(lambda arr: pyburn.tensor(arr, device=tiny)).numpy()
        want = case(lambda arr: pyburn.tensor(arr, device="cpu")).numpy()
        agree(got, want, 3e-5)


# ---- training -----------------------------------------------------------------------------

def mlp_gradients(device: str) -> list[np.ndarray]:
    """Gradients of one cross-entropy step of a small MLP, from one seed."""
    trainer = pyburn.device(device).autodiff()
    pyburn.manual_seed(0)
    model = pyburn.nn.Sequential(pyburn.nn.Linear(6, 16, device=trainer), pyburn.nn.ReLU(),
                                 pyburn.nn.Linear(16, 16, device=trainer), pyburn.nn.GELU(),
                                 pyburn.nn.Linear(16, 3, device=trainer))
    rng = np.random.default_rng(7)
    x = pyburn.tensor(rng.normal(size=(10, 6)).astype(np.float32), device=trainer)
    y = pyburn.tensor(rng.integers(0, 3, size=10).astype(np.int32), device=trainer)
    F.cross_entropy(model(x), y).backward()
    return [p.grad.numpy() for p in model.parameters()]


def test_a_training_step_gives_the_same_gradients_with_fusion_on_and_off(fused):
    on, off, cpu = (mlp_gradients(d) for d in (fused.name, "wgpu_nofusion", "cpu"))
    for g_on, g_off, g_cpu in zip(on, off, cpu):
        np.testing.assert_allclose(g_on, g_off, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g_on, g_cpu, rtol=1e-4, atol=1e-6)


def conv_gradients(device: str) -> list[np.ndarray]:
    """Gradients of one step of a small conv net (conv, batch-norm-like affine, relu), from
    one seed."""
    trainer = pyburn.device(device).autodiff()
    pyburn.manual_seed(0)
    conv1 = pyburn.nn.Conv2d(3, 6, 3, padding=1, device=trainer)
    conv2 = pyburn.nn.Conv2d(6, 4, 3, stride=2, device=trainer)
    rng = np.random.default_rng(8)
    scale = pyburn.tensor(rng.uniform(0.5, 2, size=(6,)).astype(np.float32), device=trainer,
                          requires_grad=True)
    x = pyburn.tensor(rng.normal(size=(2, 3, 8, 8)).astype(np.float32), device=trainer)
    h = F.relu(conv1(x) * scale.reshape(1, -1, 1, 1))
    (F.gelu(conv2(h)) ** 2).mean().backward()
    return [p.grad.numpy() for p in (*conv1.parameters(), *conv2.parameters(), scale)]


def test_a_conv_training_step_gives_the_same_gradients_with_fusion_on_and_off(fused):
    on, off, cpu = (conv_gradients(d) for d in (fused.name, "wgpu_nofusion", "cpu"))
    for g_on, g_off, g_cpu in zip(on, off, cpu):
        np.testing.assert_allclose(g_on, g_off, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_on, g_cpu, rtol=1e-4, atol=1e-5)
