"""Steering a run from another thread (`pyburn.train.Control`): a pause holds the loop between
two steps and a resumed run ends with the weights of one never paused, bit for bit; a
checkpoint asked for is written at once; a stop leaves after a checkpoint that
``resume=True`` goes on from to the same weights; an abort raises with no checkpoint; a loss
that is not finite pauses a watched run and says why. Every change is an event in the run's
``events.jsonl``."""

from __future__ import annotations

import json
import math
import threading
import time

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.train import Control, Learner, Renderer, TrainingAborted, read_events

from .helpers import make_setup, weights

EPOCHS = 2
#: seconds the test watches a paused loop for a step that should not come
FROZEN_S = 0.3
#: the bound on every wait for the training thread
WAIT_S = 60


@pytest.fixture
def dev():
    return pyburn.device("cpu")


class At(Renderer):
    """Calls `act(learner)` once, on the training thread, after step `step`."""

    def __init__(self, step: int, act):
        self.step, self.act, self.learner = step, act, None

    def progress(self, progress) -> None:
        if self.learner.step == self.step:
            self.act(self.learner)


def learner_for(dev, run_dir, renderer=None, control=None, loss_fn=F.cross_entropy):
    model, optimizer, train, valid = make_setup(dev)
    learner = Learner(model, optimizer, loss_fn, run_dir=run_dir, log_every=4,
                      renderer=renderer or Renderer(), control=control)
    if isinstance(renderer, At):
        renderer.learner = learner
    return learner, train, valid


def states(run_dir) -> list[tuple[str, int]]:
    return [(e["state"], e["step"]) for e in read_events(run_dir) if e["event"] == "status"]


def test_a_paused_run_waits_and_then_ends_with_the_weights_of_one_never_paused(dev, tmp_path):
    straight, train, valid = learner_for(dev, tmp_path / "straight")
    straight.fit(train, valid, epochs=EPOCHS)

    paused = threading.Event()
    learner, train, valid = learner_for(
        dev, tmp_path / "paused", At(5, lambda ln: (ln.control.pause(), paused.set())))
    fitting = threading.Thread(target=learner.fit, args=(train, valid), kwargs={"epochs": EPOCHS})
    fitting.start()
    try:
        assert paused.wait(WAIT_S)
        time.sleep(FROZEN_S / 3)  # the loop reaches its boundary and waits there
        at = learner.step
        time.sleep(FROZEN_S)
        assert learner.step == at == 5 and fitting.is_alive()
    finally:
        learner.control.resume()
        fitting.join(WAIT_S)
    assert not fitting.is_alive()
    assert weights(learner.model) == weights(straight.model)
    assert ("paused", 5) in states(tmp_path / "paused")
    assert ("resumed", 5) in states(tmp_path / "paused")


def test_a_checkpoint_asked_for_is_written_at_the_next_step(dev, tmp_path):
    learner, train, valid = learner_for(dev, tmp_path, At(3, lambda ln: ln.control.checkpoint()))
    learner.fit(train, valid, epochs=1)
    assert 3 in [step for step, _ in learner.checkpoints.steps()]
    assert ("checkpoint", 3) in states(tmp_path)


def test_a_stopped_run_resumes_to_the_weights_of_one_never_stopped(dev, tmp_path):
    straight, train, valid = learner_for(dev, tmp_path / "straight")
    straight.fit(train, valid, epochs=EPOCHS)

    learner, train, valid = learner_for(dev, tmp_path / "stopped",
                                        At(7, lambda ln: ln.control.stop()))
    learner.fit(train, valid, epochs=EPOCHS)
    assert learner.interrupted and learner.step == 7 and learner.checkpoints.latest()
    assert ("stopped", 7) in states(tmp_path / "stopped")

    again, train, valid = learner_for(dev, tmp_path / "stopped")
    again.fit(train, valid, epochs=EPOCHS, resume=True)
    assert not again.interrupted
    assert weights(again.model) == weights(straight.model)


def test_an_abort_raises_and_writes_no_checkpoint(dev, tmp_path):
    learner, train, valid = learner_for(dev, tmp_path, At(5, lambda ln: ln.control.abort()))
    with pytest.raises(TrainingAborted, match="step 5"):
        learner.fit(train, valid, epochs=EPOCHS)
    assert learner.checkpoints.steps() == []
    assert states(tmp_path)[-1] == ("aborted", 5)
    learner.fit(train, valid, epochs=1)  # the next fit starts afresh: the abort is spent
    assert states(tmp_path)[-1][0] == "ended"


def nan_after(step: int):
    """cross_entropy, but NaN from step `step` on (a run whose loss blew up)."""
    calls = [0]

    def loss(outputs, targets):
        calls[0] += 1
        value = F.cross_entropy(outputs, targets)
        return value * math.nan if calls[0] >= step else value
    return loss


def test_a_loss_that_is_not_finite_pauses_a_watched_run(dev, tmp_path):
    control = Control(pause_on_nan=True)
    messages = []

    class Watching(Renderer):
        def message(self, text):
            messages.append(text)
            if "not finite" in text:
                control.stop()  # what a user at the dashboard would do

    learner, train, valid = learner_for(dev, tmp_path, Watching(), control, nan_after(6))
    fitting = threading.Thread(target=learner.fit, args=(train, valid), kwargs={"epochs": 1})
    fitting.start()
    fitting.join(WAIT_S)
    assert not fitting.is_alive() and learner.interrupted
    paused = [e for e in read_events(tmp_path) if e.get("state") == "paused"]
    assert [(e["reason"], e["step"]) for e in paused] == [("nan", 8)]  # the first log after
    assert any("the loss is not finite" in m for m in messages)


def test_an_unwatched_run_trains_on_through_a_nan(dev, tmp_path):
    learner, train, valid = learner_for(dev, tmp_path, loss_fn=nan_after(6))
    learner.fit(train, valid, epochs=1)
    assert not learner.interrupted and math.isnan(learner.history[-1]["train/loss"])
    assert "paused" not in [state for state, _ in states(tmp_path)]


def test_every_event_is_one_whole_json_line_with_its_kind_and_time(dev, tmp_path):
    learner, train, valid = learner_for(dev, tmp_path)
    learner.fit(train, valid, epochs=1)
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert {e["event"] for e in events} == {"status", "metrics"}
    assert all(isinstance(e["time"], float) for e in events)
    assert [s for s, _ in states(tmp_path)] == ["started", "ended"]


def test_control_is_checked(dev):
    model, optimizer, _, _ = make_setup(dev)
    with pytest.raises(pyburn.PyburnError, match="Control"):
        Learner(model, optimizer, F.cross_entropy, control="pause")


def test_a_run_that_raises_records_how_it_ended(dev, tmp_path):
    def failing(outputs, targets):
        raise RuntimeError("the loss broke")

    learner, train, valid = learner_for(dev, tmp_path, loss_fn=failing)
    with pytest.raises(RuntimeError):
        learner.fit(train, valid, epochs=1)
    last = [e for e in read_events(tmp_path) if e["event"] == "status"][-1]
    assert (last["state"], last["error"]) == ("failed", "RuntimeError: the loss broke")
