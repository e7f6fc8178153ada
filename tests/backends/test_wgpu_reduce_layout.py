"""The two layouts of the wgpu reductions (``reduce.py``, ``reduce.wgsl``): by rows (a group's
invocations are neighbours) and by columns (each invocation folds a group alone, neighbours
own neighbouring kept points: ``x.sum(0)``, ``x.mean(1)`` of an (N, C, L) tensor), each
with segments merged by a second pass where few groups are long.

Every op over axis sets of 3-d and 4-d shapes (odd sizes, sizes of 1), on the fused and the
plain backend, against float64 numpy; arg-reduction ties (the first index wins) and NaN
(propagated by max/min, found first by argmax/argmin) by columns; every dtype; producers and
consumers fused into a reduction by columns (one dispatch, or two with segments); and the
same under tiny limits (bindings cut into pieces, loops cut into many segments). A spy on
the layout decision checks that each case takes the layout it is meant to exercise.

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu import launch, reduce  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

FORMS = ["wgpu", "wgpu_nofusion"]
ROWS, COLUMNS = "rows", "columns"


@pytest.fixture
def layouts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The layout of every reduction kernel planned while the test runs, in order (a
    reduction in segments plans its first pass, then the merge)."""
    seen: list[str] = []
    decide = reduce._by_columns

    def spy(*args) -> bool:
        found = decide(*args)
        seen.append(COLUMNS if found else ROWS)
        return found

    monkeypatch.setattr(reduce, "_by_columns", spy)
    return seen


@pytest.fixture(params=["segments", "whole"])
def target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The default target ("segments": columns of a few hundred groups are cut into
    segments), or a target of one workgroup ("whole": one pass, and arg-reductions by
    columns from 256 groups on, as they otherwise are from 65,536)."""
    if request.param == "whole":
        monkeypatch.setattr(reduce, "TARGET_WORK", 1)
    return request.param


def dispatches(*tensors: pyburn.Tensor) -> int:
    """The dispatches that computing `tensors` takes (without reading them back)."""
    wgpu.reset_stats()
    for t in tensors:
        t.device.backend.ready(t._h)
    return wgpu.stats().dispatches


# op: (pyburn call on a tensor, numpy reference on float64, inputs' low and high)
OPS = {
    "sum": (lambda t, d: t.sum(d), lambda a, d: a.sum(d), -2.0, 2.0),
    "mean": (lambda t, d: t.mean(d), lambda a, d: a.mean(d), -2.0, 2.0),
    "prod": (lambda t, d: t.prod(d), lambda a, d: a.prod(d), 0.97, 1.03),
    "amax": (lambda t, d: t.amax(d), lambda a, d: a.max(d), -2.0, 2.0),
    "amin": (lambda t, d: t.amin(d, keepdim=True), lambda a, d: a.min(d, keepdims=True),
             -2.0, 2.0),
    "any": (lambda t, d: (t > 1.9).any(d), lambda a, d: (a > 1.9).any(d), -2.0, 2.0),
    "all": (lambda t, d: (t > -1.9).all(d), lambda a, d: (a > -1.9).all(d), -2.0, 2.0),
    "argmax": (lambda t, d: t.argmax(d[0]), lambda a, d: a.argmax(d[0]), -2.0, 2.0),
    "argmin": (lambda t, d: t.argmin(d[0], keepdim=True),
               lambda a, d: np.expand_dims(a.argmin(d[0]), d[0]), -2.0, 2.0),
}

# (shape, axes, the layout of the first kernel when not an arg-reduction)
CASES = [
    ((3, 37, 300), (0,), COLUMNS),  # kept dims merge into one of 11,100
    ((3, 37, 300), (1,), COLUMNS),  # (N, C, L) over C
    ((3, 37, 300), (2,), ROWS),
    ((3, 37, 300), (0, 2), ROWS),
    ((3, 37, 300), (1, 2), ROWS),
    ((2, 1, 9, 260), (0, 2), COLUMNS),  # two reduced dims between kept ones
    ((5, 3, 1, 300), (0, 1), COLUMNS),  # reduced dims that merge into one
    ((2, 1, 9, 260), (1,), ROWS),  # over a size-1 dim: nothing to combine
    ((7, 300, 3), (1,), ROWS),  # columns of 3: too few neighbours to read together
    ((7, 300, 3), (0,), COLUMNS),
    ((150, 2, 260), (0,), COLUMNS),  # long enough for segments (where not "whole")
    ((20, 3, 10, 260), (0, 2), COLUMNS),  # segments over two reduced dims
]


def _case_id(case) -> str:
    shape, axes, _ = case
    return "x".join(map(str, shape)) + "-" + "".join(map(str, axes))


@pytest.mark.parametrize(("name", "case"), [
    pytest.param(name, case, id=f"{name}-{_case_id(case)}") for name in sorted(OPS)
    for case in CASES if not (name.startswith("arg") and len(case[1]) > 1)])  # over one dim
@pytest.mark.parametrize("form", FORMS)
def test_every_op_over_axis_sets(form, name, case, target, layouts):
    shape, axes, layout = case
    call, ref, low, high = OPS[name]
    arg = name.startswith("arg")
    a = np.random.default_rng(sum(shape) + len(axes)).uniform(low, high, size=shape)
    got = call(pyburn.tensor(a.astype(np.float32), device=form), axes).numpy()
    want = ref(a.astype(np.float32).astype(np.float64), axes)
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4 if name == "prod" else 2e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    if arg and target == "segments":
        layout = ROWS  # too few columns to fill the device without segments
    assert layouts[0] == layout


def test_each_layout_reads_its_contiguous_dim_and_fills_the_device(layouts):
    def stored(*shape: int) -> pyburn.Tensor:  # (not `zeros`: one element, read everywhere)
        return pyburn.tensor(np.ones(shape, np.float32), device="wgpu_nofusion")

    x = stored(64, 256, 36)
    cases = [
        (lambda: x.sum(1), COLUMNS),
        (lambda: x.sum(0), COLUMNS),
        (lambda: x.sum((0, 2)), ROWS),
        (lambda: x.sum(2), ROWS),
        (lambda: x.sum((1, 2)), ROWS),
        # 2,304 columns: too few for an arg-reduction, which is not cut into segments
        (lambda: x.argmax(1), ROWS),
        (lambda: stored(2, 5, 33000).argmax(1), COLUMNS),  # 66,000 columns
        (lambda: stored(2000, 100).sum(0), ROWS),  # 100 columns: too few to fill the device
        # a transposed view: its kept dim is the contiguous one
        (lambda: stored(64, 300).T.sum(1), COLUMNS),
    ]
    for case, layout in cases:
        layouts.clear()
        case().numpy()
        assert layouts[0] == layout


@pytest.mark.parametrize("form", FORMS)
def test_arg_ties_give_the_first_index_by_columns(form, layouts):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, size=(4, 66000)).astype(np.int32)  # every column has ties
    x = pyburn.tensor(a, device=form)
    np.testing.assert_array_equal(x.argmax(0).numpy(), a.argmax(0))
    np.testing.assert_array_equal(x.argmin(0).numpy(), a.argmin(0))
    b = np.zeros((3, 5, 66000), np.float32)  # all equal: index 0 everywhere
    y = pyburn.tensor(b, device=form)
    np.testing.assert_array_equal(y.argmax(1).numpy(), np.zeros((3, 66000), np.int32))
    assert layouts == [COLUMNS] * 3


@pytest.mark.parametrize("form", FORMS)
def test_nan_propagates_by_columns(form, target, layouts):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 300)).astype(np.float32)
    a[7, 3] = a[30, 3] = a[0, 200] = a[39, 299] = np.nan
    a[5, 3] = np.inf
    a[2, 10] = -np.inf
    x = pyburn.tensor(a, device=form)
    w = a.astype(np.float64)
    np.testing.assert_array_equal(x.amax(0).numpy(), w.max(0).astype(np.float32))
    np.testing.assert_array_equal(x.amin(0).numpy(), w.min(0).astype(np.float32))
    np.testing.assert_allclose(x.sum(0).numpy(), w.sum(0), rtol=2e-5, atol=1e-5)
    # numpy's argmax and argmin name the first NaN, as pyburn's do
    np.testing.assert_array_equal(x.argmax(0).numpy(), a.argmax(0))
    np.testing.assert_array_equal(x.argmin(0).numpy(), a.argmin(0))
    np.testing.assert_array_equal(x.any(0).numpy(), a.any(0))  # NaN is nonzero
    assert layouts[0] == COLUMNS


def _tensor(a: np.ndarray, form: str) -> pyburn.Tensor:
    if a.dtype == np.float16 and "float16" not in pyburn.device(form).backend.caps:
        pytest.skip("the adapter has no shader-f16")
    return pyburn.tensor(a, device=form)


DTYPES = {
    "float32": lambda rng, shape: rng.uniform(-2, 2, shape).astype(np.float32),
    "float16": lambda rng, shape: rng.uniform(0.9, 1.1, shape).astype(np.float16),
    "int32": lambda rng, shape: rng.integers(-50, 50, shape).astype(np.int32),
    "uint8": lambda rng, shape: rng.integers(0, 256, shape).astype(np.uint8),
    "bool": lambda rng, shape: rng.random(shape) < 0.9,
}


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("form", FORMS)
def test_every_dtype_by_columns_and_rows(form, dtype, axis, target, layouts):
    a = DTYPES[dtype](np.random.default_rng(3), (37, 300))
    x = _tensor(a, form)
    kind = a.dtype
    exact = kind.kind != "f"
    # sums and products keep the dtype (bool sums give int32); ints wrap as numpy's do
    total = np.int32 if kind == np.bool_ else kind
    cases = [
        (x.sum(axis), a.sum(axis, dtype=np.float64 if not exact else total).astype(total)),
        (x.amax(axis), a.max(axis)),
        (x.amin(axis), a.min(axis)),
        (x.argmax(axis), a.argmax(axis).astype(np.int32)),
        (x.argmin(axis), a.argmin(axis).astype(np.int32)),
        (x.any(axis), a.any(axis)),
        (x.all(axis), a.all(axis)),
    ]
    if kind != np.bool_:
        prod = a.prod(axis, dtype=np.float64 if not exact else kind).astype(kind)
        cases.append((x.prod(axis), prod))
    for got, want in cases:
        got = got.numpy()
        assert got.dtype == want.dtype
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            tol = 2e-3 if kind == np.float16 else 2e-5
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    assert layouts[0] == (COLUMNS if axis == 0 else ROWS)


def _inputs(dev: str, seed: int = 4) -> dict[str, pyburn.Tensor]:
    rng = np.random.default_rng(seed)
    arrays = {"x": rng.normal(size=(200, 300)), "y": rng.uniform(0.5, 2, size=(200, 300)),
              "row": rng.normal(size=(1, 300)), "col": rng.normal(size=(200, 1)),
              "ncl": rng.normal(size=(3, 37, 300)), "chan": rng.normal(size=(1, 37, 1))}
    return {k: pyburn.tensor(v.astype(np.float32), device=dev) for k, v in arrays.items()}


FUSED = {  # producers with broadcasts, and consumers, over the columns
    "sum": lambda v: ((v["x"] * v["y"] + v["row"]).sin() - v["col"]).sum(0),
    "mean-epilogue": lambda v: ((v["x"] * v["y"]).mean(0) * 2.0 + 1.0).sqrt(),
    "amax-compare": lambda v: ((v["x"] - v["col"]).amax(0, keepdim=True) > v["row"]).int(),
    "argmax": lambda v: (v["x"] * v["y"] - v["row"]).argmax(0),
    "any": lambda v: ((v["x"] * v["y"]) > 2.5).any(0),
    "prod": lambda v: (v["y"] * 0.02 + 0.98).prod(0),
    "ncl-mean": lambda v: (v["ncl"] * v["chan"] + 1.0).exp().mean(1),
}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_producers_and_consumers_fuse_into_a_reduction_by_columns(name, fused, target,
                                                                  layouts):
    case = FUSED[name]
    out = case(_inputs(fused.name))
    # one kernel, and a merge of the segments where they are cut: columns of 200 into 4,
    # not those of 37 (a segment is at least 64 long), nor an arg-reduction's
    cut = target == "segments" and name not in ("argmax", "ncl-mean")
    assert dispatches(out) == 1 + cut
    assert layouts[0] == (ROWS if name == "argmax" and target == "segments" else COLUMNS)
    got = out.numpy()
    for reference in ("cpu", "wgpu_nofusion"):
        want = case(_inputs(reference)).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(got, want)


def test_a_producer_also_read_is_stored_by_a_reduction_by_columns(fused, target, layouts):
    v = _inputs(fused.name)
    p = (v["x"] * v["y"] + 1.0).exp()
    total = p.sum(0)
    assert dispatches(total) == (2 if target == "segments" else 1)
    assert dispatches(p) == 0  # stored by the first pass as it read it
    assert layouts[0] == COLUMNS
    w = {k: t.numpy().astype(np.float64) for k, t in _inputs("cpu").items()}
    want = np.exp(w["x"] * w["y"] + 1.0)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), want.sum(0), rtol=2e-5)


@pytest.fixture(params=FORMS)
def tiny(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A form of the backend with bindings of at most 4 KiB, 4 workgroups per grid dim and
    loops of a few dozen iterations: columns are cut into pieces to bind and into many
    segments, merged in several passes."""
    runtime = pyburn.device(request.param).backend.runtime
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffer_binding_size=4096, max_workgroups_per_dimension=4))
    monkeypatch.setattr(launch, "MAX_LOOP", 1100)
    return request.param


def test_columns_within_tiny_limits(tiny, target, layouts):
    rng = np.random.default_rng(6)
    a = rng.normal(size=(150, 300)).astype(np.float32)
    b = rng.normal(size=(4, 2, 3, 150)).astype(np.float32)
    w, wb = a.astype(np.float64), b.astype(np.float64)
    x, y = pyburn.tensor(a, device=tiny), pyburn.tensor(b, device=tiny)
    np.testing.assert_allclose(x.sum(0).numpy(), w.sum(0), rtol=2e-5, atol=1e-5)
    # a producer with a helper loop: a loop budget of one element per invocation
    np.testing.assert_allclose(((x * 0.5).erf() + 1.0).mean(0).numpy(),
                               (np.vectorize(math.erf)(w * 0.5) + 1.0).mean(0),
                               rtol=2e-5, atol=1e-5)
    np.testing.assert_array_equal(x.amax(0).numpy(), a.max(0))
    np.testing.assert_allclose(y.sum((0, 1)).numpy(), wb.sum((0, 1)), rtol=2e-5, atol=1e-5)
    np.testing.assert_array_equal(y.amin((0, 2)).numpy(), b.min((0, 2)))
    np.testing.assert_array_equal(y.argmax(1).numpy(), b.argmax(1))
    assert layouts.count(COLUMNS) >= 5


def test_rows_longer_than_a_binding_merge_in_one_pass(tiny, layouts):
    """Rows of kept points longer than a binding (the 4 KiB of `tiny`: 1,024 float32): the
    first pass is cut along the reduced dims as well as the kept ones, so the partial
    results do not fit a binding either; the merge reads each kept point's partial results
    one after the other, and is one pass (it used to cut them along the slots again, and
    recurse for ever)."""
    rng = np.random.default_rng(8)
    arrays = {"x": rng.normal(size=(5, 2000)), "y": rng.uniform(0.5, 2, size=(5, 2000)),
              "row": rng.uniform(1, 2, size=(1, 2000)), "z": rng.normal(size=(3, 4, 900))}
    v = {k: pyburn.tensor(a.astype(np.float32), device=tiny) for k, a in arrays.items()}
    w = {k: v[k].numpy().astype(np.float64) for k in arrays}
    np.testing.assert_allclose(v["x"].sum(0).numpy(), w["x"].sum(0), rtol=2e-5, atol=1e-5)
    assert len(layouts) == 2  # the pieces, and one merge
    # producers, a kept source, and an epilogue with an input, the anchor and a step of the
    # epilogue kept
    p = v["x"] * v["y"]
    s = p.sum(0, keepdim=True)
    mid = s * 0.5 + v["row"]
    out = mid.abs().sqrt()
    want = w["x"] * w["y"]
    want_mid = want.sum(0, keepdims=True) * 0.5 + w["row"]
    np.testing.assert_allclose(out.numpy(), np.sqrt(np.abs(want_mid)), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(mid.numpy(), want_mid, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(s.numpy(), want.sum(0, keepdims=True), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)
    a = arrays["x"].astype(np.float32)
    np.testing.assert_array_equal(v["x"].amax(0).numpy(), a.max(0))
    np.testing.assert_array_equal(v["x"].argmin(0).numpy(), a.argmin(0))
    np.testing.assert_array_equal((v["x"] > 1.5).any(0).numpy(), (a > 1.5).any(0))
    np.testing.assert_allclose((v["y"] * 0.1 + 0.95).prod(0).numpy(),
                               (w["y"] * 0.1 + 0.95).prod(0), rtol=1e-5)
    np.testing.assert_allclose(v["z"].mean((0, 1)).numpy(), w["z"].mean((0, 1)), rtol=2e-5,
                               atol=1e-5)
