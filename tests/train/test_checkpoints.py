"""`CheckpointManager`: names, rotation, the best file, leftovers of killed writes, and
falling back past a damaged file."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.train import CheckpointManager


def save(manager, step, device):
    return manager.save(step=step, model={"w": pyburn.full((2,), float(step), device=device)},
                        epoch=step // 10)


def test_rotation_keeps_the_last_and_the_best(tmp_path, device):
    manager = CheckpointManager(tmp_path, keep_last=2)
    assert manager.latest() is None and manager.load_latest(device) is None
    for step in (3, 6, 10, 13):
        save(manager, step, device)
    manager.save_best(step=6, model={"w": pyburn.ones(2, device=device)})
    assert [s for s, _ in manager.steps()] == [10, 13]
    assert manager.latest() == str(tmp_path / "step-00000013.ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "best.ckpt", "step-00000010.ckpt", "step-00000013.ckpt"]
    path, ckpt = manager.load_latest(device)
    assert ckpt.step == 13 and ckpt.model["w"].tolist() == [13.0, 13.0]


def test_leftovers_of_a_killed_write_are_removed(tmp_path, device):
    manager = CheckpointManager(tmp_path)
    save(manager, 1, device)
    stale = tmp_path / ".step-00000002.ckpt.0123456789ab.tmp"
    stale.write_bytes(b"half a checkpoint")
    unrelated = tmp_path / "notes.txt"
    unrelated.write_text("mine")
    save(manager, 2, device)
    assert not stale.exists() and unrelated.exists()


def test_a_damaged_newest_file_falls_back_to_the_one_before(tmp_path, device):
    manager = CheckpointManager(tmp_path)
    save(manager, 4, device)
    newest = save(manager, 8, device)
    with open(newest, "r+b") as file:
        file.truncate(40)
    with pytest.warns(UserWarning, match="skipping unreadable checkpoint"):
        path, ckpt = manager.load_latest(device)
    assert ckpt.step == 4


def test_keep_last_is_checked(tmp_path):
    with pytest.raises(pyburn.ArgumentError, match="keep_last"):
        CheckpointManager(tmp_path, keep_last=0)
    assert CheckpointManager(tmp_path, keep_last=None).keep_last is None
