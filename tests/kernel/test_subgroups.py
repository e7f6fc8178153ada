"""Subgroups on every device: the reductions give each invocation its subgroup's sum, max
or min, and the ids say which subgroup and lane it is, on the adapter's subgroups (wgpu
where the adapter has them: llvmpipe's are 8 wide) and on the emulated ones of
``ir.SUBGROUP_SIZE`` (the interpreter, numpy, and WGSL through shared memory)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest

import pyburn
from pyburn.backends import wgpu
from pyburn.kernel import KernelError, ir, wgsl_exec

from .sources import load

RNG = np.random.default_rng(3)


@contextlib.contextmanager
def _emulated(device: pyburn.Device) -> Iterator[None]:
    """`device`'s runtime without the ``subgroups`` feature, for the block."""
    runtime = wgsl_exec.gpu_of(device.plain().backend)[0].runtime
    kept = runtime.features
    runtime.features = kept - {"subgroups"}
    try:
        yield
    finally:
        runtime.features = kept


def _ways(device: pyburn.Device) -> list[contextlib.AbstractContextManager]:
    """The subgroups `device` runs kernels on: a wgpu device the adapter's (where it has
    them) and emulated ones; the others emulated ones only."""
    if device.kind != "wgpu":
        return [contextlib.nullcontext()]
    return [contextlib.nullcontext(), _emulated(device)]


PROBE = """
    def k(out: Tensor[T, 2], ids: Tensor[i32, 2], x: Tensor[T]):
        i = K.global_id(0)
        v = x[i]
        total = K.subgroup_add(v)
        top = K.subgroup_max(v)
        low = K.subgroup_min(v)
        out[i, 0] = total
        out[i, 1] = top
        out[i, 2] = low
        ids[i, 0] = K.subgroup_size()
        ids[i, 1] = K.subgroup_id()
        ids[i, 2] = K.subgroup_lane()
    """


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_reductions_and_ids_match_numpy(device, dtype):
    """Two workgroups of 20 (a last subgroup that is not full): every invocation gets what
    numpy computes over the invocations that the ids put in its subgroup."""
    kernel = load(PROBE.replace("Tensor[T", f"Tensor[{dtype}"))
    kind = np.float32 if dtype == "f32" else np.int32
    x = (RNG.integers(-50, 50, 40) * (0.25 if dtype == "f32" else 1)).astype(kind)
    for way in _ways(device):
        with way:
            out, ids = kernel[2, 20]((40, 3), (40, 3), pyburn.from_numpy(x, device=device))
        out, ids = out.numpy(), ids.numpy()
        size = int(ids[0, 0])
        assert size >= 1 and (ids[:, 0] == size).all()
        local = np.arange(40) % 20
        np.testing.assert_array_equal(ids[:, 1], local // size)
        np.testing.assert_array_equal(ids[:, 2], local % size)
        for i in range(40):
            first = i - local[i] % size  # the subgroup's first invocation
            mine = x[first:min(first + size, i - local[i] + 20)]
            assert out[i].tolist() == [mine.sum(), mine.max(), mine.min()]


def test_emulated_subgroups_are_of_the_documented_size(device):
    kernel = load(PROBE.replace("Tensor[T", "Tensor[f32"))
    with _ways(device)[-1]:
        _, ids = kernel[1, 64]((64, 3), (64, 3), pyburn.zeros(64, device=device))
    assert ids.numpy()[:, 0].tolist() == [ir.SUBGROUP_SIZE] * 64


def test_a_workgroup_sum_through_subgroups_does_not_depend_on_their_size(device):
    """The pattern of the RMSNorm example, in workgroups of 48 along y: the same sums on
    every device and subgroup size."""
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32, 2]):
            sums = K.shared(K.f32, 48)
            total = K.subgroup_add(x[K.group_id(0), K.local_id(1)])
            if K.subgroup_lane() == 0:
                sums[K.subgroup_id()] = total
            K.barrier()
            total = 0.0
            for k in range((48 + K.subgroup_size() - 1) // K.subgroup_size()):
                total += sums[k]
            if K.local_id(1) == 0:
                out[K.group_id(0)] = total
        """)
    x = RNG.integers(-8, 8, (3, 48)).astype(np.float32)
    for way in _ways(device):
        with way:
            got = kernel[3, (1, 48)]((3,), pyburn.from_numpy(x, device=device))
        assert got.tolist() == x.sum(axis=1).tolist()


def test_a_reduction_in_a_loop_gives_each_round_its_own_result(device):
    kernel = load("""
        def k(out: Tensor[i32]):
            acc = 0
            for r in range(3):
                s = K.subgroup_add(K.local_id(0) * (r + 1))
                acc += s
            out[K.local_id(0)] = acc
            out[16] = K.subgroup_size()
        """)
    lanes = np.arange(16)
    for way in _ways(device):
        with way:
            got = kernel[1, 16]((17,)).numpy()
        size = int(got[16])
        per = np.array([lanes[k - k % size:k - k % size + size].sum() for k in lanes])
        np.testing.assert_array_equal(got[:16], per * 6)


@pytest.mark.parametrize("checker", ["flex", "cpu"])  # a GPU cannot tell: it is undefined there
def test_a_reduction_is_reached_by_the_whole_workgroup(checker):
    kernel = load("""
        def k(out: Tensor[f32]):
            i = K.local_id(0)
            if i < 2:
                s = K.subgroup_add(1.0)
                out[i] = s
        """)
    with pytest.raises(KernelError, match="subgroup reduction that others did not"):
        kernel[1, 4](pyburn.zeros(4, device=checker))


@pytest.mark.parametrize("body, message", [
    ("out[0] = K.subgroup_add(1.0)", "a statement of its own"),
    ("s = K.subgroup_add(1.0) + 1.0", "a statement of its own"),
    ("s = K.subgroup_max(1 < 2)", "not a bool"),
    ("s = K.subgroup_min(1.0, 2.0)", "takes one value"),
    ("s = K.subgroup_lane(0)", "takes no arguments"),
])
def test_subgroup_misuse_points_at_the_line(body, message):
    kernel = load(f"""
        def k(out: Tensor[f32]):
            {body}
        """)
    with pytest.raises(KernelError, match=message) as caught:
        kernel[1, 1]((1,))
    assert body in str(caught.value)


@pytest.mark.skipif(wgpu.unavailable_reason() is not None, reason="no wgpu adapter")
def test_the_adapter_and_the_emulated_subgroups_are_two_shaders():
    device = pyburn.device("wgpu")
    kernel = load(PROBE.replace("Tensor[T", "Tensor[f32"))
    x = pyburn.zeros(8, device=device)
    before = wgsl_exec.STATS.generated + wgsl_exec.STATS.from_disk
    kernel[1, 8]((8, 3), (8, 3), x)
    with _emulated(device):
        kernel[1, 8]((8, 3), (8, 3), x)
    kernel[1, 8]((8, 3), (8, 3), x)
    runtime = wgsl_exec.gpu_of(device.backend)[0].runtime
    shaders = 2 if "subgroups" in runtime.features else 1
    assert wgsl_exec.STATS.generated + wgsl_exec.STATS.from_disk - before == shaders
