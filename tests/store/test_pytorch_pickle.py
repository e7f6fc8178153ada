"""The restricted pickle machine against CPython's own pickler: plain data pickled with every
protocol reads back equal, shared and self-referencing containers included; anything that
needs a global outside the allow-list is refused, naming it."""

from __future__ import annotations

import collections
import math
import pickle
import random

import pytest

import pyburn
from pyburn.store.pytorch.allowlist import PickledDict, find_global
from pyburn.store.pytorch.pickle_reader import MAX_NESTING, Unpickler

from .torch_files import call, glob, num, pkl, text, tup

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def _no_storages(pid):
    raise pyburn.FormatError(f"no storage {pid!r}")


def run(data: bytes):
    """What the machine builds from `data` with the PyTorch allow-list."""
    return Unpickler(data, find_global=find_global, persistent_load=_no_storages,
                     origin="a test pickle", base=0).load()[0]


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(13 if depth < 4 else 7)
    if kind == 0:
        return rng.choice([0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31, 2**63, -2**70,
                           10**40])
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-308, math.inf, -math.inf])
    if kind == 2:
        return rng.choice(["", "a", "naïve", "雪", "\n\\'\"", "x" * 300, "\ud800"[:0] + "é"])
    if kind == 3:
        return rng.choice([b"", b"\x00\xff", bytes(range(256)), b"b" * 70000])
    if kind == 4:
        return rng.choice([None, True, False])
    if kind == 5:
        return bytearray(rng.randbytes(rng.randrange(5)))
    if kind == 6:
        return rng.choice([frozenset(), frozenset({1, "a"}), (1, (2, (3,)))])
    if kind in (7, 8):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 9:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(5)))
    if kind == 10:
        return {rng.choice(["k", "key", 1, 2.5, (1, 2), None]): _random_value(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    if kind == 11:
        return {rng.randrange(100) for _ in range(rng.randrange(4))}
    return collections.OrderedDict((str(i), _random_value(rng, depth + 1)) for i in range(3))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_plain_data_round_trips_with_every_protocol(protocol):
    rng = random.Random(protocol)
    for _ in range(200):
        value = _random_value(rng)
        assert run(pickle.dumps(value, protocol=protocol)) == value


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shared_and_recursive_containers(protocol):
    shared = [1, 2]
    loop: list = ["x"]
    loop.append(loop)
    got = run(pickle.dumps({"a": shared, "b": shared, "loop": loop}, protocol=protocol))
    assert got["a"] is got["b"] and got["a"] == [1, 2]
    assert got["loop"][1] is got["loop"]


def test_ordered_dict_keeps_order_and_attributes():
    state = collections.OrderedDict([("z", 1), ("a", 2)])
    state._metadata = {"": {"version": 1}}
    got = run(pickle.dumps(state, protocol=2))
    assert isinstance(got, PickledDict) and list(got) == ["z", "a"]
    assert got.attributes == {"_metadata": {"": {"version": 1}}}


def test_nan_floats_read_as_nan():
    assert math.isnan(run(pickle.dumps(float("nan"), protocol=0)))
    assert math.isnan(run(pickle.dumps(float("nan"), protocol=2)))


@pytest.mark.parametrize("value, name", [
    (collections.Counter("ab"), "collections.Counter"),
    (collections.deque([1]), "collections.deque"),
    (print, "(builtins|__builtin__).print"),
    (pickle.loads, "_?pickle.loads"),
    (range(3), "(builtins.range|__builtin__.xrange)"),
])
def test_globals_outside_the_allow_list_are_refused(value, name):
    for protocol in PROTOCOLS:
        with pytest.raises(pyburn.FormatError, match=f"global {name}, which is not on"):
            run(pickle.dumps(value, protocol=protocol))


def test_tuples_may_nest_only_so_deep():
    deep = b"".join([b"("] * (MAX_NESTING - 1) + [num(1)] + [b"t"] * (MAX_NESTING - 1))
    assert run(pkl(deep)) is not None
    too_deep = b"".join([b"("] * 10_000 + [num(1)] + [b"t"] * 10_000)
    with pytest.raises(pyburn.FormatError, match="nest deeper than 100"):
        run(pkl(too_deep))
    with pytest.raises(pyburn.FormatError, match="nest deeper"):  # TUPLE1, one by one
        run(pkl(num(1) + b"\x85" * 10_000))


def test_deep_lists_and_dicts_build_without_recursion():
    data = pkl(b"]" + b"]q\x00" * 0 + b"".join([b"(]"] * 50_000) + b"e" * 50_000)
    got = run(data)
    depth = 0
    while got:
        got, depth = got[0], depth + 1
    assert depth == 50_000


@pytest.mark.parametrize("data, message", [
    (b"", "ends before its STOP"),
    (pkl(b"X\xff\x00\x00\x00abc"), "ends in the middle"),
    (b"\x80\x02\xfe.", "unknown pickle opcode 0xfe"),
    (b"\x80\x07N.", "unsupported pickle protocol 7"),
    (pkl(b"0"), "stack underflow"),
    (pkl(b"1"), "closes a MARK it never opened"),
    (pkl(b"h\x05"), "memo entry 5, which it never stored"),
    (pkl(b"}]Ns"), "TypeError: .*unhashable type: 'list'"),
    (pkl(b"I12x\n"), "ValueError"),
    (pkl(b"L" + b"9" * 5000 + b"\n"), "ValueError"),
    (pkl(b"\x82\x01"), "extension registry"),
    (pkl(b"\x97"), "out-of-band buffers"),
    (pkl(num(1) + num(2) + b"a"), "APPEND\\(S\\) adds to a int, not a list"),
    (pkl(b"]" + num(1) + num(2) + b"s"), "SETITEM\\(S\\) stores into a list"),
    (pkl(b"}(" + num(1) + b"u"), "odd number"),
    (pkl(b"\x8b\xff\xff\xff\xff"), "negative length"),
    (pkl(b"\x95" + (10**9).to_bytes(8, "little")), "frame of 1000000000 bytes"),
    (pkl(b"S'abc\n"), "not quoted"),
])
def test_malformed_pickles(data, message):
    with pytest.raises(pyburn.FormatError, match=message):
        run(data)


def test_messages_name_the_opcode_and_offset():
    with pytest.raises(pyburn.FormatError, match="opcode SETITEM at file offset 5"):
        run(pkl(b"}]Ns"))


def test_allowed_names_are_not_all_callable():
    with pytest.raises(pyburn.FormatError, match="torch.float32 is allowed as a name, but not"):
        run(pkl(call(glob("torch", "float32"))))
    with pytest.raises(pyburn.FormatError, match="REDUCE calls a str"):
        run(pkl(text("os.system") + tup() + b"R"))
    with pytest.raises(pyburn.FormatError, match="not a tuple"):
        run(pkl(glob("builtins", "set") + b"]R"))


@pytest.mark.parametrize("data, message", [
    (pkl(call(glob("_codecs", "encode"), text("x"), text("rot13"))), "latin-1 text into bytes"),
    (pkl(call(glob("builtins", "bytearray"), num(10**12))), "bytearray takes bytes"),
    (pkl(call(glob("torch", "Size"), tup(text("a")))), "torch.Size takes a tuple of integers"),
    (pkl(call(glob("torch", "device"), num(1))), "torch.device takes a string"),
    (pkl(call(glob("builtins", "set"), num(3))), "set takes a list or tuple"),
    (pkl(call(glob("builtins", "slice"), text("a"))), "slice takes"),
    (pkl(call(glob("collections", "OrderedDict"), num(1), num(2))), "one list of pairs"),
    (pkl(call(glob("torch._tensor", "_rebuild_from_type_v2"), glob("builtins", "set"),
              glob("torch", "Tensor"), tup(), b"N")), "_rebuild_from_type_v2 calls builtins.set"),
    (pkl(call(glob("torch._utils", "_rebuild_parameter"), num(1), b"\x88", b"}")),
     "a parameter wraps a int"),
])
def test_allowed_callables_check_their_arguments(data, message):
    with pytest.raises(pyburn.FormatError, match=message):
        run(data)


def test_allowed_builtins_build_what_python_would():
    assert run(pkl(call(glob("_codecs", "encode"), text("\xff\x00"), text("latin1")))) \
        == b"\xff\x00"
    assert run(pkl(call(glob("__builtin__", "set"), b"](" + num(1) + num(1) + b"e"))) == {1}
    assert run(pkl(call(glob("torch", "Size"), tup(num(2), num(3))))) == (2, 3)
    assert run(pkl(call(glob("torch", "device"), text("cuda"), num(1)))) == "cuda:1"
    assert run(pkl(call(glob("builtins", "slice"), num(1), b"N"))) == slice(1, None)
    assert run(pkl(call(glob("builtins", "complex"), num(1), num(2)))) == 1 + 2j
