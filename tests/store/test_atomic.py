"""Atomic writes: a crash or an error at any point leaves the old file as it was and no
temporary file behind."""

from __future__ import annotations

import os
import sys

import pytest

import pyburn
from pyburn import store
from pyburn.store import atomic


def _weights(value: float) -> dict[str, pyburn.Tensor]:
    return {"w": pyburn.full((4,), value, device="flex"),
            "b": pyburn.full((2,), value, dtype="int64", device="flex")}


@pytest.fixture
def saved(tmp_path):
    """A weights file with w = 1.0, and its bytes."""
    path = tmp_path / "model.safetensors"
    store.save(_weights(1.0), path)
    return path, path.read_bytes()


def _intact(path, old: bytes) -> None:
    assert path.read_bytes() == old
    assert os.listdir(path.parent) == [path.name]  # no temporary file left


def test_writes_and_replaces(tmp_path):
    path = tmp_path / "f.bin"
    store.atomic_write(path, [b"one", bytearray(b"two"), memoryview(b"three")])
    assert path.read_bytes() == b"onetwothree"
    store.atomic_write(str(path), iter([b"new"]))
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["f.bin"]


def test_a_crash_at_the_rename_keeps_the_old_file(saved, monkeypatch):
    path, old = saved

    def crash(src, dst):
        raise OSError("simulated crash at rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        store.save(_weights(2.0), path)
    _intact(path, old)


def test_a_crash_at_fsync_keeps_the_old_file(saved, monkeypatch):
    path, old = saved

    def crash(fd):
        raise OSError("simulated disk error")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="simulated disk error"):
        store.save(_weights(2.0), path)
    _intact(path, old)


def test_an_error_while_reading_a_tensor_keeps_the_old_file(saved, monkeypatch):
    path, old = saved
    calls = []

    def failing_to_bytes(self):
        calls.append(self)
        if len(calls) == 2:  # after the header and one tensor were written
            raise pyburn.ReadbackError("simulated device loss")
        return original(self)

    original = pyburn.Tensor.to_bytes
    monkeypatch.setattr(pyburn.Tensor, "to_bytes", failing_to_bytes)
    with pytest.raises(pyburn.ReadbackError):
        store.save(_weights(2.0), path)
    _intact(path, old)


def test_an_interrupt_mid_write_keeps_the_old_file(saved):
    path, old = saved

    def chunks():
        yield b"partial"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.atomic_write(path, chunks())
    _intact(path, old)


def test_data_is_synced_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b)))
    store.atomic_write(tmp_path / "f.bin", [b"data"])
    assert events[:2] == ["fsync", "replace"]
    if sys.platform.startswith("linux"):  # the folder is synced too, where it can be opened
        assert events == ["fsync", "replace", "fsync"]


@pytest.mark.skipif(not hasattr(os, "umask") or sys.platform in ("win32", "emscripten"),
                    reason="POSIX permissions")
def test_new_files_get_normal_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        store.atomic_write(tmp_path / "f.bin", [b"x"])
    finally:
        os.umask(umask)
    assert (tmp_path / "f.bin").stat().st_mode & 0o777 == 0o644


def test_temporary_names_do_not_collide(tmp_path, monkeypatch):
    tokens = iter([b"\x00" * 6, b"\x00" * 6, b"\x01" * 6])
    monkeypatch.setattr(atomic.os, "urandom", lambda n: next(tokens))
    (tmp_path / ".f.bin.000000000000.tmp").write_bytes(b"someone else's")
    store.atomic_write(tmp_path / "f.bin", [b"mine"])
    assert (tmp_path / "f.bin").read_bytes() == b"mine"
    assert (tmp_path / ".f.bin.000000000000.tmp").read_bytes() == b"someone else's"
