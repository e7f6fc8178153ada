"""Tensor data left in files until used: ONNX's external data files, and the large raw_data of
a model loaded from a path. Nothing is read before a tensor is used, then only its bytes."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import pyburn
from pyburn.onnx import proto
from pyburn.onnx.proto import tensor_proto

from .reference import array_of, assert_array, assert_model


@pytest.fixture
def reads(monkeypatch):
    """Every ``read_at(offset, n)`` made for tensor data, in order."""
    seen: list[tuple[str, int, int]] = []
    real_open = tensor_proto.open_source

    def open_source(path):
        source = real_open(path)
        real_read = source.read_at

        def read_at(offset, n, what):
            seen.append((os.path.basename(path), offset, n))
            return real_read(offset, n, what)

        source.read_at = read_at
        return source

    monkeypatch.setattr(tensor_proto, "open_source", open_source)
    return seen


def _external_tensor(location: str, offset: int, length: int | None) -> onnx.TensorProto:
    """A float32 tensor of two elements whose data is in `location`."""
    tensor = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[2],
                              data_location=onnx.TensorProto.EXTERNAL)
    entries = {"location": location, "offset": offset, "length": length}
    for key, value in entries.items():
        if value is not None:
            tensor.external_data.add(key=key, value=str(value))
    return tensor


def _model(*arrays: np.ndarray) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(a, f"w{i}") for i, a in enumerate(arrays)]
    node = helper.make_node("Concat", [t.name for t in inits], ["y"], axis=0)
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph([node], "g", [], [out], inits))


def test_external_data_is_read_lazily_one_window_at_a_time(tmp_path, reads):
    arrays = [np.arange(n, dtype=np.float32) * (i + 1) for i, n in enumerate((100, 3, 5000))]
    model = _model(*arrays)
    onnx.save_model(model, tmp_path / "m.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    ours = proto.load_model(tmp_path / "m.onnx")
    assert reads == []  # listing the model read no tensor data
    w2 = ours.graph.initializers["w2"]
    assert_array(array_of(w2), arrays[2], "w2")
    offset = int({e.key: e.value for e in onnx.load(str(tmp_path / "m.onnx"),
                                                     load_external_data=False)
                  .graph.initializer[2].external_data}["offset"])
    assert reads == [("weights.bin", offset, 20000)]  # just that tensor's bytes
    assert_model(ours, onnx.load(str(tmp_path / "m.onnx")))


def test_large_raw_data_of_a_model_file_is_read_on_first_use(tmp_path, reads):
    big = np.random.default_rng(0).normal(size=(300, 300)).astype(np.float32)
    small = np.float32([1, 2, 3])
    onnx.save_model(_model(big, small), tmp_path / "m.onnx")
    ours = proto.load_model(tmp_path / "m.onnx")
    assert reads == []
    assert ours.graph.initializers["w1"].raw is not None  # small: copied while parsing
    assert ours.graph.initializers["w0"].raw is None
    assert_array(array_of(ours.graph.initializers["w0"]), big, "w0")
    assert len(reads) == 1 and reads[0][2] == big.nbytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")
def test_no_file_stays_open(tmp_path):
    onnx.save_model(_model(np.zeros((200, 200), np.float32)), tmp_path / "m.onnx")
    model = proto.load_model(tmp_path / "m.onnx")
    targets = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}")]
    assert str(tmp_path / "m.onnx") not in targets
    os.replace(tmp_path / "m.onnx", tmp_path / "moved.onnx")  # and nothing holds it
    assert model.graph.name == "g"


def test_data_past_two_gigabytes(tmp_path, reads):
    """A sparse 3 GiB data file: the model opens at once and one tensor reads from its end."""
    offset = 3 * 2**30 - 4096
    with open(tmp_path / "huge.bin", "wb") as f:
        f.truncate(3 * 2**30)
        f.seek(offset)
        f.write(np.float32([1.5, -2.5]).tobytes())
    tensor = _external_tensor("huge.bin", offset, 8)
    model = helper.make_model(helper.make_graph([], "g", [], [], [tensor]))
    onnx.save_model(model, tmp_path / "m.onnx")
    ours = proto.load_model(tmp_path / "m.onnx")
    assert reads == []
    assert_array(array_of(ours.graph.initializers["w"]), np.float32([1.5, -2.5]), "w")
    assert reads == [("huge.bin", offset, 8)]


def _external_model(location: str, length: int | None = 8) -> bytes:
    tensor = _external_tensor(location, 0, length)
    return helper.make_model(helper.make_graph([], "g", [], [], [tensor])).SerializeToString()


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd", "a/../../x.bin",
                                      "..\\outside.bin", "C:\\weights.bin"])
def test_locations_outside_the_folder_are_refused_at_once(tmp_path, location):
    (tmp_path / "m.onnx").write_bytes(_external_model(location))
    with pytest.raises(pyburn.FormatError, match="outside the model's folder"):
        proto.load_model(tmp_path / "m.onnx")


def test_a_link_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(bytes(8))
    (tmp_path / "model").mkdir()
    os.symlink(tmp_path / "secret.bin", tmp_path / "model" / "w.bin")
    (tmp_path / "model" / "m.onnx").write_bytes(_external_model("w.bin"))
    w = proto.load_model(tmp_path / "model" / "m.onnx").graph.initializers["w"]
    with pytest.raises(pyburn.FormatError, match="leads outside the model's folder"):
        w.data()


def test_missing_or_short_external_files(tmp_path):
    (tmp_path / "m.onnx").write_bytes(_external_model("w.bin"))
    w = proto.load_model(tmp_path / "m.onnx").graph.initializers["w"]
    with pytest.raises(pyburn.FormatError, match="initializer 'w' of graph 'g': cannot open "
                                                 "its external data file 'w.bin'"):
        w.data()
    (tmp_path / "w.bin").write_bytes(bytes(4))
    with pytest.raises(pyburn.FormatError, match="runs past the end of the file"):
        proto.load_model(tmp_path / "m.onnx").graph.initializers["w"].data()
    (tmp_path / "m.onnx").write_bytes(_external_model("w.bin", length=12))
    with pytest.raises(pyburn.FormatError, match="external data is 12 bytes long, but its "
                                                 "type and shape take 8"):
        proto.load_model(tmp_path / "m.onnx")


def test_read_model_from_bytes_finds_external_data_through_base_dir(tmp_path):
    (tmp_path / "w.bin").write_bytes(np.float32([3, 4]).tobytes())
    data = _external_model("w.bin")
    w = proto.read_model(data).graph.initializers["w"]
    with pytest.raises(pyburn.FormatError, match="read from bytes with no base_dir"):
        w.data()
    w = proto.read_model(data, base_dir=tmp_path).graph.initializers["w"]
    assert_array(array_of(w), np.float32([3, 4]), "w")
