"""The cpu backend's compiled depthwise convolution (pyburn.backends.cpu.jit, numba) against
float64 PyTorch, and the cpu backend's `conv` with the kernels on and off (`jit.enabled`
replaced; $PYBURN_CPU_JIT, which it reads once, in a process of its own).

The cases are few on purpose: numba compiles each geometry (kernel, stride, dilation) and
dtype once, about a second each on a first run, and loads it from its disk cache after."""

from __future__ import annotations

import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("numba")
torch = pytest.importorskip("torch")

from pyburn.backends.cpu import conv, jit  # noqa: E402

#: (N, C, H, W), channel multiplier, kernel, stride, ((top, bottom), (left, right)), dilation,
#: dtype, with a bias
CASES = [
    ((2, 3, 9, 8), 1, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), "float32", True),
    ((1, 4, 10, 11), 2, (3, 3), (2, 2), ((0, 1), (1, 0)), (1, 1), "float32", False),
    ((2, 2, 7, 9), 1, (5, 5), (2, 1), ((2, 2), (2, 2)), (1, 1), "float64", True),
    ((2, 3, 8, 13), 3, (3, 2), (1, 3), ((2, 0), (0, 3)), (2, 1), "float32", True),
    ((2, 3, 8, 13), 3, (3, 2), (1, 3), ((2, 0), (0, 3)), (2, 1), "float64", False),
    ((1, 2, 2, 3), 1, (5, 5), (2, 2), ((2, 2), (2, 2)), (1, 1), "float32", False),  # tiny input
    # paddings past the kernel's reach: the transposed one cuts instead of padding
    ((1, 2, 6, 5), 1, (3, 3), (2, 1), ((3, 0), (1, 4)), (1, 1), "float64", True),
]


def _reference(x, w, bias, stride, padding, dilation, g):
    """float64 PyTorch (the zeros padded first: torch pads symmetrically only): the
    convolution, and the gradients in x and in w of its output's product with g."""
    (top, bottom), (left, right) = padding
    x64, w64 = (torch.from_numpy(a).double().requires_grad_() for a in (x, w))
    xp = torch.nn.functional.pad(x64, (left, right, top, bottom))
    b = None if bias is None else torch.from_numpy(bias).double()
    y = torch.nn.functional.conv2d(xp, w64, b, stride, 0, dilation, x.shape[1])
    grads = torch.autograd.grad(y, (x64, w64), torch.from_numpy(g).double())
    return [t.detach().numpy() for t in (y, *grads)]


@pytest.mark.parametrize("shape, multiplier, kernel, stride, padding, dilation, dtype, "
                         "with_bias", CASES)
def test_depthwise_conv_matches_torch_with_the_kernels_on_and_off(
        monkeypatch, shape, multiplier, kernel, stride, padding, dilation, dtype, with_bias):
    """`conv.conv` with one group per channel and its gradients `conv.conv_transpose` (in x)
    and `conv.conv_weight`: compiled ($PYBURN_CPU_JIT=1; the transposed one for a multiplier
    of 1) and in numpy (=off) all equal float64 PyTorch within the dtype's rounding, on
    strided (transposed) inputs as well as contiguous ones."""
    rng = np.random.default_rng(len(CASES) * shape[2] + shape[3])
    x = rng.normal(size=shape).astype(dtype)
    w = rng.normal(size=(shape[1] * multiplier, 1) + kernel).astype(dtype)
    bias = rng.normal(size=w.shape[0]).astype(dtype) if with_bias else None
    out = [(z + b + a - d * (k - 1) - 1) // s + 1
           for z, (b, a), d, k, s in zip(shape[2:], padding, dilation, kernel, stride)]
    g = rng.normal(size=(shape[0], w.shape[0], *out)).astype(dtype)
    want = _reference(x, w, bias, stride, padding, dilation, g)
    before, groups = [b for b, _ in padding], shape[1]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        assert jit.grouped_applies(x, w, groups, bias) is compiled
        assert jit.depthwise_weight_applies(x, g, groups) is compiled
        assert jit.depthwise_transpose_applies(g, w, groups) is (compiled and multiplier == 1)
        for xs, gs in ((x, g), (_strided(x), _strided(g))):
            got = [conv.conv(xs, w, stride, padding, dilation, groups, bias),
                   conv.conv_transpose(gs, w, stride, before, dilation, groups, shape[2:]),
                   conv.conv_weight(xs, gs, kernel, stride, padding, dilation, groups)]
            for value, reference in zip(got, want):
                assert value.dtype == dtype and value.shape == reference.shape
                np.testing.assert_allclose(value, reference, rtol=tol, atol=tol)


#: the activations of the tests' specs, in float64 PyTorch
_TORCH_ACTIVATIONS = {None: lambda t: t, "hardswish": torch.nn.functional.hardswish,
                      "clip": lambda t: t.clamp(0.0, 6.0), "sigmoid": torch.sigmoid}


#: (N, C, H, W), groups, outputs, kernel, stride, padding, dilation, dtype, with a bias: a
#: few input channels per group, on inputs large enough for the kernel (`jit.FEW_CHANNELS`)
FEW = [
    ((1, 3, 64, 64), 1, 16, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), "float32", True,
     ("hardswish",)),
    ((2, 4, 64, 70), 2, 6, (3, 2), (1, 2), ((2, 0), (0, 3)), (2, 1), "float64", False,
     ("clip", 0.0, 6.0)),
]


@pytest.mark.parametrize("shape, groups, outputs, kernel, stride, padding, dilation, dtype, "
                         "with_bias, activation", FEW)
def test_few_channels_per_group_match_torch_with_the_kernels_on_and_off(
        monkeypatch, shape, groups, outputs, kernel, stride, padding, dilation, dtype,
        with_bias, activation):
    """`conv.conv` with 2 or 3 input channels per group (a stem's RGB) runs the compiled
    kernel (`jit.grouped`) and gives float64 PyTorch's convolution and activation, as
    im2col does."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=shape).astype(dtype)
    w = rng.normal(size=(outputs, shape[1] // groups) + kernel).astype(dtype)
    bias = rng.normal(size=outputs).astype(dtype) if with_bias else None
    (top, bottom), (left, right) = padding
    reference = torch.nn.functional.conv2d(
        torch.nn.functional.pad(torch.from_numpy(x).double(), (left, right, top, bottom)),
        torch.from_numpy(w).double(), None if bias is None else torch.from_numpy(bias).double(),
        stride, 0, dilation, groups)
    reference = _TORCH_ACTIVATIONS[activation[0]](reference).numpy()
    tol = 1e-5 if dtype == "float32" else 1e-12
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        assert jit.grouped_applies(x, w, groups, bias) is compiled
        assert not jit.grouped_applies(x[:, :, :8, :8], w, groups, bias)  # a small input
        for xs in (x, _strided(x)):
            got = conv.conv(xs, w, stride, padding, dilation, groups, bias, activation)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, reference, rtol=tol, atol=tol)


def _strided(a):
    """`a`'s values in a view whose first two axes are swapped in memory."""
    return np.ascontiguousarray(a.swapaxes(0, 1)).swapaxes(0, 1)


@pytest.mark.parametrize("prelude", ["os.environ['PYBURN_CPU_JIT'] = 'off'",
                                     "sys.modules['numba'] = None"],
                         ids=["switched off", "numba missing"])
def test_numba_stays_unloaded_without_a_compiled_kernel(prelude):
    """numba loads only with the first compiled kernel: not with ``import pyburn``, not on
    flex, not while $PYBURN_CPU_JIT says off; and without numba (an import that fails) the cpu
    device computes a depthwise convolution in numpy."""
    code = ("import os, sys\n" + prelude + "\n"
            "import pyburn, pyburn.nn.functional as F\n"
            "for name in ('flex', 'cpu'):\n"
            "    d = pyburn.device(name)\n"
            "    y = F.conv2d(pyburn.ones(1, 2, 5, 5, device=d), pyburn.ones(2, 1, 3, 3, device=d),"
            " groups=2)\n"
            "    print(y.sum().item(), sys.modules.get('numba') is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split() == ["162.0", "False"] * 2


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_erf_compiled_equals_numpy(monkeypatch, dtype):
    """float32's and float16's erf through numba's loop (one pass for |x| < 2 and beyond 6)
    gives numpy's numbers bit for bit: every range, the switch points, signed zeros,
    infinities and NaN, in a batch larger than one chunk."""
    from pyburn.backends.cpu import extra_math

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(scale=2.5, size=70_000), np.linspace(-7, 7, 2801),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0, -2.0, 6.0, -6.0]])
    x = x.astype(dtype)
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        results.append(extra_math.erf(x))
    np.testing.assert_array_equal(results[0], results[1])
    assert np.array_equal(np.signbit(results[0]), np.signbit(results[1]))


def _channels_last(a):
    """`a` (N, C, H, W) stored (N, H, W, C)."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


#: (N, C, H, W), kernel, stride, padding, dilation, dtype, stored channels last, activation:
#: depthwise convolutions `jit.depthwise_last` takes (stored channels last, or with many
#: channels and few outputs: `jit.LAST_CHANNELS`)
LAST = [
    ((2, 3, 9, 8), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), "float32", True, None),
    ((1, 64, 14, 13), (5, 5), (2, 2), ((2, 2), (2, 2)), (1, 1), "float32", False,
     ("hardswish",)),
    ((2, 72, 7, 6), (3, 2), (1, 2), ((1, 0), (2, 1)), (2, 1), "float64", True, ("clip", 0.0, 6.0)),
    ((1, 3, 2, 3), (5, 5), (2, 2), ((2, 2), (2, 2)), (1, 1), "float32", True, ("sigmoid",)),
]

@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, dtype, last, activation",
                         LAST)
def test_channels_last_depthwise_and_pointwise_match_torch(
        monkeypatch, shape, kernel, stride, padding, dilation, dtype, last, activation):
    """A depthwise convolution computed channels last (`jit.depthwise_last`, the taps in the
    padding left out), its activation written over its output in place, and the 1x1
    convolution that reads that output as it lies equal float64 PyTorch, with the kernels
    on and off; the depthwise output is stored channels last where the kernel ran."""
    rng = np.random.default_rng(shape[1])
    x = rng.normal(size=shape).astype(dtype)
    w = rng.normal(size=(shape[1], 1) + kernel).astype(dtype)
    bias = rng.normal(size=shape[1]).astype(dtype)
    project = rng.normal(size=(5, shape[1], 1, 1)).astype(dtype)
    (top, bottom), (left, right) = padding
    act = _TORCH_ACTIVATIONS[activation and activation[0]]
    y = act(torch.nn.functional.conv2d(
        torch.nn.functional.pad(torch.from_numpy(x).double(), (left, right, top, bottom)),
        torch.from_numpy(w).double(), torch.from_numpy(bias).double(), stride, 0, dilation,
        shape[1]))
    want = [y.numpy(), torch.nn.functional.conv2d(y, torch.from_numpy(project).double()).numpy()]
    xs = _channels_last(x) if last else x
    tol = 1e-5 if dtype == "float32" else 1e-12
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        assert jit.depthwise_last_applies(xs, w, stride, shape[1], bias) is compiled
        got = conv.conv(xs, w, stride, padding, dilation, shape[1], bias, activation)
        assert jit.channels_last(got) is (compiled and got[0, 0].size > 1)
        got = [got, conv.conv(got, project, (1, 1), ((0, 0), (0, 0)), (1, 1), 1)]
        for value, reference in zip(got, want):
            assert value.dtype == dtype and value.shape == reference.shape
            np.testing.assert_allclose(value, reference, rtol=tol, atol=tol)


@pytest.mark.parametrize("spec", [None, ("clip", -0.5, 0.5), ("hardsigmoid",), ("hardswish",),
                                  ("sigmoid",), ("silu",)])
def test_activations_in_place_keep_channels_last_storage(monkeypatch, spec):
    """`activations.apply_in_place` (with and without a per-channel shift) and
    `activations.activation` give an array stored channels last the numbers they give its
    contiguous copy, bit for bit, in that storage, compiled or not; NaN and infinities
    included."""
    from pyburn.backends.cpu import activations

    rng = np.random.default_rng(3)
    x = rng.normal(scale=4, size=(2, 9, 5, 4)).astype(np.float32)
    x[0, 1, 2, :3] = [np.nan, np.inf, -np.inf]
    shift = rng.normal(size=9).astype(np.float32)
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        for by in (None, shift):
            want = activations.apply_in_place(x.copy(), spec, by)
            got = activations.apply_in_place(_channels_last(x), spec, by)
            np.testing.assert_array_equal(got, want)
            assert jit.channels_last(got)
        if spec is not None and spec[0] != "clip":
            got = activations.activation(_channels_last(x), spec[0])
            np.testing.assert_array_equal(got, activations.activation(x, spec[0]))
            assert jit.channels_last(got)


#: (N, C, H, W), kernel, stride, ((top, bottom), (left, right)), dilation, dtype: a ceil-mode
#: pooling (the padding after only), dilated and asymmetric ones, a row of windows wholly
#: in the padding
POOLS = [
    ((2, 3, 11, 12), (3, 3), (2, 2), ((0, 1), (0, 0)), (1, 1), "float32"),
    ((1, 4, 9, 10), (3, 3), (1, 1), ((2, 2), (1, 1)), (2, 2), "float32"),
    ((2, 2, 7, 9), (2, 3), (3, 1), ((1, 2), (0, 2)), (1, 2), "float64"),
    ((1, 2, 3, 4), (2, 2), (1, 1), ((3, 0), (0, 0)), (1, 1), "float32"),
]


@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, dtype", POOLS)
def test_max_pool_matches_torch_with_the_kernels_on_and_off(
        monkeypatch, shape, kernel, stride, padding, dilation, dtype):
    """`conv.max_pool`'s values, compiled (`jit.max_pool`) and in numpy, equal PyTorch's
    max pooling of the input padded with -inf, NaN and infinities included, on contiguous,
    strided and channels-last inputs; with the positions asked for, numpy computes them."""
    rng = np.random.default_rng(shape[3])
    x = rng.normal(size=shape).astype(dtype)
    x[0, 0, 1, 1], x[0, 1, 2, :2], x[-1, -1, 0, 0] = np.nan, [np.inf, -np.inf], np.inf
    (top, bottom), (left, right) = padding
    want = torch.nn.functional.max_pool2d(
        torch.nn.functional.pad(torch.from_numpy(x), (left, right, top, bottom),
                                value=-np.inf), kernel, stride, 0, dilation).numpy()
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        assert jit.max_pool_applies(x, kernel, False) is compiled
        assert not jit.max_pool_applies(x, kernel, True)
        for xs in (x, _strided(x), _channels_last(x)):
            got, positions = conv.max_pool(xs, kernel, stride, padding, dilation, False)
            assert positions is None and got.dtype == dtype
            np.testing.assert_array_equal(got, want)


#: (N, C, H, W), groups, outputs, kernel, stride, padding, dilation, dtype: convolutions
#: through im2col, with taps in the padding past a whole row and column of windows
IM2COL = [
    ((2, 4, 9, 10), 1, 5, (3, 3), (2, 1), ((1, 2), (0, 3)), (1, 2), "float32"),
    ((2, 6, 7, 8), 2, 4, (2, 3), (1, 3), ((3, 0), (2, 2)), (2, 1), "float64"),
]


@pytest.mark.parametrize("shape, groups, outputs, kernel, stride, padding, dilation, dtype",
                         IM2COL)
def test_im2col_convolutions_match_torch_with_the_kernels_on_and_off(
        monkeypatch, shape, groups, outputs, kernel, stride, padding, dilation, dtype):
    """`conv.conv` and `conv.conv_weight` over im2col columns, compiled (`jit.columns`) and
    made by numpy's views, equal float64 PyTorch on contiguous and strided inputs."""
    rng = np.random.default_rng(shape[1])
    x = rng.normal(size=shape).astype(dtype)
    w = rng.normal(size=(outputs, shape[1] // groups) + kernel).astype(dtype)
    (top, bottom), (left, right) = padding
    x64, w64 = (torch.from_numpy(a).double().requires_grad_() for a in (x, w))
    y = torch.nn.functional.conv2d(torch.nn.functional.pad(x64, (left, right, top, bottom)),
                                   w64, None, stride, 0, dilation, groups)
    g = rng.normal(size=tuple(y.shape)).astype(dtype)
    (dw,) = torch.autograd.grad(y, (w64,), torch.from_numpy(g).double())
    tol = 1e-5 if dtype == "float32" else 1e-12
    for compiled in (True, False):
        monkeypatch.setattr(jit, "enabled", lambda on=compiled: on)
        assert jit.columns_applies(x, kernel) is compiled
        for xs in (x, _strided(x)):
            got = conv.conv(xs, w, stride, padding, dilation, groups)
            np.testing.assert_allclose(got, y.detach().numpy(), rtol=tol, atol=tol)
            got = conv.conv_weight(xs, g, kernel, stride, padding, dilation, groups)
            np.testing.assert_allclose(got, dw.numpy(), rtol=tol, atol=tol)
