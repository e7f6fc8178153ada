"""DLPack round trips with numpy and PyTorch (pyburn/dlpack.py): zero-copy on the cpu device,
checked by writing through one side and reading the other; a copy on every other device."""

from __future__ import annotations

import pytest

import pyburn

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

#: the two consumers, each as its from_dlpack
CONSUMERS = {"numpy": np.from_dlpack, "torch": torch.from_dlpack}


def _shares(device: pyburn.Device) -> bool:
    return device.backend.host_array(pyburn.zeros(1, device=device)._h) is not None


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
def test_export_gives_the_values_and_dtype(device, consumer):
    x = pyburn.tensor([[1.5, -2.0], [3.0, 4.25]], device=device)
    for t in (x, x.int(), x > 2, x.T):
        out = CONSUMERS[consumer](t)
        assert np.asarray(out).tolist() == t.tolist()
        assert str(out.dtype).removeprefix("torch.") == t.dtype.name


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
def test_cpu_export_shares_memory_both_ways(consumer):
    # made from Python values, so its handle wraps read-only bytes: the first export copies
    # it once, and from then on the tensor and every export share one buffer
    t = pyburn.tensor([1.0, 2.0, 3.0], device="cpu")
    first, second = CONSUMERS[consumer](t), CONSUMERS[consumer](t)
    first[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0] and second[0] == 10.0
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("view", ["transpose", "slice", "flip", "broadcast"])
def test_cpu_views_export_what_they_show(view):
    base = pyburn.arange(6, device="cpu").reshape(2, 3) * 1  # a computed, writable handle
    t = {"transpose": base.T, "slice": base[:, 1:], "flip": pyburn.flip(base, 1),
         "broadcast": pyburn.broadcast_to(base[:1], (3, 3))}[view]
    out = torch.from_dlpack(t)  # PyTorch aborts on negative strides: flip must be copied
    assert out.tolist() == t.tolist()
    out[0, 0] = 99
    assert t.tolist()[0][0] == 99  # the copy, if one was made, is what the tensor holds now


def test_pyburn_in_place_ops_rebind_instead_of_writing():
    t = pyburn.tensor([1.0, 2.0], device="cpu")
    shared = np.from_dlpack(t)
    t.add_(1)
    assert t.tolist() == [2.0, 3.0] and shared.tolist() == [1.0, 2.0]


def test_copy_false_refuses_a_copy(device):
    t = pyburn.tensor([1.0, 2.0], device=device)
    if _shares(device):
        np.from_dlpack(t)  # made shareable once
        assert np.from_dlpack(t, copy=False).tolist() == [1.0, 2.0]
        return
    with pytest.raises(BufferError, match="not in host memory"):
        t.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="cannot share host memory"):
        pyburn.from_dlpack(np.zeros(2, np.float32), device=device, copy=False)


@pytest.mark.parametrize("producer", ["numpy", "torch"])
def test_import_shares_on_cpu_and_copies_elsewhere(device, producer):
    source = (np.arange(4, dtype=np.float32) if producer == "numpy"
              else torch.arange(4, dtype=torch.float32))
    t = pyburn.from_dlpack(source, device=device)
    source[0] = 9.0
    assert t.tolist()[0] == (9.0 if _shares(device) else 0.0)
    assert pyburn.from_dlpack(source, device=device, copy=True).tolist()[0] == 9.0


def test_import_defaults_to_cpu_and_keeps_dtypes():
    assert pyburn.from_dlpack(np.zeros(2, np.int64)).device == pyburn.device("cpu")
    assert pyburn.from_dlpack(torch.zeros(2, dtype=torch.bool)).dtype is pyburn.bool_
    with pytest.raises(pyburn.DTypeError, match="int16"):
        pyburn.from_dlpack(torch.zeros(2, dtype=torch.int16))


def test_a_stream_or_another_device_is_refused():
    t = pyburn.tensor([1.0], device="cpu")
    with pytest.raises(BufferError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="host memory"):
        t.__dlpack__(dl_device=(2, 0))
