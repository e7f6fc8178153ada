"""The wgpu backend's kernels for nn.functional's capabilities ("conv", "max_pool", "avg_pool",
"softmax", "layer_norm"): conv.wgsl, conv_weight.wgsl, max_pool.wgsl, avg_pool.wgsl and
rows.wgsl.

Each function is compared with PyTorch CPU in float64 (forward values, and the gradients of
a randomly weighted sum of the outputs on the autodiff device) on both forms of the wgpu
backend, over strides, padding, dilation, groups and odd sizes; then the same calls with the
limits shrunk (tiny bindings, a tiny loop budget) so that small inputs take the paths of
huge ones; then that each call really is the kernel (the shaders dispatched).

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu).
"""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from nn.functional.helpers import BALANCED, PERMISSIVE, TorchChecker  # noqa: E402

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu import conv as wgpu_conv  # noqa: E402
from pyburn.backends.wgpu import launch  # noqa: E402
from pyburn.backends.wgpu.capabilities import KERNEL_CAPS  # noqa: E402
from pyburn.backends.wgpu.templates import source  # noqa: E402
from pyburn.ops import capability  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

TF = torch.nn.functional
FORMS = ["wgpu", "wgpu_nofusion"]


@pytest.fixture(params=FORMS)
def dev(request: pytest.FixtureRequest) -> pyburn.Device:
    """The fused and the plain wgpu backend."""
    return pyburn.device(request.param)


@pytest.fixture
def ref(request: pytest.FixtureRequest, dev: pyburn.Device) -> TorchChecker:
    """Inputs seeded by the test's id without its device part."""
    params = {k: v for k, v in request.node.callspec.params.items() if k != "dev"}
    return TorchChecker(dev, f"{request.node.originalname}{sorted(params.items())!r}")


def _runtime(dev: pyburn.Device):
    return dev.backend.runtime


@pytest.fixture
def tiny(dev: pyburn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bindings of at most 1 KiB, grids of at most 4 workgroups per dim and an invocation
    loop budget of about 80 iterations: every kernel here runs in many pieces."""
    runtime = _runtime(dev)
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffer_binding_size=1024, max_workgroups_per_dimension=4))
    monkeypatch.setattr(launch, "MAX_LOOP", 1100)


@pytest.fixture
def kernels_run(dev: pyburn.Device, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The shader family (file name) of every dispatch made while the test runs."""
    families = {source(name).splitlines()[0]: name
                for name in ("conv", "conv_weight", "max_pool", "avg_pool", "rows", "matmul",
                             "reduce")}
    runtime = _runtime(dev)
    dispatch = runtime.dispatch
    seen: list[str] = []

    def record(text: str, *args, **kwargs):
        first = text.removeprefix("enable f16;\n\n").splitlines()[0]
        seen.append(families.get(first, "other"))
        return dispatch(text, *args, **kwargs)

    monkeypatch.setattr(runtime, "dispatch", record)
    return seen


def test_both_forms_offer_the_kernels(dev):
    assert KERNEL_CAPS <= dev.caps


# ---- convolution ---------------------------------------------------------------------------

CONV = {  # name: (dims, input shape, weight shape, options)
    "1d_strided_dilated_groups": (1, (2, 4, 11), (6, 2, 3),
                                  {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    "1d_same": (1, (1, 3, 10), (5, 3, 4), {"padding": "same"}),
    "2d_mixed": (2, (2, 3, 9, 7), (4, 3, 3, 2),
                 {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}),
    "2d_depthwise": (2, (2, 6, 8, 8), (6, 1, 3, 3), {"padding": 1, "groups": 6}),
    "2d_pointwise": (2, (3, 5, 4, 5), (7, 5, 1, 1), {}),
    "2d_many_channels": (2, (1, 2, 5, 6), (37, 2, 2, 3), {"stride": 2, "padding": 1}),
    "2d_unbatched": (2, (3, 6, 6), (2, 3, 3, 3), {"padding": 2, "dilation": 2}),
    "3d": (3, (1, 4, 5, 6, 4), (4, 2, 2, 3, 2),
           {"stride": (1, 2, 1), "padding": (1, 0, 1), "dilation": (2, 1, 1), "groups": 2}),
}
CONV_FN = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}


@pytest.mark.parametrize("case", CONV)
def test_conv(ref, case):
    nd, xs, ws, options = CONV[case]
    ours, theirs = CONV_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), ref.floats(*ws), ref.floats(ws[0]),
              tol=PERMISSIVE, **options)


TRANSPOSED = {  # name: (dims, input shape, weight shape, options)
    "1d_past_the_last_window": (1, (2, 4, 5), (4, 3, 3),
                                {"stride": 3, "padding": 1, "output_padding": 2, "groups": 2}),
    "2d": (2, (2, 3, 4, 5), (3, 2, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    "2d_dilated": (2, (1, 2, 3, 4), (2, 3, 2, 3),
                   {"stride": (1, 2), "dilation": (2, 1), "padding": (1, 0)}),
    "3d": (3, (1, 2, 3, 2, 3), (2, 2, 2, 2, 2), {"stride": 2}),
}
TRANSPOSED_FN = {1: (F.conv_transpose1d, TF.conv_transpose1d),
                 2: (F.conv_transpose2d, TF.conv_transpose2d),
                 3: (F.conv_transpose3d, TF.conv_transpose3d)}


@pytest.mark.parametrize("case", TRANSPOSED)
def test_conv_transpose(ref, case):
    nd, xs, ws, options = TRANSPOSED[case]
    ours, theirs = TRANSPOSED_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), ref.floats(*ws), tol=PERMISSIVE, **options)


def test_conv_reads_views_in_place(ref):
    """Flipped, permuted and expanded inputs (flipped ones are copied first)."""
    x, w = ref.floats(2, 5, 3, 6), ref.floats(4, 3, 2, 2)

    def conv(lib):
        def run(x, w):
            p = x.permute(0, 2, 1, 3)  # (2, 3, 5, 6)
            return lib.conv2d(p.flip(-1), w.flip(0)) + lib.conv2d(p[:, :1].expand(2, 3, 5, 6), w)

        return run

    ref.check(conv(F), conv(TF), x, w, tol=PERMISSIVE)


def test_conv_in_pieces(ref, tiny, kernels_run):
    """Channel and kernel loops cut to the loop budget, images cut to the binding limit."""
    ref.check(F.conv2d, TF.conv2d, ref.floats(5, 6, 7, 6), ref.floats(8, 3, 3, 4),
              tol=PERMISSIVE, padding=1, groups=2)
    ref.check(F.conv_transpose1d, TF.conv_transpose1d, ref.floats(6, 4, 20),
              ref.floats(4, 5, 9), tol=PERMISSIVE, stride=2)
    assert kernels_run.count("conv") > 8 and kernels_run.count("conv_weight") > 2


# ---- convolution weight gradients, split over images and positions ---------------------------

WEIGHT = {  # name: (dims, input shape, weight shape, stride, padding, dilation, groups)
    "1d_strided_dilated_groups": (1, (3, 4, 23), (6, 2, 3), 2, 1, 2, 2),
    "1d_long": (1, (40, 4, 60), (6, 2, 3), 2, 1, 2, 2),
    "2d_padded_groups": (2, (2, 6, 9, 8), (4, 3, 3, 3), 1, 1, 1, 2),
    "2d_stride_dilation": (2, (3, 3, 11, 10), (5, 3, 2, 3), 2, (1, 2), 2, 1),
    "2d_batch1_odd": (2, (1, 5, 13, 11), (3, 5, 3, 3), 1, 1, 1, 1),
    "2d_fewer_steps_than_chunks": (2, (1, 2, 3, 3), (3, 2, 2, 2), 1, 0, 1, 1),
    "3d": (3, (2, 4, 5, 6, 5), (4, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), 2),
}
TORCH_WEIGHT_GRAD = {1: torch.nn.grad.conv1d_weight, 2: torch.nn.grad.conv2d_weight,
                     3: torch.nn.grad.conv3d_weight}


def _check_weight_grad(ref: TorchChecker, case: str) -> None:
    """capability.conv_weight against PyTorch's conv weight gradient (float64)."""
    nd, xs, ws, stride, padding, dilation, groups = WEIGHT[case]
    stride, padding, dilation = ((v,) * nd if isinstance(v, int) else v
                                 for v in (stride, padding, dilation))
    sizes = wgpu_conv.output_sizes(xs[2:], ws[2:], stride, [(p, p) for p in padding], dilation)

    def ours(x, g):
        return capability.conv_weight(x, g, ws[2:], stride, [(p, p) for p in padding],
                                      dilation, groups)

    def theirs(x, g):
        return TORCH_WEIGHT_GRAD[nd](x, ws, g, stride=stride, padding=padding,
                                     dilation=dilation, groups=groups)

    ref.check(ours, theirs, ref.floats(*xs), ref.floats(xs[0], ws[0], *sizes), tol=PERMISSIVE,
              grad=False)


@pytest.mark.parametrize("chunks", [1, 3, 7])
@pytest.mark.parametrize("case", WEIGHT)
def test_conv_weight_split(ref, monkeypatch, kernels_run, case, chunks):
    """Whole and in 3 or 7 chunks (7 divides no case's count of images x positions, and
    exceeds the steps of some kernel offsets): the chunks' partial results are summed by a
    reduction."""
    monkeypatch.setattr(wgpu_conv, "splits", lambda workgroups, steps: chunks)
    _check_weight_grad(ref, case)
    assert kernels_run.count("conv_weight") == 1
    assert ("reduce" in kernels_run) == (chunks > 1)


def test_conv_weight_split_in_pieces(ref, tiny, monkeypatch, kernels_run):
    """Chunks whose loops are cut into pieces, over boxes cut to the binding limit; 50 chunks
    asked for, as many as the slots' binding and the grid allow given."""
    monkeypatch.setattr(wgpu_conv, "splits", lambda workgroups, steps: 50)
    _check_weight_grad(ref, "2d_fewer_steps_than_chunks")  # slots of 96 bytes: 10 of them
    _check_weight_grad(ref, "1d_long")  # 7 chunks of 166 steps: pieces, boxes of images
    assert kernels_run.count("conv_weight") > 8 and kernels_run.count("reduce") >= 2


def test_conv_weight_chooses_splits():
    """Enough chunks for the target, each at least MIN_CHUNK steps long; none where the
    result alone fills the target or the sum is short."""
    target = wgpu_conv.TARGET_WORKGROUPS
    assert wgpu_conv.splits(18, 64 * 24 * 24) == 29  # MNIST's 32 -> 64 3x3 conv
    assert wgpu_conv.splits(36, 256 * 8 * 8) == 15  # 64 -> 64 3x3 on 8x8, batch 256
    assert wgpu_conv.splits(4, 8 * 8 * 4096) == 128  # 1x1 conv, batch 4096
    assert wgpu_conv.splits(target, 10**6) == 1
    assert wgpu_conv.splits(18, 2 * wgpu_conv.MIN_CHUNK - 1) == 1


def test_a_split_weight_gradient_sums_its_slots(dev, kernels_run):
    """18 workgroups and 2048 steps: 2 chunks, added up by the backend's reduction."""
    rng = np.random.default_rng(2)
    x, g = rng.uniform(-1, 1, (8, 32, 18, 18)), rng.uniform(-1, 1, (8, 64, 16, 16))
    got = capability.conv_weight(*(pyburn.tensor(a.astype(np.float32), device=dev)
                                   for a in (x, g)), (3, 3), (1, 1), [(0, 0)] * 2, (1, 1), 1)
    want = torch.nn.grad.conv2d_weight(torch.tensor(x), (64, 32, 3, 3), torch.tensor(g))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=PERMISSIVE["float32"].rel,
                               atol=PERMISSIVE["float32"].abs * np.abs(want.numpy()).max())
    assert "reduce" in kernels_run


def test_conv_weight_float16(dev, monkeypatch):
    """float16 slots, summed by the reduction (computed in float32)."""
    if pyburn.float16 not in dev.backend.dtypes:
        pytest.skip(f"{dev} has no shader-f16")
    monkeypatch.setattr(wgpu_conv, "splits", lambda workgroups, steps: 3)
    rng = np.random.default_rng(1)
    x, g = rng.uniform(-1, 1, (3, 4, 7, 6)), rng.uniform(-1, 1, (3, 5, 5, 4))
    got = capability.conv_weight(*(pyburn.tensor(a.astype(np.float16), device=dev)
                                   for a in (x, g)), (3, 3), (1, 1), [(0, 0)] * 2, (1, 1), 1)
    assert got.dtype is pyburn.float16
    want = torch.nn.grad.conv2d_weight(torch.tensor(x), (5, 4, 3, 3), torch.tensor(g)).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=BALANCED["float16"].rel,
                               atol=4e-3 * np.abs(want).max())


# ---- max pooling ---------------------------------------------------------------------------

POOL = {  # name: (dims, input shape, options)
    "2d_padded": (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    "2d_ceil_dilated": (2, (1, 2, 8, 7), {"kernel_size": (2, 3), "stride": 2,
                                          "dilation": (2, 1), "ceil_mode": True}),
    "1d_unbatched": (1, (3, 10), {"kernel_size": 2, "dilation": 2, "ceil_mode": True}),
    "3d": (3, (1, 2, 5, 4, 6), {"kernel_size": 2, "stride": (1, 2, 2), "padding": (1, 0, 1)}),
}
POOL_FN = {1: (F.max_pool1d, TF.max_pool1d), 2: (F.max_pool2d, TF.max_pool2d),
           3: (F.max_pool3d, TF.max_pool3d)}


@pytest.mark.parametrize("case", POOL)
def test_max_pool(ref, case):
    nd, xs, options = POOL[case]
    ours, theirs = POOL_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), return_indices=True, **options)
    ref.check(ours, theirs, ref.floats(*xs), **options)


def test_max_pool_ties_nan_and_infinities(ref):
    """The first maximum wins, NaN counts as the largest, and a window of -inf names its
    first element inside the input (PyTorch's answers)."""
    x = ref.floats(2, 2, 6, 7).map(np.round)  # many ties
    x[0, 0, 1, 2] = np.nan
    x[1, 1, :3, :3] = -np.inf
    ref.check(F.max_pool2d, TF.max_pool2d, x, 3, stride=2, padding=1, return_indices=True,
              grad=False)
    ref.check(F.max_pool2d, TF.max_pool2d, ref.floats(2, 2, 6, 7).map(np.round), 2,
              return_indices=True)


def test_max_pool_in_pieces(ref, tiny, kernels_run):
    """A window longer than the loop budget, lead dims cut to the binding limit."""
    ref.check(F.max_pool2d, TF.max_pool2d, ref.floats(3, 4, 11, 12).map(np.round), 9, stride=2,
              return_indices=True)
    assert kernels_run.count("max_pool") >= 4


# ---- average pooling, sliding and adaptive -------------------------------------------------------

AVG = {  # name: (dims, input shape, options)
    "2d_padded": (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    "2d_padded_excluded": (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1,
                                             "count_include_pad": False}),
    "2d_ceil": (2, (1, 2, 8, 7), {"kernel_size": (2, 3), "stride": 2, "padding": (1, 0),
                                  "ceil_mode": True}),
    "2d_ceil_excluded": (2, (1, 2, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1,
                                           "ceil_mode": True, "count_include_pad": False}),
    "2d_divisor": (2, (2, 2, 6, 5), {"kernel_size": 2, "stride": 1, "padding": 1,
                                     "divisor_override": 3}),
    "1d_unbatched": (1, (3, 11), {"kernel_size": 4, "stride": 3, "padding": 2,
                                  "ceil_mode": True}),
    "3d": (3, (1, 2, 5, 4, 6), {"kernel_size": 2, "stride": (1, 2, 2), "padding": (1, 0, 1),
                                "count_include_pad": False}),
    "3d_divisor": (3, (1, 2, 3, 5, 4), {"kernel_size": (3, 2, 2), "ceil_mode": True,
                                        "divisor_override": 7}),
}
AVG_FN = {1: (F.avg_pool1d, TF.avg_pool1d), 2: (F.avg_pool2d, TF.avg_pool2d),
          3: (F.avg_pool3d, TF.avg_pool3d)}


@pytest.mark.parametrize("case", AVG)
def test_avg_pool(ref, case):
    nd, xs, options = AVG[case]
    ours, theirs = AVG_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), **options)


ADAPTIVE = {  # name: (dims, input shape, output size)
    "1d_uneven": (1, (2, 3, 10), 4),
    "1d_unbatched_grows": (1, (3, 5), 7),
    "2d_global": (2, (2, 4, 7, 7), 1),
    "2d_mixed": (2, (1, 3, 9, 8), (4, None)),
    "2d_odd": (2, (2, 2, 11, 5), (3, 2)),
    "3d": (3, (1, 2, 5, 7, 6), (2, 3, 4)),
}
ADAPTIVE_FN = {1: (F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d),
               2: (F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d),
               3: (F.adaptive_avg_pool3d, TF.adaptive_avg_pool3d)}


@pytest.mark.parametrize("case", ADAPTIVE)
def test_adaptive_avg_pool(ref, case):
    nd, xs, size = ADAPTIVE[case]
    ours, theirs = ADAPTIVE_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), size)


def test_avg_pool_reads_views_in_place(ref):
    """Permuted, flipped and expanded inputs."""
    def pool(lib):
        def run(x):
            p = x.permute(0, 2, 1, 3)
            return (lib.avg_pool2d(p.flip(-1), 3, stride=2, padding=1)
                    + lib.adaptive_avg_pool2d(p[:, :1].expand(2, 3, 5, 6), (3, 3)))

        return run

    ref.check(pool(F), pool(TF), ref.floats(2, 5, 3, 6))


def test_avg_pool_in_pieces(ref, tiny, kernels_run):
    """A window longer than the loop budget, lead dims cut to the binding limit."""
    ref.check(F.avg_pool2d, TF.avg_pool2d, ref.floats(3, 4, 11, 12), 9, stride=2, padding=4,
              count_include_pad=False)
    ref.check(F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, ref.floats(3, 4, 11, 12), 1)
    assert kernels_run.count("avg_pool") >= 8


# ---- softmax, log_softmax, layer_norm ----------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(ref, dim, log):
    ours, theirs = (F.log_softmax, torch.log_softmax) if log else (F.softmax, torch.softmax)
    ref.check(lambda x: ours(x * 3.0, dim=dim), lambda x: theirs(x * 3.0, dim),
              ref.floats(4, 5, 300))
    ref.check(lambda x: ours(x.permute(2, 0, 1), dim=dim),
              lambda x: theirs(x.permute(2, 0, 1), dim), ref.floats(3, 7, 2))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_of_infinities_and_nan(ref, log):
    """-inf entries get 0 (log: -inf); a row of -inf or with a NaN is NaN, as in PyTorch."""
    x = ref.floats(4, 6)
    x[0, 1:4] = -np.inf
    x[1, :] = -np.inf
    x[2, 3] = np.nan
    ours, theirs = (F.log_softmax, torch.log_softmax) if log else (F.softmax, torch.softmax)
    ref.check(lambda x: ours(x, dim=1), lambda x: theirs(x, 1), x, grad=False)


@pytest.mark.parametrize("shape", [(5,), (6, 5)])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm(ref, shape, affine):
    x = ref.floats(3, 6, 5).map(lambda v: v * 4.0 + 1.0)
    weight = ref.floats(*shape) if affine in ("weight", "both") else None
    bias = ref.floats(*shape) if affine in ("bias", "both") else None
    ref.check(F.layer_norm, TF.layer_norm, x, shape, weight, bias)
    ref.check(lambda x: F.layer_norm(x.mT, (6,), eps=1e-3),
              lambda x: TF.layer_norm(x.mT, (6,), eps=1e-3), x)


def test_rows_in_pieces(ref, tiny, kernels_run):
    """Rows cut to the binding limit; rows longer than the loop budget allows (the reductions
    and elementwise kernels instead)."""
    ref.check(lambda x: F.softmax(x, dim=-1), lambda x: torch.softmax(x, -1), ref.floats(9, 40))
    ref.check(lambda x: F.log_softmax(x, dim=0), lambda x: torch.log_softmax(x, 0),
              ref.floats(4000, 2))
    ref.check(F.layer_norm, TF.layer_norm, ref.floats(2, 4000), (4000,), ref.floats(4000),
              ref.floats(4000), tol=PERMISSIVE, grad=False)
    ref.check(F.layer_norm, TF.layer_norm, ref.floats(7, 3, 11), (3, 11))
    assert kernels_run.count("rows") > 4 and "reduce" in kernels_run


# ---- float16, and which kernels run -----------------------------------------------------------

def test_float16(dev):
    if pyburn.float16 not in dev.backend.dtypes:
        pytest.skip(f"{dev} has no shader-f16")
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, (2, 3, 6, 5)), rng.uniform(-1, 1, (4, 3, 3, 3))

    def half(a: np.ndarray) -> pyburn.Tensor:
        return pyburn.tensor(a.astype(np.float16), device=dev)

    checks = [(F.conv2d(half(x), half(w), padding=1), TF.conv2d(*map(torch.tensor, (x, w)),
                                                                  padding=1)),
              (F.max_pool2d(half(x), 2), TF.max_pool2d(torch.tensor(x), 2)),
              (F.avg_pool2d(half(x), 3, padding=1), TF.avg_pool2d(torch.tensor(x), 3,
                                                                  padding=1)),
              (F.adaptive_avg_pool2d(half(x), 2), TF.adaptive_avg_pool2d(torch.tensor(x), 2)),
              (F.softmax(half(x), dim=-1), torch.softmax(torch.tensor(x), -1)),
              (F.layer_norm(half(x), (6, 5)), TF.layer_norm(torch.tensor(x), (6, 5)))]
    for got, want in checks:
        assert got.dtype is pyburn.float16
        want = want.numpy()
        np.testing.assert_allclose(got.numpy(), want, rtol=BALANCED["float16"].rel,
                                   atol=4e-3 * max(1.0, np.abs(want).max()))


def test_each_call_is_its_kernel(dev, kernels_run):
    """A convolution is one conv.wgsl dispatch (no im2col, no matmul); its gradients are one
    conv.wgsl (transposed) and one conv_weight.wgsl; pooling (max, average, adaptive average),
    softmax and layer_norm are one dispatch each."""
    ad = dev.autodiff()
    x = pyburn.randn(2, 3, 8, 8, device=ad).requires_grad_()
    w = pyburn.randn(4, 3, 3, 3, device=ad).requires_grad_()
    y = F.conv2d(x, w, padding=1)
    y.numpy()
    assert [k for k in kernels_run if k != "other"] == ["conv"]
    kernels_run.clear()
    y.sum().backward()
    x.grad.numpy(), w.grad.numpy()
    assert sorted(k for k in kernels_run if k in ("conv", "conv_weight", "matmul")) == [
        "conv", "conv_weight"]
    kernels_run.clear()
    z = pyburn.randn(4, 6, 10, device=dev)
    for call, family in ((lambda: F.max_pool1d(z, 2), "max_pool"),
                         (lambda: F.avg_pool1d(z, 3, padding=1), "avg_pool"),
                         (lambda: F.adaptive_avg_pool2d(z, (4, 3)), "avg_pool"),
                         (lambda: F.softmax(z, dim=1), "rows"),
                         (lambda: F.log_softmax(z, dim=-1), "rows"),
                         (lambda: F.layer_norm(z, (10,)), "rows")):
        call().numpy()
        assert [k for k in kernels_run if k != "other"] == [family]
        kernels_run.clear()
