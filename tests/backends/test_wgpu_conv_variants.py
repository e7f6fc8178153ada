"""The wgpu convolution kernels, each forced on every case (`conv.pick_variant` replaced):
``conv_tiled.wgsl`` (workgroup-memory tiles, for GPUs) and ``conv.wgsl`` (register blocks,
for CPU drivers and small convolutions).

Forward and transposed convolutions, 1-d to 3-d, over groups, stride, dilation, padding,
batch 1, sizes that cut tiles and slabs and channel counts that are no multiple of a tile;
then with the limits shrunk (loop pieces, boxes, grids over y and z) and with a sum long
enough that llvmpipe's loop limit would cut it short; float16; and the fused epilogue through
the public API. References: PyTorch CPU in float64, values and gradients (the input's
gradient is a transposed convolution, run by the forced kernel too).

`pick_variant` chooses on real adapters; llvmpipe always gets "blocked", so the tests
replace the choice to reach the tiled kernel.
"""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from nn.functional.helpers import PERMISSIVE, Tol, TorchChecker  # noqa: E402

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu import conv as kernels  # noqa: E402
from pyburn.backends.wgpu import launch  # noqa: E402
from pyburn.backends.wgpu.fusion import FusionBackend  # noqa: E402
from pyburn.backends.wgpu.templates import source  # noqa: E402
from pyburn.dtypes import float16  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

TF = torch.nn.functional
#: a kernel's file by the first line of its text
KERNEL_OF = {source(spec.kernel).splitlines()[0]: spec.kernel
             for spec in kernels.VARIANTS.values()}


@pytest.fixture(params=["wgpu", "wgpu_nofusion"])
def dev(request: pytest.FixtureRequest) -> pyburn.Device:
    """The fused and the plain wgpu backend."""
    return pyburn.device(request.param)


@pytest.fixture(params=list(kernels.VARIANTS))
def variant(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every convolution the test makes runs this kernel."""
    monkeypatch.setattr(kernels, "pick_variant", lambda *shape: request.param)
    return request.param


@pytest.fixture
def ref(request: pytest.FixtureRequest, dev: pyburn.Device) -> TorchChecker:
    """Inputs seeded by the test's id without its device and variant parts."""
    params = {k: v for k, v in request.node.callspec.params.items()
              if k not in ("dev", "variant")}
    return TorchChecker(dev, f"{request.node.originalname}{sorted(params.items())!r}")


@pytest.fixture
def kernels_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The convolution kernel (file name) of every dispatch made while the test runs, "other"
    for the rest (every form of the wgpu device shares one runtime)."""
    runtime = pyburn.device("wgpu").backend.runtime
    dispatch = runtime.dispatch
    seen: list[str] = []

    def record(text: str, *args, **kwargs):
        first = text.removeprefix("enable f16;\n\n").splitlines()[0]
        seen.append(KERNEL_OF.get(first, "other"))
        return dispatch(text, *args, **kwargs)

    monkeypatch.setattr(runtime, "dispatch", record)
    return seen


def _ran_only(seen: list[str], variant: str) -> None:
    kernel = kernels.VARIANTS[variant].kernel
    assert kernel in seen and not set(seen) - {kernel, "other"}, seen


CONV = {  # name: (dims, input shape, weight shape, options)
    "1d_groups_strided_dilated": (1, (2, 24, 150), (130, 12, 5),
                                  {"stride": 2, "padding": 4, "dilation": 3, "groups": 2}),
    "2d_odd_sizes": (2, (3, 19, 13, 11), (70, 19, 3, 3), {"padding": 1}),
    "2d_batch1_mixed": (2, (1, 9, 30, 31), (130, 9, 3, 2),
                        {"stride": (2, 1), "padding": (2, 1), "dilation": (1, 2)}),
    "2d_pointwise": (2, (4, 40, 9, 9), (96, 40, 1, 1), {}),
    "2d_depthwise": (2, (2, 6, 8, 8), (6, 1, 3, 3), {"padding": 1, "groups": 6}),
    "3d": (3, (2, 10, 7, 8, 9), (66, 10, 3, 2, 3),
           {"stride": (1, 2, 1), "padding": (1, 0, 1), "dilation": (2, 1, 1)}),
}
CONV_FN = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}

TRANSPOSED = {  # name: (dims, input shape, weight shape, options)
    "1d_groups": (1, (3, 16, 40), (16, 33, 4),
                  {"stride": 3, "padding": 2, "dilation": 2, "groups": 2}),
    "2d_output_padding": (2, (2, 20, 9, 10), (20, 70, 3, 3),
                          {"stride": 2, "padding": 1, "output_padding": 1}),
    "3d": (3, (1, 9, 4, 5, 3), (9, 65, 2, 3, 2), {"stride": (2, 1, 2)}),
}
TRANSPOSED_FN = {1: (F.conv_transpose1d, TF.conv_transpose1d),
                 2: (F.conv_transpose2d, TF.conv_transpose2d),
                 3: (F.conv_transpose3d, TF.conv_transpose3d)}


@pytest.mark.parametrize("case", CONV)
def test_conv(ref, variant, kernels_run, case):
    nd, xs, ws, options = CONV[case]
    ours, theirs = CONV_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), ref.floats(*ws), ref.floats(ws[0]),
              tol=PERMISSIVE, grad=False, **options)
    _ran_only(kernels_run, variant)


@pytest.mark.parametrize("case", TRANSPOSED)
def test_conv_transpose(ref, variant, kernels_run, case):
    nd, xs, ws, options = TRANSPOSED[case]
    ours, theirs = TRANSPOSED_FN[nd]
    ref.check(ours, theirs, ref.floats(*xs), ref.floats(*ws), tol=PERMISSIVE, grad=False,
              **options)
    _ran_only(kernels_run, variant)


def test_gradients_run_the_transposed_form(ref, variant):
    """The input's gradient is a transposed convolution (the weight's is conv_weight.wgsl)."""
    ref.check(F.conv2d, TF.conv2d, ref.floats(2, 12, 10, 9), ref.floats(72, 12, 3, 3),
              ref.floats(72), tol=PERMISSIVE, stride=2, padding=1)


def test_views_are_read_in_place(ref, variant):
    """A channels-last input (permuted) and a weight sliced out of a larger one."""
    def conv(lib):
        def run(x, w):
            return lib.conv2d(x.permute(0, 3, 1, 2), w[:, 1:], padding=1)
        return run

    ref.check(conv(F), conv(TF), ref.floats(2, 11, 12, 17), ref.floats(66, 18, 3, 3),
              tol=PERMISSIVE, grad=False)


@pytest.fixture
def tiny(dev: pyburn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bindings of at most 1 KiB, grids of at most 4 workgroups per dim and an invocation
    loop budget of about 80 iterations: every convolution runs in many pieces and boxes."""
    runtime = dev.backend.runtime
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffer_binding_size=1024, max_workgroups_per_dimension=4))
    monkeypatch.setattr(launch, "MAX_LOOP", 1100)


def test_pieces_boxes_and_split_grids(ref, variant, tiny, kernels_run):
    def fused(x, w, b):  # an epilogue applied after the pieces are added up
        return F.relu(F.conv2d(x, w, b, padding=1, groups=2))

    def theirs(x, w, b):
        return TF.relu(TF.conv2d(x, w, b, padding=1, groups=2))

    ref.check(fused, theirs, ref.floats(5, 18, 5, 4), ref.floats(8, 9, 3, 4), ref.floats(8),
              tol=PERMISSIVE, grad=False)
    ref.check(F.conv_transpose1d, TF.conv_transpose1d, ref.floats(6, 12, 9),
              ref.floats(12, 5, 9), tol=PERMISSIVE, grad=False, stride=2, groups=2)
    assert kernels_run.count(kernels.VARIANTS[variant].kernel) > 20


def test_a_sum_past_llvmpipes_loop_limit(ref, variant):
    """36,864 products per result: without the cut into pieces, llvmpipe would stop the
    loops of either kernel early and silently."""
    long = {"float32": Tol(1e-4, 2e-2)}
    ref.check(F.conv1d, TF.conv1d, ref.floats(1, 4096, 20, low=-1, high=1),
              ref.floats(64, 4096, 9, low=-1, high=1), tol=long, grad=False)


def test_float16_where_the_adapter_has_it(dev, variant):
    if float16 not in dev.backend.dtypes:
        pytest.skip("this adapter has no shader-f16")
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (2, 17, 9, 10)).astype(np.float16)
    w = rng.uniform(-1, 1, (70, 17, 3, 3)).astype(np.float16)
    got = F.conv2d(pyburn.tensor(x, device=dev), pyburn.tensor(w, device=dev), padding=1)
    assert got.dtype is float16
    want = TF.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64),
                     padding=1).numpy()
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-2, atol=2e-2)


def test_a_fused_epilogue_runs_in_the_kernel(variant, kernels_run):
    """relu(conv + bias): one dispatch of the forced kernel on the fused device; then a
    per-channel scale and shift, an activation and a constant, with the convolution itself
    kept as well."""
    dev = pyburn.device("wgpu")
    if not isinstance(dev.backend, FusionBackend):
        pytest.skip("PYBURN_FUSION=0: no epilogue to fuse")
    rng = np.random.default_rng(8)
    x, w, b, scale, shift = (rng.uniform(-2, 2, s).astype(np.float32) for s in
                             [(3, 10, 12, 11), (70, 10, 3, 3), (70,), (70,), (70,)])
    tx, tw, tb, tscale, tshift = (torch.tensor(a, dtype=torch.float64)
                                  for a in (x, w, b, scale, shift))
    px, pw, pb, pscale, pshift = (pyburn.tensor(a, device=dev) for a in (x, w, b, scale, shift))
    for t in (px, pw, pb, pscale, pshift):
        t.numpy()  # uploaded before counting
    kernels_run.clear()
    out = F.relu(F.conv2d(px, pw, pb, padding=1))
    np.testing.assert_allclose(out.numpy(), TF.relu(TF.conv2d(tx, tw, tb, padding=1)).numpy(),
                               rtol=2e-4, atol=2e-5)
    assert kernels_run == [kernels.VARIANTS[variant].kernel]
    y = F.conv2d(px, pw, stride=2)
    z = F.relu(y * pscale.reshape(1, -1, 1, 1) + pshift.reshape(1, -1, 1, 1)) - 0.25
    ty = TF.conv2d(tx, tw, stride=2)
    np.testing.assert_allclose(z.numpy(), TF.relu(ty * tscale.reshape(1, -1, 1, 1)
                                                  + tshift.reshape(1, -1, 1, 1)).numpy() - 0.25,
                               rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=2e-4, atol=2e-5)


def test_pick_variant_keeps_register_blocks_on_cpu_drivers_and_small_convolutions():
    gpu = pyburn.device("wgpu").backend.gpu
    rows, columns = kernels.SMALLEST_TILE
    big = (gpu, 256, 64 * 24 * 24, 32, False)
    assert kernels.pick_variant(*big) == ("blocked" if gpu.runtime.info.is_software else "tiled")
    assert kernels.pick_variant(gpu, 256, 64 * 24 * 24, 32, True) == "blocked"
    assert kernels.pick_variant(gpu, rows - 1, 10**6, 512, False) == "blocked"
    assert kernels.pick_variant(gpu, 512, columns - 1, 512, False) == "blocked"
    assert kernels.pick_variant(gpu, 512, 10**6, kernels.VARIANTS["tiled"].slab - 1,
                                False) == "blocked"
