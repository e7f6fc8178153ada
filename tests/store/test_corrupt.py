"""Corrupt and malicious files: each problem raises `pyburn.FormatError` naming it, and
random damage to a valid file never lets any other exception escape, nor hangs."""

from __future__ import annotations

import faulthandler
import json
import random
import sys

import pytest

import pyburn
from pyburn import store

from .files import entry, raw_file

F32x4 = entry("F32", [2, 2], 0, 16)


def _fails(data: bytes, message: str) -> None:
    with pytest.raises(pyburn.FormatError, match=message):
        store.load(data, device="flex")


@pytest.mark.parametrize("data, message", [
    (b"", "truncated file: 0 bytes"),
    (b"\x10\x00\x00", "truncated file: 3 bytes"),
    (raw_file({"x": F32x4}, bytes(16), length=10**6), "runs past the end of the file"),
    (raw_file({"x": F32x4}, bytes(16), length=2**64 - 1), "over the format's limit"),
    (raw_file({"x": F32x4}, bytes(16), length=100_000_001), "over the format's limit"),
    (raw_file({"x": F32x4}, bytes(15)), "past the end of the data"),
    (raw_file({"x": F32x4}, bytes(16))[:-1], "past the end of the data"),
])
def test_truncation_and_header_length(data, message):
    _fails(data, message)


@pytest.mark.parametrize("header, message", [
    (b'{"x": "\xff"}', "not valid UTF-8 \\(file offset 15\\)"),
    (b'{"x": "\xc3"}', "not valid UTF-8"),
    (b'[{"x": 1}]', "does not start with '{'"),
    (b'  {}', "does not start with '{'"),
    (b"", "does not start with '{'"),
    (b'{"x": {"dtype": "F32",', "not valid JSON"),
    (b'{"x": 1} trailing', "not valid JSON"),
    (b'{"x": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 0]}}', "NaN"),
    (b'{"x": {"dtype": "F32", "shape": [Infinity], "data_offsets": [0, 0]}}', "Infinity"),
    (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "header nests deeper than 100"),
    (b'{"x": ' + b"[" * 100_000, "header nests deeper than 100"),
    (b'{"x": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 0]}}',
     "not valid JSON"),
])
def test_header_text(header, message):
    _fails(raw_file(header), message)


@pytest.mark.parametrize("header, message", [
    ({"x": entry("F33", [1], 0, 4)}, "tensor 'x': unknown dtype 'F33'; the format defines"),
    ({"x": entry("f32", [1], 0, 4)}, "unknown dtype 'f32'"),
    ({"x": entry(7, [1], 0, 4)}, "unknown dtype 7"),
    ({"x": entry("F32", [2, 2], 0, 12)}, "shape \\[2, 2\\] of F32 takes 16 bytes, but "
                                         "data_offsets \\[0, 12\\] hold 12"),
    ({"x": entry("BF16", [3], 0, 4)}, "takes 6 bytes"),
    ({"x": entry("F32", [2.0, 2], 0, 16)}, "shape \\[2.0, 2\\] is not a list of non-negative"),
    ({"x": entry("F32", ["2", 2], 0, 16)}, "shape"),
    ({"x": entry("F32", [-2, -2], 0, 16)}, "shape"),
    ({"x": entry("F32", [True, 4], 0, 16)}, "shape"),
    ({"x": entry("F32", "2x2", 0, 16)}, "shape"),
    ({"x": entry("F32", [10**300, 10**300], 0, 16)}, "needs more bytes than the data"),
    ({"x": entry("F4", [3], 0, 2)}, "does not fill whole bytes"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0]}}, "is not a pair"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16, 32]}}, "is not a pair"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0.0, 16]}}, "is not a pair"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": "0-16"}}, "is not a pair"),
    ({"x": entry("F32", [0], 16, 0)}, "end before they begin"),
    ({"x": entry("F32", [4], 0, 32)}, "run past the end of the data section \\(16 bytes\\)"),
    ({"x": {"dtype": "F32", "shape": [4]}}, "lacks data_offsets"),
    ({"x": {}}, "lacks dtype, shape, data_offsets"),
    ({"x": [1, 2]}, "tensor 'x': its header entry is an array, not an object"),
    ({"__metadata__": {"k": 1}, "x": F32x4}, "maps strings to strings, but 'k' holds a number"),
    ({"__metadata__": ["k"], "x": F32x4}, "__metadata__ is an array"),
])
def test_tensor_entries(header, message):
    _fails(raw_file(header, bytes(16)), message)


@pytest.mark.parametrize("header, size, message", [
    ({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}, 12,
     "tensors 'a' and 'b' overlap"),
    ({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 0, 8)}, 8, "overlap"),
    ({"a": entry("F32", [2], 0, 8), "z": entry("F32", [0], 4, 4)}, 8, "overlap"),
    ({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 12, 20)}, 20,
     "data bytes 8 to 12 belong to no tensor \\(before 'b'\\)"),
    ({"a": entry("F32", [2], 4, 12)}, 12, "data bytes 0 to 4 belong to no tensor"),
    ({"a": entry("F32", [2], 0, 8)}, 12, "data bytes 8 to 12 belong to no tensor; the format "
                                         "allows nothing after the last tensor"),
    ({}, 4, "data bytes 0 to 4"),
])
def test_coverage_of_the_data_section(header, size, message):
    _fails(raw_file(header, bytes(size)), message)


def test_duplicate_keys_anywhere_in_the_header():
    one = b'{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
    _fails(raw_file(b'{"x": ' + one + b', "x": ' + one + b"}", bytes(4)),
           "header repeats the key 'x'")
    twice = b'{"dtype": "F32", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
    _fails(raw_file(b'{"x": ' + twice + b"}", bytes(4)), "repeats the key 'dtype'")


def test_a_valid_edge_file_loads():
    """What the checks above must still let through: no tensors, zero-sized tensors sharing
    an offset, spaces after the JSON, and empty metadata."""
    assert store.load(raw_file({}), device="flex") == {}
    header = {"__metadata__": {}, "e": entry("F32", [0, 3], 8, 8), "a": entry("I32", [2], 0, 8),
              "z": entry("U8", [0], 8, 8)}
    loaded = store.load(raw_file(header, bytes(8)), device="flex")
    assert [(k, t.shape) for k, t in loaded.items()] == [("e", (0, 3)), ("a", (2,)),
                                                         ("z", (0,))]


def test_nesting_is_measured_outside_strings(tmp_path):
    """Deep nesting kills Pyodide's interpreter inside json.loads, so it is refused before;
    brackets in strings (a tensor named '[{"\\[{...') are no nesting."""
    name = '[{"\\' * 500
    header = {name: entry("U8", [1], 0, 1), "__metadata__": {"k": "]" * 300}}
    assert list(store.load(raw_file(header, b"\x01"), device="flex")) == [name]
    deep: object = [[[1]]]
    for _ in range(97):  # 100 levels: the deepest allowed
        deep = {"a": deep}
    store.save({}, tmp_path / "deep.safetensors", metadata=deep)
    assert store.load_metadata(tmp_path / "deep.safetensors") == deep
    with pytest.raises(pyburn.ArgumentError, match="deeper than 100"):
        store.save({}, tmp_path / "deeper.safetensors", metadata=[deep])
    hostile = raw_file({"__metadata__": {"pyburn.user": "[" * 50_000}})
    with pytest.raises(pyburn.FormatError, match="'pyburn.user' nests deeper than 100"):
        store.load_metadata(hostile)
    hostile = raw_file({"__metadata__": {"pyburn.checkpoint": "[" * 50_000}})
    with pytest.raises(pyburn.FormatError, match="checkpoint metadata nests deeper"):
        store.load_checkpoint(hostile, device="flex")


def test_long_names_are_cut_short_in_messages():
    name = "n" * 10_000
    with pytest.raises(pyburn.FormatError) as info:
        store.load(raw_file({name: entry("F32", [1], 0, 8)}, bytes(8)), device="flex")
    assert len(str(info.value)) < 500


def test_metadata_json_and_checkpoints_are_checked_too():
    bad_user = raw_file({"__metadata__": {"pyburn.user": "{oops"}})
    with pytest.raises(pyburn.FormatError, match="'pyburn.user' is not valid JSON"):
        store.load_metadata(bad_user)
    with pytest.raises(pyburn.FormatError, match="not a pyburn checkpoint"):
        store.load_checkpoint(raw_file({}), device="flex")


def _valid_file(tmp_path) -> bytes:
    tensors = {"w": pyburn.tensor([[0.5, -1.0], [2.0, 3.0]], device="flex"),
               "b": pyburn.tensor([1, 2, 3], dtype="int64", device="flex"),
               "h": pyburn.tensor([1.0, 2.0], dtype="float16", device="flex"),
               "m": pyburn.tensor([True, False], device="flex"),
               "u": pyburn.tensor([1, 255], dtype="uint8", device="flex"),
               "s": pyburn.tensor(7, device="flex")}
    path = tmp_path / "valid.safetensors"
    store.save_checkpoint(path, model=tensors, optimizer=_Optimizer(tensors), epoch=2)
    return path.read_bytes()


class _Optimizer:
    def __init__(self, tensors):
        self.tensors = tensors

    def state_dict(self):
        return {"state": {0: {"m": self.tensors["w"], "step": 3}},
                "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]}


def _mutate(data: bytes, rng: random.Random, header_end: int) -> bytes:
    """One random kind of damage; most of it in the header, where the parsing is."""
    if not data:
        return data
    kind = rng.randrange(6)
    region = min(header_end, len(data)) if rng.random() < 0.9 else len(data)
    at = rng.randrange(region)
    digits = [i for i in range(8, region) if data[i:i + 1].isdigit()]
    if kind == 0:  # truncate
        return data[:rng.randrange(len(data))]
    if kind == 1 or kind == 5 and not digits:  # flip bits of one byte
        return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1:]
    if kind == 2:  # drop bytes
        return data[:at] + data[at + rng.randrange(1, 4):]
    if kind == 3:  # insert bytes, often JSON punctuation
        junk = bytes(rng.choice(b'{}[]",:0123456789 -eE.tfn\\\x00\xff') for _ in range(3))
        return data[:at] + junk[:rng.randrange(1, 4)] + data[at:]
    if kind == 4:  # overwrite the header length
        return rng.randrange(2**rng.choice((4, 8, 16, 32, 64))).to_bytes(8, "little") + data[8:]
    at = rng.choice(digits)  # change a digit: of shapes and offsets, most often
    return data[:at] + str(rng.randrange(10)).encode() + data[at + 1:]


def _random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return rng.choice([0, 1, 2, 3, 4, 8, 16, 24, 2**31, 2**63, 2**64 + 1, -1, 10**30])
    if kind == 1:
        return rng.choice([0.0, 1.5, -0.0, 1e300])
    if kind == 2:
        return rng.choice(["F32", "I64", "U64", "BF16", "F4", "C64", "", "dtype", "shape"])
    if kind == 3:
        return rng.choice([None, True, False])
    if kind in (4, 5):
        return [rng.randrange(-2, 40) for _ in range(rng.randrange(4))]
    if kind in (6, 7):
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["dtype", "shape", "data_offsets", "x"]): _random_json(rng, depth + 1)
            for _ in range(rng.randrange(3))}


def _mutate_structure(data: bytes, rng: random.Random) -> bytes:
    """Valid JSON with a wrong value: a field, an entry or the metadata replaced, removed or
    added, so that every check after the JSON parser gets exercised."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    name = rng.choice(list(header))
    target = header[name] if isinstance(header[name], dict) and rng.random() < 0.8 else header
    keys = list(target) or ["x"]
    action = rng.randrange(3)
    if action == 0:
        target[rng.choice(keys)] = _random_json(rng)
    elif action == 1:
        target.pop(rng.choice(keys), None)
    else:
        target[rng.choice(keys + ["extra", "__metadata__"])] = _random_json(rng)
    return raw_file(json.dumps(header).encode(), data[8 + n:])


def test_fuzz_only_format_or_dtype_errors_escape(tmp_path):
    """Thousands of seeded random mutations of a valid checkpoint file: loading each gives
    tensors or a FormatError, or a DTypeError where a mutated type name became one pyburn
    cannot hold (C64, or U64 with a high bit set); never another exception, never a hang."""
    data = _valid_file(tmp_path)
    header_end = 8 + int.from_bytes(data[:8], "little")
    rng = random.Random(20261130)
    guard = sys.platform != "emscripten"  # Pyodide has no threads for the watchdog
    if guard:  # dumps every stack and exits if a load hangs
        faulthandler.dump_traceback_later(600, exit=True)
    outcomes = {"loaded": 0, "FormatError": 0, "DTypeError": 0}
    try:
        for i in range(3000):
            if i % 3 == 0:
                damaged = _mutate_structure(data, rng)
            else:
                damaged = _mutate(data, rng, header_end)
            if rng.random() < 0.2:
                damaged = _mutate(damaged, rng, header_end)
            for read in (lambda d: store.load(d, device="flex"), store.load_metadata,
                         lambda d: store.load_checkpoint(d, device="flex")):
                try:
                    read(damaged)
                    outcomes["loaded"] += 1
                except (pyburn.FormatError, pyburn.DTypeError) as exc:
                    outcomes[type(exc).__name__] += 1
                except Exception as exc:  # the failure this test looks for
                    raise AssertionError(f"mutation {i} let {exc!r} escape") from exc
    finally:
        if guard:
            faulthandler.cancel_dump_traceback_later()
    assert outcomes["FormatError"] > 3000 and outcomes["loaded"] > 100
