"""`RunState` folds a run's events: fed live by a `Learner` (through the dashboard's
renderer) and read back from the run's ``events.jsonl``, the same run gives the same curves
and status; the curves are the logged metric values."""

from __future__ import annotations

import pyburn
import pyburn.nn.functional as F
from pyburn.train import Accuracy, Learner, read_events, read_metrics
from pyburn.train.dashboard import RunState
from pyburn.train.dashboard.live import StateRenderer

from ..helpers import make_setup


def test_a_live_run_and_its_file_give_the_same_state(tmp_path):
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"))
    live = RunState()
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], run_dir=tmp_path,
                      log_every=4, renderer=StateRenderer(live))
    learner.fit(train, valid, epochs=2)
    read = RunState()
    for event in read_events(tmp_path):
        read.apply(event)
    assert live.curves == read.curves and live.status == read.status == "ended"
    assert live.metric_names() == ["loss", "accuracy"]
    want = [(e["step"], e["metrics"]["loss"]) for e in read_metrics(tmp_path)
            if e["split"] == "valid"]
    assert read.series("loss")["valid"] == want and len(want) == 2
    assert live.where.step == read.where.step == learner.step
    assert (live.where.epoch, live.where.epochs) == (2, 2)


def test_statuses_and_their_messages():
    state = RunState()
    state.apply({"event": "status", "state": "started", "step": 0, "epoch": 0, "epochs": 3,
                 "resumed_from": "runs/x/step-8.ckpt"})
    state.apply({"event": "status", "state": "paused", "reason": "nan", "step": 12,
                 "epoch": 0})
    assert (state.status, state.paused_for) == ("paused", "nan")
    state.apply({"event": "status", "state": "stopped", "by": "request", "step": 12,
                 "epoch": 0})
    assert state.status == "stopped" and state.paused_for is None
    lines = [m.split(" ", 1)[1] for m in state.messages]
    assert lines == ["started at step 0, resumed from runs/x/step-8.ckpt",
                     "paused at step 12: the loss is not finite", "stopped by request at step 12"]


def test_values_that_are_not_scalars_draw_no_curve():
    state = RunState()
    state.apply({"event": "metrics", "split": "valid", "step": 3, "epoch": 1, "batch": None,
                 "metrics": {"confusion": [[1, 0], [0, 1]], "loss": 0.5, "flag": True}})
    assert state.metric_names() == ["loss"] and state.series("nothing") == {}
