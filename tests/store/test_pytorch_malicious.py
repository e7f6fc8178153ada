"""Hostile and broken PyTorch files, built by hand (no torch needed): each raises
`pyburn.FormatError` saying what is wrong, and nothing a pickle asks for ever runs."""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable

import pytest

import pyburn
from pyburn.store import load_pytorch

from .torch_files import (
    FALSE,
    NONE,
    call,
    dct,
    glob,
    legacy_file,
    num,
    ordered_dict,
    pkl,
    storage,
    tensor,
    text,
    tup,
    zip64_file,
    zip_file,
)

ONE_FLOAT = b"\x00\x00\x80?"  # 1.0


def _refused(data: bytes, message: str) -> None:
    with pytest.raises(pyburn.FormatError, match=message):
        store = load_pytorch(data)
        for key in store:  # what is refused may only show when a tensor is read
            store[key].read()


def _both(body: Callable[[bool], bytes] | bytes,
          records: dict[str, bytes] | None = None) -> list[bytes]:
    """The pickle `body` in a zip file and in a legacy file (storages of float32 values);
    a callable body is given whether the file is legacy (its storage IDs differ)."""
    make = body if callable(body) else (lambda legacy: body)
    records = records or {}
    legacy_storages = {k: (len(v) // 4, v) for k, v in records.items()}
    return [zip_file(pkl(make(False)), records), legacy_file(pkl(make(True)), legacy_storages)]


def _weights(shape: tuple[int, ...] = (4,), strides: tuple[int, ...] = (1,), offset: int = 0,
             numel: int = 4) -> Callable[[bool], bytes]:
    """A body {"w": a float32 view of storage "0"} for `_both`."""
    return lambda legacy: dct((text("w"), tensor(storage("FloatStorage", "0", numel,
                                                         legacy=legacy), offset, shape,
                                                 strides)))


def _hostile(tmp_path) -> list[tuple[bytes, str]]:
    """Pickles that would run a command under pickle.load (creating a file), each with the
    global the refusal must name."""
    marker = str(tmp_path / "pwned")
    command = text(f"touch {marker}")
    return [
        (call(glob("os", "system"), command), "os.system"),
        (call(glob("posix", "system"), command), "posix.system"),
        (call(glob("builtins", "eval"), text(f"open({marker!r}, 'w')")), "builtins.eval"),
        (call(glob("builtins", "exec"), text("import os")), "builtins.exec"),
        (call(glob("subprocess", "check_call"), tup(text("touch"), text(marker))),
         "subprocess.check_call"),
        # STACK_GLOBAL (protocol 4): module and name pushed as strings
        (b"\x8c\x02os\x8c\x06system\x93" + tup(command) + b"R", "os.system"),
        # INST: class named in the opcode, arguments after a MARK
        (b"(" + command + b"ios\nsystem\n", "os.system"),
        # OBJ: the class is the first item after the MARK
        (b"(" + glob("os", "system") + command + b"o", "os.system"),
        # NEWOBJ and NEWOBJ_EX: cls.__new__(cls, *args)
        (glob("os", "system") + tup(command) + b"\x81", "os.system"),
        (glob("os", "system") + tup(command) + b"}\x92", "os.system"),
        # a tensor whose storage class is not a storage class
        (tensor(tup(text("storage"), glob("os", "system"), text("0"), text("cpu"), num(1))
                + b"Q", 0, (1,), (1,)), "os.system"),
        # inside an allowed container, deep in a checkpoint
        (dct((text("state_dict"), dct((text("w"), call(glob("os", "system"), command))))),
         "os.system"),
        # a pickled model object
        (call(glob("torch.nn.modules.linear", "Linear")), "torch.nn.modules.linear.Linear.*"
                                                          "holds a pickled model object"),
        (call(glob("__main__", "Net")), "__main__.Net"),
        (glob("numpy.core.multiarray", "_reconstruct"), "numpy.core.multiarray._reconstruct"),
        (call(glob("copyreg", "_reconstructor"), glob("os", "system")), "copyreg._reconstructor"),
        (call(glob("builtins", "getattr"), glob("builtins", "set"), text("x")),
         "builtins.getattr"),
    ]


def test_hostile_globals_are_refused_and_nothing_runs(tmp_path):
    for body, name in _hostile(tmp_path):
        for data in _both(body):
            _refused(data, f"global {name}")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("pid, message", [
    (tup(text("module"), glob("collections", "OrderedDict"), text("x.py"), text("src")),
     "pickled nn.Module with its source code"),
    (tup(text("tensor"), text("0")), "unknown persistent ID kind 'tensor'"),
    (tup(text("storage")), "has 1 fields, not 5"),
    (text("storage"), "a persistent ID is a str, not a tuple"),
    (tup(text("storage"), glob("torch", "FloatStorage"), num(0), text("cpu"), num(1)),
     "needs a key, a location and a size"),
    (tup(text("storage"), glob("torch", "FloatStorage"), text("0"), text("cpu"), num(-1)),
     "needs a key, a location and a size"),
    (tup(text("storage"), glob("torch", "Tensor"), text("0"), text("cpu"), num(1)),
     "a storage's type is torch.Tensor, not a torch dtype or storage class"),
])
def test_bad_persistent_ids(pid, message):
    _refused(zip_file(pkl(pid + b"Q"), {"0": ONE_FLOAT}), message)


@pytest.mark.parametrize("body, message", [
    (b"]}b", "BUILD gives state to a list, which takes none"),
    (b"}}b", "BUILD gives state to a dict"),
    (tensor(storage("FloatStorage", "0", 1), 0, (1,), (1,)) + b"}b",
     "BUILD gives state to a PytorchTensor"),
    (glob("os", "system") + b"}b", "global os.system"),
    (ordered_dict() + num(3) + b"b", "an OrderedDict's state is a dict of attributes"),
    (ordered_dict() + b"}(" + num(1) + num(2) + b"ub", "state is a dict of attributes"),
])
def test_build_only_on_allowed_objects(body, message):
    _refused(zip_file(pkl(body), {"0": ONE_FLOAT}), message)


def test_a_valid_hand_built_file_loads():
    """The builders make files pyburn reads (so the refusals above are about what they
    change); torch.load reads them too (checked in test_pytorch_formats)."""
    for data in _both(_weights((2,), numel=2), {"0": ONE_FLOAT * 2}):
        assert load_pytorch(data, device="flex").tensor("w").tolist() == [1.0, 1.0]
    zip64 = zip64_file({"archive/data.pkl": pkl(_weights((2,), numel=2)(False)),
                        "archive/data/0": ONE_FLOAT * 2})
    assert load_pytorch(zip64, device="flex").tensor("w").tolist() == [1.0, 1.0]


@pytest.mark.parametrize("offset, shape, strides, message", [
    (3, (2,), (1,), "reaches byte 20 of storage '0', which holds 16"),
    (0, (2, 3), (3, 1), "reaches byte 24"),
    (0, (5,), (1,), "reaches byte 20"),
    (0, (10**9,), (0,), "repeats 1 stored elements more than 1032 times"),
    (0, (2,), (-1,), "stride \\(-1,\\) is not a tuple of non-negative"),
    (-1, (1,), (1,), "offset -1 is not a non-negative integer"),
    (0, (2, 2), (1,), "differ in length"),
    (0, (10**30,), (10**30,), "reaches byte"),
])
def test_views_past_their_storage(offset, shape, strides, message):
    for data in _both(_weights(shape, strides, offset), {"0": ONE_FLOAT * 4}):
        _refused(data, message)


def test_storages_that_do_not_match_their_records():
    body, legacy_body = pkl(_weights()(False)), pkl(_weights()(True))
    _refused(zip_file(body, {}), "no record 'archive/data/0'")
    _refused(zip_file(body, {"0": ONE_FLOAT * 3}), "declares 16 bytes, but its record holds 12")
    legacy = legacy_file(legacy_body, {"0": (3, ONE_FLOAT * 3)})
    _refused(legacy, "holds 3 elements .* but the pickle declares 4")
    _refused(legacy_file(legacy_body, {"0": (4, ONE_FLOAT * 4)})[:-1], "runs past the end of "
                                                                        "the file")
    _refused(legacy_file(legacy_body, {}), "refers to storage '0', which the file does not "
                                           "store")
    _refused(legacy_file(legacy_body, {"0": (4, ONE_FLOAT * 4), "1": (1, ONE_FLOAT)}),
             "storage '1' is stored but the pickle never declares it")
    _refused(legacy_file(body, {"0": (4, ONE_FLOAT * 4)}), "has 5 fields, not 6")
    twice = dct((text("a"), tensor(storage("FloatStorage", "0", 4), 0, (4,), (1,))),
                (text("b"), tensor(storage("DoubleStorage", "0", 2), 0, (2,), (1,))))
    _refused(zip_file(pkl(twice), {"0": ONE_FLOAT * 4}), "declared twice, differently")
    untyped = dct((text("w"), tensor(storage("UntypedStorage", "0", 4, module="torch.storage"),
                                     0, (1,), (1,))))
    _refused(zip_file(pkl(untyped), {"0": ONE_FLOAT}), "needs a dtype")


@pytest.mark.parametrize("data, message", [
    (b"", "it is empty"),
    (b"hello world", "not a PyTorch file: it starts with b'hello wo'"),
    (b"\x80\x02\x8a\x0a" + bytes(10) + b".", "wrong magic number"),
    (pkl(num(7)), "wrong magic number"),
    (pkl(num(0x1950A86A20F9469CFC6C)) + pkl(num(1000)), "unknown PyTorch protocol version 1000"),
    (pkl(num(0x1950A86A20F9469CFC6C)) + pkl(num(1001)) + pkl(num(3)), "system information is "
                                                                     "a int"),
    (pkl(num(0x1950A86A20F9469CFC6C)), "the protocol version ends before its STOP"),
    (bytes(257) + b"ustar" + bytes(250), "tar format"),
    (b"PK\x03\x04" + bytes(100), "no end-of-central-directory record"),
])
def test_not_pytorch_files(data, message):
    _refused(data, message)


def test_truncated_files_name_what_is_cut(tmp_path):
    for data in _both(_weights(), {"0": ONE_FLOAT * 4}):
        for cut in range(0, len(data), 7):
            with pytest.raises(pyburn.FormatError):
                store = load_pytorch(data[:cut])
                store["w"].read()


def test_a_file_that_shrinks_after_listing(tmp_path):
    path = tmp_path / "w.pt"
    data = legacy_file(pkl(_weights()(True)), {"0": (4, ONE_FLOAT * 4)})
    path.write_bytes(data)
    store = load_pytorch(path)
    path.write_bytes(data[:-4])
    with pytest.raises(pyburn.FormatError, match="it changed or was truncated while being read"):
        store["w"].read()


def _central_entries(data: bytes) -> list[int]:
    """File offsets of the central directory entries."""
    at, found = 0, []
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        found.append(at)
        at += 4
    return found


def test_zip_bombs_and_overlaps_are_refused():
    body = _weights()(False)
    deflated = zip_file(pkl(body), {"0": ONE_FLOAT * 4}, compression=zipfile.ZIP_DEFLATED)
    assert load_pytorch(deflated, device="flex").tensor("w").tolist() == [1.0] * 4
    entry = _central_entries(deflated)[0]  # archive/data.pkl
    bomb = bytearray(deflated)
    struct.pack_into("<I", bomb, entry + 24, 0xFFFFFFF0)  # its uncompressed size
    _refused(bytes(bomb), "more than deflate can produce: a zip bomb")
    liar = bytearray(deflated)
    real = struct.unpack_from("<I", liar, entry + 24)[0]
    struct.pack_into("<I", liar, entry + 24, real - 1)
    _refused(bytes(liar), "does not inflate to the .* bytes it declares")
    # two directory entries for one local record: the overlapping-files bomb
    stored = zip_file(pkl(body), {"0": ONE_FLOAT * 4})
    entries = _central_entries(stored)
    overlap = bytearray(stored)
    first = struct.unpack_from("<I", overlap, entries[0] + 42)[0]
    struct.pack_into("<I", overlap, entries[1] + 42, first)
    _refused(bytes(overlap), "overlaps the next record")
    many = bytearray(stored)
    eocd = stored.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", many, eocd + 8, 60000, 60000)
    _refused(bytes(many), "declares 60000 entries, more than its central directory")
    past = bytearray(stored)
    struct.pack_into("<I", past, eocd + 16, len(stored))
    _refused(bytes(past), "central directory .* runs past")


def test_zip_archives_pyburn_does_not_read():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("model/data.pkl", pkl(NONE))
        z.writestr("model/constants.pkl", pkl(NONE))
    _refused(out.getvalue(), "TorchScript module")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("a/data.pkl", pkl(NONE))
        z.writestr("b/data.pkl", pkl(NONE))
    _refused(out.getvalue(), "holds 2 NAME/data.pkl records")
    _refused(zip_file(pkl(NONE), byteorder=b"middle"), "unknown byte order b'middle'")
    crc = bytearray(zip_file(pkl(dct((text("a"), num(1))))))
    crc[crc.find(text("a")) + 5] = ord("b")  # the key's text inside the stored pickle
    _refused(bytes(crc), "fails its CRC check")
    encrypted = bytearray(zip_file(pkl(NONE)))
    struct.pack_into("<H", encrypted, _central_entries(bytes(encrypted))[0] + 8, 1)
    _refused(bytes(encrypted), "is encrypted")


def test_a_parameter_and_a_tensor_with_python_state_load():
    """What torch writes for Parameters and for tensors carrying attributes."""
    pid = storage("FloatStorage", "0", 1)
    rebuilt = tensor(pid, 0, (1,), (1,))
    param = call(glob("torch._utils", "_rebuild_parameter"), rebuilt, FALSE, ordered_dict())
    typed = call(glob("torch._tensor", "_rebuild_from_type_v2"),
                 glob("torch._utils", "_rebuild_tensor_v2"),
                 glob("torch.nn.parameter", "Parameter"),
                 tup(storage("FloatStorage", "0", 1), num(0), tup(num(1)),
                     tup(num(1)), FALSE, ordered_dict()), b"}")
    store = load_pytorch(zip_file(pkl(dct((text("p"), param), (text("t"), typed))),
                                  {"0": ONE_FLOAT}), device="flex")
    assert [store.tensor(k).tolist() for k in store] == [[1.0], [1.0]]
