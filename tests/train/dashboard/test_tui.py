"""The terminal dashboard (`pyburn.train.dashboard.tui`) driven by textual's Pilot: its keys
steer a real run through the Learner's `Control` (pause, checkpoint, stop, abort with a
confirmation), its tabs, plot kinds and smoothing change what the chart shows, it survives a
resize and an empty run, says why a run paused, keeps prints in its log pane, and hands a
failing fit's error over; where it cannot open, a fit shows plain lines."""

from __future__ import annotations

import asyncio
import math
import threading
import time
import warnings

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.train import Accuracy, Learner, TrainingAborted
from pyburn.train.dashboard import RunState
from pyburn.train.dashboard.live import StateRenderer

from ..helpers import make_setup

textual = pytest.importorskip("textual", reason="the dashboard's extra: pip install 'pyburn[tui]'")
from pyburn.train.dashboard.tui import Confirm, Dashboard, Log  # noqa: E402

SIZE = (100, 36)
#: the bound on every wait for the training thread or the app
WAIT_S = 30


def run(scenario) -> None:
    asyncio.run(asyncio.wait_for(scenario(), WAIT_S * 2))


def text(app: Dashboard, selector: str) -> str:
    return str(app.query_one(selector).content)


async def until(pilot, condition) -> None:
    """Let the app run until `condition()` holds (at most WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


def paused_run(tmp_path, at: tuple[int, ...] = (6, 30)):
    """A Learner on cpu whose run pauses itself after each step of `at`, its state and a
    dashboard that runs it."""
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"), n=480)
    state = RunState()
    learner = None

    class PauseAt(StateRenderer):
        def progress(self, progress):
            super().progress(progress)
            if progress.step in at:
                learner.control.pause()

    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], run_dir=tmp_path,
                      log_every=3, renderer=PauseAt(state))
    app = Dashboard(state, learner.control, lambda: learner.fit(train, valid, epochs=3),
                    title=str(tmp_path), device=pyburn.device("wasm"))
    return learner, state, app


def test_keys_pause_checkpoint_and_stop_a_run(tmp_path):
    learner, state, app = paused_run(tmp_path)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: state.status == "paused")
            # the status panel redraws on its own timer, later on a loaded machine
            await until(pilot, lambda: "PAUSED" in text(app, "#status"))
            assert learner.step == 6
            assert "device  wasm: " in text(app, "#status")  # its memory in MiB
            await pilot.press("c")
            await until(pilot, lambda: any("checkpoint at step 6" in m for m in state.messages))
            assert 6 in [step for step, _ in learner.checkpoints.steps()]
            await pilot.press("p")
            await until(pilot, lambda: learner.step == 30 and state.status == "paused")
            assert any("resumed at step 6" in m for m in state.messages)
            await pilot.press("s")
            await until(pilot, lambda: not app.is_running)
        assert learner.interrupted and learner.step == 30
        assert learner.checkpoints.latest().endswith("00000030.ckpt")
    run(scenario)
    assert app.error is None and state.status == "stopped"


def test_abort_asks_first(tmp_path):
    learner, state, app = paused_run(tmp_path)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: state.status == "paused")
            await pilot.press("k")
            await until(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.press("n")
            await until(pilot, lambda: not isinstance(app.screen, Confirm))
            await pilot.pause(0.3)
            assert not learner.control.aborting and state.status == "paused"
            await pilot.press("k")
            await until(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.press("y")
            await until(pilot, lambda: not app.is_running)
    run(scenario)
    assert isinstance(app.error, TrainingAborted) and state.status == "aborted"


def filled_state() -> RunState:
    state = RunState()
    state.apply({"event": "status", "state": "started", "step": 0, "epoch": 0, "epochs": 2})
    for step in range(1, 61):
        state.apply({"event": "metrics", "split": "train", "epoch": 1 + step // 30,
                     "batch": step % 30, "batches": 30, "step": step, "end": False,
                     "metrics": {"loss": 1 / step, "accuracy": 1 - 1 / step}})
    for step in (30, 60):
        state.apply({"event": "metrics", "split": "valid", "epoch": step // 30, "batch": None,
                     "step": step, "end": True,
                     "metrics": {"loss": 1.5 / step, "accuracy": 0.9}})
    return state


def test_tabs_plot_kinds_smoothing_and_a_resize(tmp_path):
    app = Dashboard(filled_state())

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            chart = app.query_one("#chart")
            assert chart.border_title == "loss  ·  full  ·  smoothing 0.6"
            assert "■ train" in text(app, "#chart") and "■ valid" in text(app, "#chart")
            await pilot.press("right")
            assert chart.border_title.startswith("accuracy")
            await pilot.press("left")
            await pilot.press("down")
            assert chart.border_title == "loss  ·  recent  ·  smoothing 0.6"
            await pilot.press("down")
            assert chart.border_title == "loss  ·  summary"
            summary = text(app, "#chart")
            assert "valid" in summary and "0.025" in summary  # the last valid loss, 1.5 / 60
            await pilot.press("down", "plus")
            assert chart.border_title == "loss  ·  full  ·  smoothing 0.8"
            await pilot.press("minus", "minus", "minus", "minus", "minus")
            assert chart.border_title == "loss  ·  full  ·  smoothing 0"
            await pilot.resize_terminal(44, 16)
            await pilot.pause(0.3)
            await pilot.resize_terminal(*SIZE)
            await pilot.pause(0.3)
            assert "■ train" in text(app, "#chart")
            await pilot.press("p")  # a read-only view: a notice, nothing else
            assert "read only" in text(app, "#status")
            await pilot.press("q")
            await until(pilot, lambda: not app.is_running)
    run(scenario)


def test_an_empty_run_waits_and_a_nan_pause_says_so():
    empty = Dashboard(RunState())
    nan = filled_state()
    nan.apply({"event": "status", "state": "paused", "reason": "nan", "step": 60, "epoch": 1})
    paused = Dashboard(nan)

    async def scenario():
        async with empty.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            assert "waiting for the first logged values" in text(empty, "#chart")
            assert "status  waiting" in text(empty, "#status")
            await pilot.press("down", "right", "plus")  # nothing to show, nothing breaks
        async with paused.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            assert "the loss is not finite" in text(paused, "#status")
    run(scenario)


def test_prints_and_warnings_go_to_the_log_pane_and_a_failing_fit_hands_over_its_error():
    release = threading.Event()

    def fit():
        print("from", "the loop")
        warnings.warn("a warning from the loop", stacklevel=1)
        release.wait(WAIT_S)
        raise ValueError("the fit failed")

    app = Dashboard(RunState(), fit=fit)

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            log = app.query_one(Log)
            await until(pilot, lambda: any("warning from the loop" in line
                                           for line in log.lines_shown))
            assert "from the loop" in log.lines_shown
            release.set()
            await until(pilot, lambda: not app.is_running)
    run(scenario)
    assert isinstance(app.error, ValueError)


def test_without_a_terminal_a_fit_shows_plain_lines(capsys):
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"))
    learner = Learner(model, optimizer, F.cross_entropy, dashboard="tui")
    history = learner.fit(train, valid, epochs=1)
    out, err = capsys.readouterr()
    assert "no dashboard (stdout is not a terminal)" in err
    assert "epoch 1/1" in out and len(history) == 1 and not math.isnan(history[0]["train/loss"])
    with pytest.raises(pyburn.PyburnError, match="dashboard"):
        Learner(model, optimizer, F.cross_entropy, dashboard="gui")


def test_several_runs_share_each_chart_and_a_read_only_view_offers_no_steering():
    other = filled_state()
    other.apply({"event": "status", "state": "failed", "step": 60, "epoch": 1,
                 "error": "RuntimeError: boom"})
    polls = []
    app = Dashboard({"first": filled_state(), "second": other}, poll=lambda: polls.append(1))

    async def scenario():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            chart = text(app, "#chart")
            for legend in ("■ first train", "■ first valid", "■ second train", "■ second valid"):
                assert legend in chart
            status = text(app, "#status")
            assert "first: running, step 60" in status and "second: failed, step 60" in status
            assert not app.check_action("pause", ()) and app.check_action("kind", (1,))
            assert any("second: " in line and "failed at step 60: RuntimeError: boom" in line
                       for line in app.query_one(Log).lines_shown)
    run(scenario)
    assert polls  # the followers are asked before each redraw
