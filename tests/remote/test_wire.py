"""The remote device's MessagePack codec (pyburn/remote/wire.py) against the msgpack package,
and what it does with frames that are not well formed."""

from __future__ import annotations

import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyburn
from pyburn.remote.wire import MAX_DEPTH, HandleId, WireError, pack, unpack

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                    st.floats(allow_nan=False), st.text(max_size=300), st.binary(max_size=300))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=20).map(tuple),
    st.dictionaries(st.text(max_size=10), inner, max_size=10)), max_leaves=60)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_values_cross_both_ways_as_msgpack_writes_them(value):
    assert msgpack.unpackb(pack(value), raw=False, use_list=False, strict_map_key=False) == value
    ours = unpack(msgpack.packb(value, use_bin_type=True))
    assert ours == value


def test_floats_are_float64_and_nan_survives():
    assert unpack(pack(0.1)) == 0.1 and pack(1.5)[0] == 0xCB
    assert math.isnan(unpack(pack(math.nan)))
    assert unpack(msgpack.packb(0.5, use_single_float=True)) == 0.5


def test_handles_and_dtypes_are_extension_types():
    frame = pack(("t", HandleId(2**40 + 3), pyburn.float16))
    assert unpack(frame) == ("t", HandleId(2**40 + 3), pyburn.float16)
    ext = msgpack.unpackb(frame, raw=False)[1]
    assert isinstance(ext, msgpack.ExtType) and ext.code == 1 and len(ext.data) == 8


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=64))
def test_random_frames_give_a_value_or_a_wire_error(frame):
    try:
        unpack(frame)
    except WireError:
        pass


@pytest.mark.parametrize("value", [("run", (("unary", ("exp",), (1,)),)), b"x" * 300,
                                   {"k": (1, 2.5, "s")}, "é" * 40])
def test_every_truncation_and_any_trailing_byte_is_refused(value):
    frame = pack(value)
    for end in range(len(frame)):
        with pytest.raises(WireError):
            unpack(frame[:end])
    with pytest.raises(WireError, match="after the frame"):
        unpack(frame + b"\x00")


@pytest.mark.parametrize(("frame", "message"), [
    (b"\xc1", "starts no value"),
    (b"\xd4\x07\x00", "unknown extension"),
    (b"\xc7\x03\x02abc", "unknown dtype"),
    (b"\xa2\xff\xfe", "not UTF-8"),
    (b"\xdd\xff\xff\xff\xff", "truncated"),
    (b"\x81\x90\x00", "map key"),
    (b"\x91" * (MAX_DEPTH + 2) + b"\x00", "deeper"),
])
def test_malformed_frames_name_what_is_wrong(frame, message):
    with pytest.raises(WireError, match=message):
        unpack(frame)


def test_what_cannot_be_sent_is_refused_before_anything_is():
    with pytest.raises(WireError, match="set values"):
        pack({1, 2})
    with pytest.raises(WireError, match="64 bits"):
        pack(2**64)


def test_a_text_frame_is_refused():
    with pytest.raises(WireError, match="text frame"):
        unpack("hello")
