"""The protobuf wire format: varints, fixed-width values, length-delimited fields, unknown
fields of every wire type, canonical writing, and a `pyburn.FormatError` with the byte offset
and the field's path for every malformed input."""

from __future__ import annotations

import onnx
import pytest

import pyburn
from pyburn.onnx.proto import codec, wire

from .reference import MODELS, value_files

VALUES = [0, 1, 127, 128, 300, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64 - 1]


@pytest.mark.parametrize("value", VALUES)
def test_varints_round_trip(value):
    data = wire.varint_bytes(value)
    assert wire.read_varint(memoryview(data), 0, len(data)) == (value, len(data))


@pytest.mark.parametrize("value", [-1, -2, -(2**31), -(2**63), 0, 5, 2**62])
def test_negative_int64_take_ten_bytes_as_protobuf_writes_them(value):
    ours = b"".join(codec.encode("AttributeProto", {"i": value}).chunks())
    assert ours == onnx.AttributeProto(i=value).SerializeToString()
    assert codec.decode("AttributeProto", ours)["i"] == value
    assert len(wire.varint_bytes(value)) == (10 if value < 0 else len(ours) - 1)


def test_int32_fields_read_their_low_32_bits_signed():
    t = onnx.TensorProto(data_type=1, int32_data=[-1, -(2**31), 2**31 - 1])
    assert codec.decode("TensorProto", t.SerializeToString())["int32_data"] == \
        [-1, -(2**31), 2**31 - 1]


def test_every_node_suite_file_is_written_back_byte_for_byte():
    """The codec alone (no IR): decoding and encoding give protobuf's own bytes."""
    messages = {"tensor": "TensorProto", "sequence": "SequenceProto",
                "optional": "OptionalProto"}
    files = [(p, "ModelProto") for p in MODELS]
    files += [(p, messages[kind]) for p, kind in value_files()[::3]]
    for path, message in files:
        with open(path, "rb") as f:
            data = f.read()
        assert b"".join(codec.encode(message, codec.decode(message, data)).chunks()) == data


def test_unknown_fields_of_every_wire_type_are_skipped():
    unknown = (wire.varint_bytes(50 << 3 | 0) + wire.varint_bytes(2**63) +
               wire.varint_bytes(51 << 3 | 1) + bytes(8) +
               wire.varint_bytes(52 << 3 | 2) + b"\x03abc" +
               wire.varint_bytes(53 << 3 | 5) + bytes(4))
    known = onnx.NodeProto(input=["x"], op_type="Relu").SerializeToString()
    data = unknown + known + unknown
    reference = onnx.NodeProto()
    reference.ParseFromString(data)
    assert codec.decode("NodeProto", data) == {"input": ["x"], "op_type": "Relu"}
    assert list(reference.input) == ["x"]


def test_repeated_numbers_read_packed_or_not():
    unpacked = b"".join(wire.varint_bytes(1 << 3 | 0) + wire.varint_bytes(v) for v in (3, 4))
    packed = wire.varint_bytes(1 << 3 | 2) + b"\x02\x05\x06"
    floats = (wire.varint_bytes(4 << 3 | 5) + b"\x00\x00\x80\x3f" +
              wire.varint_bytes(4 << 3 | 2) + b"\x08" + b"\x00\x00\x00\x40" * 2)
    decoded = codec.decode("TensorProto", unpacked + packed + floats)
    assert decoded["dims"] == [3, 4, 5, 6]
    assert list(decoded["float_data"]) == [1.0, 2.0, 2.0]


def _fails(message: str, data: bytes, match: str) -> None:
    with pytest.raises(pyburn.FormatError, match=match):
        codec.decode(message, data)


def _field(number: int, payload: bytes) -> bytes:
    return wire.varint_bytes(number << 3 | 2) + wire.varint_bytes(len(payload)) + payload


def test_truncated_varint_names_offset_and_field():
    good = _field(1, b"x") + _field(4, b"Relu")
    bad = _field(4, b"Relu") + b"\x0a\x80"  # an input whose length never ends
    graph = _field(1, good) + _field(1, bad)
    data = b"\x08\x08" + _field(7, graph)
    at = len(data) - 1
    _fails("ModelProto", data, rf"truncated varint at byte {at} in NodeProto\.input "
                               rf"\(ModelProto\.graph\.node\[1\]\.input\)$")


@pytest.mark.parametrize("data, match", [
    (b"\x0a\x05ab", r"length 5 runs past the end of the enclosing message \(only 2 of those "
                    r"bytes are there\) at byte 1 in NodeProto\.input"),
    (b"\x08\x01", r"wire type 0 where string field 'input' has wire type 2 at byte 0 in "
                  r"NodeProto\.input"),
    (b"\x25\x00\x00\x00\x00", r"wire type 5 where string field 'op_type'"),
    (b"\x93\x03\x94\x03", r"group field \(wire type 3\): protobuf groups are obsolete and "
                          r"ONNX uses none at byte 0 in NodeProto$"),
    (b"\x94\x03", r"group field \(wire type 4\)"),
    (b"\x96\x03\x00", r"invalid wire type 6 at byte 0"),
    (b"\x97\x03", r"invalid wire type 7 at byte 0"),
    (b"\x02\x00", r"field number 0, which protobuf does not allow at byte 0"),
    (b"\x80" * 11, r"varint longer than 10 bytes at byte 0 in NodeProto"),
    (b"\xf8\x03" + b"\xff" * 10 + b"\x01", r"varint longer than 10 bytes at byte 2"),
    (b"\xfd\x03\x00\x00", r"truncated 32-bit value \(only 2 of its 4 bytes are there\) at "
                         r"byte 2"),
    (b"\xf9\x03\x00", r"truncated 64-bit value \(only 1 of its 8 bytes"),
    (b"\x80", r"truncated varint at byte 0"),
])
def test_malformed_nodes(data, match):
    _fails("NodeProto", data, match)


def test_wrong_wire_types_and_bad_packed_runs_in_tensors():
    _fails("TensorProto", b"\x20\x00", r"wire type 0 where float field 'float_data' has wire "
                                      r"type 5 at byte 0 in TensorProto\.float_data")
    _fails("TensorProto", b"\x22\x03\x00\x00\x00", r"packed 32-bit values take 3 bytes, not a "
                                                   r"multiple of 4 at byte 2 in "
                                                   r"TensorProto\.float_data")
    _fails("TensorProto", b"\x3a\x02\x80\x80", r"truncated varint at byte 2 in "
                                               r"TensorProto\.int64_data")
    _fails("TensorProto", b"\x11" + bytes(8), r"wire type 1 where int32 field 'data_type'")


def test_messages_nested_too_deeply_are_refused():
    # TypeProto.sequence_type.elem_type.sequence_type ... 200 levels deep
    inner = b""
    for _ in range(200):
        inner = b"\x0a" + wire.varint_bytes(len(inner)) + inner  # Sequence.elem_type
        inner = b"\x22" + wire.varint_bytes(len(inner)) + inner  # TypeProto.sequence_type
    _fails("TypeProto", inner, r"messages nest deeper than 100 levels")


def test_a_float32_past_its_range_is_written_as_infinity():
    data = b"".join(codec.encode("AttributeProto", {"f": 1e300, "floats": [-1e300]}).chunks())
    a = onnx.AttributeProto()
    a.ParseFromString(data)
    assert a.f == float("inf") and list(a.floats) == [float("-inf")]


def test_values_of_the_wrong_kind_are_refused_when_writing():
    with pytest.raises(pyburn.ArgumentError, match=r"cannot write NodeProto\.input"):
        codec.encode("NodeProto", {"input": [3]})
    with pytest.raises(pyburn.ArgumentError, match=r"cannot write GraphProto\.node: cannot "
                                                   r"write NodeProto\.op_type"):
        codec.encode("GraphProto", {"node": [{"op_type": 1.5}]})
