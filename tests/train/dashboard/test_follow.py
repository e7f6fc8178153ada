"""`Follower` reads a run folder's events as they are written: in any pieces (a line cut
short waits for its end), and again from the start where a resume cut the log back; the
state it builds equals the one the whole file gives. `pyburn dash` opens run folders, or
prints their summaries where there is no terminal."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.cli import main
from pyburn.train import Accuracy, Learner, read_events
from pyburn.train.dashboard import RunState
from pyburn.train.dashboard.cli import labels
from pyburn.train.dashboard.follow import Follower

from ..helpers import make_setup


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run's folder (two epochs, validation, accuracy)."""
    folder = tmp_path_factory.mktemp("finished")
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"))
    Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], run_dir=folder,
            log_every=4).fit(train, valid, epochs=2)
    return folder


def whole(folder) -> RunState:
    state = RunState()
    for event in read_events(folder):
        state.apply(event)
    return state


def test_events_written_in_pieces_give_the_state_of_the_whole_file(finished, tmp_path):
    data = (finished / "events.jsonl").read_bytes()
    follower = Follower(tmp_path)
    assert follower.poll() == 0 and follower.state.status == "waiting"  # no file yet
    written = 0
    with open(tmp_path / "events.jsonl", "wb") as file:
        for cut in range(97, len(data) + 97, 97):  # pieces that end mid-line
            file.write(data[written:cut])
            file.flush()
            written = min(cut, len(data))
            follower.poll()
            complete = data[:written].count(b"\n")
            assert sum(len(points) for curves in follower.state.curves.values()
                       for points in curves.values()) == sum(
                len(e.get("metrics", {})) for e in read_events(finished)[:complete]
                if e["event"] == "metrics")
    want = whole(finished)
    assert follower.state.curves == want.curves and follower.state.status == want.status
    assert follower.state.where == want.where


def test_a_log_cut_back_by_a_resume_is_read_again(finished, tmp_path):
    lines = (finished / "events.jsonl").read_bytes().splitlines(keepends=True)
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(lines))
    follower = Follower(tmp_path)
    follower.poll()
    log.write_bytes(b"".join(lines[:5]))  # what a resume does: back to a checkpoint's length
    follower.poll()
    assert follower.state.curves == whole(tmp_path).curves
    with open(log, "ab") as file:
        file.write(b"".join(lines[5:]))
    follower.poll()
    assert follower.state.curves == whole(finished).curves


def test_a_path_that_is_no_folder_is_refused(tmp_path):
    with pytest.raises(pyburn.PyburnError, match="not a folder"):
        Follower(tmp_path / "nothing")


def test_dash_without_a_terminal_prints_each_runs_summary(finished, tmp_path, capsys):
    assert main(["dash", str(finished), str(finished)]) == 0
    out, err = capsys.readouterr()
    assert "no dashboard (stdout is not a terminal)" in err
    name = finished.name
    assert f"{name}: ended, step 24, epoch 2/2" in out
    assert f"{name} (2): ended, step 24, epoch 2/2" in out
    assert "  accuracy valid" in out and "  loss train" in out
    assert main(["dash", str(tmp_path / "nothing")]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_labels_are_short_and_distinct():
    assert labels(["runs/a", "runs/b"]) == ["a", "b"]
    assert labels(["x/run", "y/run/"]) == ["x/run", "y/run"]
    assert labels(["a", "a"]) == ["a", "a (2)"]
