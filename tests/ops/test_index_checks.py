"""Range checks of index tensors (docs/api.md, "Indexing"): where the values are at hand (cpu,
flex) an index out of range raises at the call, before the op runs; on a GPU (wgpu) the
check is computed there without waiting for it, and the next read from that GPU raises."""

from __future__ import annotations

import asyncio

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.backends import wgpu

HOST = [d for d in pyburn.available_devices() if d.kind in ("cpu", "flex")]
GPUS = ["wgpu", "wgpu_nofusion"] if wgpu.unavailable_reason() is None else []
needs_gpu = pytest.mark.skipif(not GPUS, reason=f"no wgpu: {wgpu.unavailable_reason()}")


def _reads(device: pyburn.Device) -> int:
    return device.backend.runtime.stats.reads


@pytest.mark.parametrize("host", HOST, ids=[d.name for d in HOST])
def test_a_host_device_raises_at_the_call(host):
    x = pyburn.zeros(2, 3, device=host)
    with pytest.raises(pyburn.IndexOutOfRange, match="^gather: index 3 is out of range for "
                                                     "size 3$"):
        x.gather(1, pyburn.tensor([[0, 3], [1, 1]], device=host))
    with pytest.raises(pyburn.IndexOutOfRange, match="index_select: index -4 .* size 3$"):
        x.index_select(1, pyburn.tensor([-4], device=host))


@needs_gpu
@pytest.mark.parametrize("name", GPUS)
def test_a_gpu_raises_at_the_next_read_without_waiting_before(name):
    device = pyburn.device(name)
    x = pyburn.zeros(2, 3, device=device)
    index = pyburn.tensor([[0, 3], [1, 1]], device=device)
    before = _reads(device)
    x.gather(1, index)
    assert _reads(device) == before  # the check waited for nothing
    with pytest.raises(pyburn.IndexOutOfRange, match=r"^gather: index 3 is out of range for "
                       r"size 3 \(in gather\(\) at .*test_index_checks.py:\d+; checked on the "
                       r"GPU, reported at the next read\)$"):
        pyburn.ones(2, device=device).tolist()  # any read, of any tensor on that GPU
    assert pyburn.ones(2, device=device).tolist() == [1.0, 1.0]  # reported once


@needs_gpu
@pytest.mark.parametrize("name", GPUS)
def test_an_awaited_read_raises_too(name):
    device = pyburn.device(name)
    pyburn.zeros(4, device=device).index_select(0, pyburn.tensor([-5], device=device))

    async def read():
        return await pyburn.ones(1, device=device).item_async()

    with pytest.raises(pyburn.IndexOutOfRange, match="index_select: index -5 .* size 4"):
        asyncio.run(read())
    assert asyncio.run(read()) == 1.0


@needs_gpu
@pytest.mark.parametrize("name", GPUS)
def test_the_first_failed_check_is_reported_after_many_without_a_read(name):
    """More checks than are kept apart (their bounds are joined on the GPU): still in order."""
    device = pyburn.device(name)
    x = pyburn.arange(3, device=device)
    for k in range(150):
        index = {70: [7], 90: [9]}.get(k, [k % 3])
        x.index_select(0, pyburn.tensor(index, device=device))
    with pytest.raises(pyburn.IndexOutOfRange, match="index 7 is out of range for size 3"):
        x.tolist()
    assert x.index_select(0, pyburn.tensor([-1, 0], device=device)).tolist() == [2, 0]


@needs_gpu
@pytest.mark.parametrize("name", GPUS)
def test_a_training_step_reads_only_when_asked(name):
    """cross_entropy's gather and backward's scatter_add used to read the targets' bounds:
    four waits for the GPU per step. Now the step reads nothing, and reading the loss reads
    the bounds (once: backward's check of the same index is the forward's) and the loss."""
    device = pyburn.device(name)
    scores = pyburn.randn(8, 5, device=device.autodiff(), requires_grad=True)
    targets = pyburn.tensor([0, 1, 2, 3, 4, 0, 1, 2], device=scores.device)
    before = _reads(device)
    loss = F.cross_entropy(scores, targets)
    loss.backward()
    assert _reads(device) == before
    loss.item()
    assert _reads(device) == before + 2
    bad = pyburn.tensor([0, 1, 2, 3, 4, 5, 1, 2], device=scores.device)
    with pytest.raises(pyburn.IndexOutOfRange, match=r"index 5 .* size 5 \(in cross_entropy\(\)"):
        F.cross_entropy(scores, bad).item()
