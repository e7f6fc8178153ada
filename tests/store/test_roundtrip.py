"""save/load round trips on every device, the file's layout, metadata, and bad arguments."""

from __future__ import annotations

import io
import json
import struct

import pytest

import pyburn
from pyburn import store

from .files import SAMPLES, sample


def _same(a: pyburn.Tensor, b: pyburn.Tensor) -> None:
    """Equal shape, dtype, device and bytes (bit for bit: NaN, -0.0 and all)."""
    assert (a.shape, a.dtype, a.device) == (b.shape, b.dtype, b.device)
    assert a.to_bytes() == b.to_bytes()


@pytest.mark.parametrize("dtype", list(SAMPLES))
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (6, 1, 1)], ids=str)
def test_every_dtype_round_trips_bit_for_bit(device, dtype, shape, tmp_path):
    if pyburn.dtypes.as_dtype(dtype) not in device.backend.dtypes:
        pytest.skip(f"{device.name} has no {dtype}")
    original = sample(dtype, device, shape)
    path = tmp_path / "t.safetensors"
    store.save({"x": original}, path)
    _same(store.load(path, device=device)["x"], original)


def test_many_tensors_keep_their_order_and_values(device, tmp_path):
    tensors = {name: sample(dtype, device) for name, dtype in
               zip(["z.last", "a.first", "m", "é", "", "with space"], SAMPLES)
               if pyburn.dtypes.as_dtype(dtype) in device.backend.dtypes}
    path = tmp_path / "many.safetensors"
    store.save(tensors, path)
    loaded = store.load(path, device=device)
    assert list(loaded) == list(tensors)
    for name in tensors:
        _same(loaded[name], tensors[name])


def test_layout_is_aligned_and_padded(tmp_path):
    tensors = {"b": pyburn.tensor([True], device="flex"),
               "h": pyburn.tensor([1.0, 2.0, 3.0], dtype="float16", device="flex"),
               "d": pyburn.tensor([1.0], dtype="float64", device="flex"),
               "f": pyburn.tensor([1.0, 2.0, 3.0], device="flex")}
    path = tmp_path / "aligned.safetensors"
    store.save(tensors, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0 and raw[8:9] == b"{"
    text = raw[8:8 + n]
    assert text == text.rstrip(b" ") + b" " * (len(text) - len(text.rstrip(b" ")))
    header = json.loads(text)
    assert list(header) == ["__metadata__", "b", "h", "d", "f"]  # the caller's order
    for name, t in tensors.items():
        begin, end = header[name]["data_offsets"]
        assert begin % t.dtype.itemsize == 0 and end - begin == t.numel() * t.dtype.itemsize
        assert raw[8 + n + begin:8 + n + end] == t.to_bytes()
    assert max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__") \
        == len(raw) - 8 - n


def test_metadata_round_trips_with_the_version(tmp_path):
    path = tmp_path / "meta.safetensors"
    user = {"epochs": 3, "name": "mlp ✓", "sizes": [784, 128, 10], "nested": {"ok": None}}
    store.save({"w": pyburn.ones(2, device="flex")}, path, metadata=user)
    assert store.load_metadata(path) == user
    fields = store.read_header(path).metadata
    assert fields["pyburn.version"] == pyburn.__version__
    assert json.loads(fields["pyburn.user"]) == user


def test_no_metadata_reads_as_none(tmp_path):
    path = tmp_path / "plain.safetensors"
    store.save({"w": pyburn.ones(2, device="flex")}, path)
    assert store.load_metadata(path) is None
    assert "pyburn.user" not in store.read_header(path).metadata


def test_read_header_describes_the_tensors_without_loading_them(tmp_path):
    path = tmp_path / "h.safetensors"
    store.save({"w": pyburn.zeros(4, 5, device="flex"),
                "i": pyburn.tensor([1, 2], dtype="int64", device="flex")}, path)
    header = store.read_header(path)
    assert {n: (t.dtype, t.shape) for n, t in header.tensors.items()} == {
        "w": ("F32", (4, 5)), "i": ("I64", (2,))}
    assert header.data_start % 8 == 0


def test_module_like_objects_are_saved_through_state_dict(tmp_path):
    class Linear:
        def state_dict(self):
            return {"weight": pyburn.ones(2, 3, device="flex"),
                    "bias": pyburn.zeros(2, device="flex")}

    path = tmp_path / "module.safetensors"
    store.save(Linear(), path)
    assert {k: v.shape for k, v in store.load(path, device="flex").items()} == {
        "weight": (2, 3), "bias": (2,)}


def test_sources_other_than_paths(tmp_path):
    path = tmp_path / "src.safetensors"
    original = sample("float32", "flex")
    store.save({"x": original}, path)
    raw = path.read_bytes()
    for source in (raw, bytearray(raw), memoryview(raw), io.BytesIO(raw), str(path)):
        _same(store.load(source, device="flex")["x"], original)
    prefixed = io.BytesIO(b"junk" + raw)
    prefixed.seek(4)  # a file object is read from where it stands
    _same(store.load(prefixed, device="flex")["x"], original)


def test_loads_onto_the_device_asked_for(device, tmp_path):
    path = tmp_path / "dev.safetensors"
    store.save({"x": pyburn.ones(3, device="flex")}, path)
    loaded = store.load(path, device=device)["x"]
    assert loaded.device is device and loaded.tolist() == [1.0, 1.0, 1.0]
    assert store.load(path)["x"].device is pyburn.default_device()


def test_tensors_that_require_grad_are_saved_as_values(tmp_path):
    w = pyburn.ones(2, device=pyburn.device("flex").autodiff(), requires_grad=True)
    path = tmp_path / "grad.safetensors"
    store.save({"w": w * 3}, path)
    loaded = store.load(path, device="flex")["w"]
    assert loaded.tolist() == [3.0, 3.0] and not loaded.requires_grad


@pytest.mark.parametrize("bad, message", [
    (42, "module"),
    ({1: None}, "names are strings"),
    ({"w": [1.0, 2.0]}, "not a pyburn.Tensor"),
    ({"__metadata__": None}, "reserved"),
    ({"\udc80": None}, "not valid Unicode"),
])
def test_bad_things_to_save_are_refused(bad, message, tmp_path):
    if isinstance(bad, dict) and None in bad.values():
        bad = {k: pyburn.ones(1, device="flex") for k in bad}
    with pytest.raises(pyburn.ArgumentError, match=message):
        store.save(bad, tmp_path / "bad.safetensors")
    assert list(tmp_path.iterdir()) == []


def test_metadata_that_is_not_json_is_refused(tmp_path):
    for bad in ({"x": object()}, {"x": float("nan")}):
        with pytest.raises(pyburn.ArgumentError, match="JSON"):
            store.save({"w": pyburn.ones(1, device="flex")}, tmp_path / "m.st", metadata=bad)
    assert list(tmp_path.iterdir()) == []


def test_unsupported_sources_are_refused():
    with pytest.raises(pyburn.ArgumentError, match="path, bytes or a binary file"):
        store.load(12)
