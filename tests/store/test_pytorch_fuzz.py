"""Thousands of seeded random mutations of valid torch.save files (both formats): opening
each and reading every tensor gives tensors or a `pyburn.FormatError`; never another
exception, never a hang."""

from __future__ import annotations

import collections
import faulthandler
import io
import random
import sys

import pytest

import pyburn
from pyburn.store import load_pytorch

from .torch_files import rewrite_zip

torch = pytest.importorskip("torch")

# bytes a pickle is made of: opcodes, small counts, MARK/STOP, and extreme length bytes
PICKLE_JUNK = b"()tR.Qq]}hX\x80\x85\x86\x87\x88\x89\x8a\x8c\x93\x94\x95KJMNcbeus\x00\x01\x7f\xff"


def checkpoint():
    """A checkpoint with most of what files hold: dtypes, shared storages, views, a
    Parameter, nested containers, a state dict's metadata, and plain values."""
    torch.manual_seed(0)
    base = torch.randn(4, 6)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    return {"state_dict": model.state_dict(),
            "tensors": {"t": base.t(), "row": base[2], "half": base.half(),
                        "bf16": base[:2].bfloat16(), "long": torch.arange(5),
                        "u16": torch.arange(3).to(torch.uint16), "flag": torch.tensor([True]),
                        "p": torch.nn.Parameter(torch.ones(2))},
            "list": [base[:, 1:3], (torch.zeros(0),)], "epoch": 3, "lr": 1e-3,
            "meta": collections.OrderedDict(name="run", sizes=torch.Size([2, 3]))}


def _saved(zip_format: bool) -> bytes:
    buf = io.BytesIO()
    torch.save(checkpoint(), buf, _use_new_zipfile_serialization=zip_format)
    return buf.getvalue()


def _mutate(data: bytes, rng: random.Random, lo: int = 0, hi: int | None = None) -> bytes:
    """One random kind of damage, at a position in [lo, hi)."""
    hi = len(data) if hi is None else hi
    if not data or hi <= lo:
        return data[:-1]
    at = rng.randrange(lo, hi)
    kind = rng.randrange(6)
    if kind == 0:
        return data[:rng.randrange(len(data))]
    if kind == 1:
        return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1:]
    if kind == 2:
        return data[:at] + data[at + rng.randrange(1, 5):]
    if kind == 3:
        junk = bytes(rng.choice(PICKLE_JUNK) for _ in range(rng.randrange(1, 5)))
        return data[:at] + junk + data[at:]
    if kind == 4:  # a 4-byte field (a length, an offset, a count) set to an extreme
        value = rng.choice([0, 1, 0x7F, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, rng.randrange(2**32)])
        return data[:at] + value.to_bytes(4, "little") + data[at + 4:]
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]


def _pickle_mutation(data: bytes, rng: random.Random) -> bytes:
    """The zip file with its data.pkl damaged and the archive rebuilt around it (so the CRC
    check passes and the damage reaches the unpickler)."""
    def change(name: str, record: bytes) -> bytes | None:
        if name.endswith("data.pkl"):
            return _mutate(record, rng)
        if rng.random() < 0.05:  # now and then a storage record goes missing or shrinks
            return None if rng.random() < 0.5 else record[:-rng.randrange(1, 8)]
        return record

    return rewrite_zip(data, change)


def _open_and_read(data: bytes) -> str:
    store = load_pytorch(data, top_level_key="")
    for key in store:
        store[key].read()
        try:
            store[key].load("flex")
        except pyburn.DTypeError:
            # only where a mutated type name became one pyburn cannot hold: complex, or
            # uint64 with values of 2**63 and more
            if store[key].element.name not in ("U64", "C32", "C64", "C128"):
                raise
    return "loaded"


def test_fuzz_only_format_errors_escape():
    zip_data, legacy_data = _saved(True), _saved(False)
    assert _open_and_read(zip_data) == _open_and_read(legacy_data) == "loaded"
    legacy_pickles_end = legacy_data.index(b"]q\x00(X") + 200  # the storage key list
    zip_tail = zip_data.rfind(b"PK\x01\x02", 0, zip_data.rfind(b"PK\x05\x06")) - 400
    rng = random.Random(20261201)
    guard = sys.platform != "emscripten"  # Pyodide has no threads for the watchdog
    if guard:  # dumps every stack and exits if a load hangs
        faulthandler.dump_traceback_later(600, exit=True)
    outcomes = collections.Counter()
    try:
        for i in range(3000):
            choice = i % 4
            if choice == 0:
                damaged = _pickle_mutation(zip_data, rng)
            elif choice == 1:  # the archive's own structure: local headers, directory, end
                region = rng.choice([(0, 128), (zip_tail, len(zip_data)), (0, len(zip_data))])
                damaged = _mutate(zip_data, rng, *region)
            else:
                damaged = _mutate(legacy_data, rng, 0, legacy_pickles_end)
            if rng.random() < 0.2:
                damaged = _mutate(damaged, rng)
            try:
                outcomes[_open_and_read(damaged)] += 1
            except pyburn.FormatError:
                outcomes["FormatError"] += 1
            except Exception as exc:  # the failure this test looks for
                raise AssertionError(f"mutation {i} let {exc!r} escape") from exc
    finally:
        if guard:
            faulthandler.cancel_dump_traceback_later()
    assert outcomes["FormatError"] > 1500 and outcomes["loaded"] > 100, outcomes
