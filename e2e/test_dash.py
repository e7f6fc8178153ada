"""`pyburn dash --web` in Chromium: the curves of a run appear and grow while it writes its
events, a finished run shares the chart, a NaN breaks the line, the keys change the metric,
the plot kind and the smoothing, and nothing the page does leaves localhost."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Watched

from pyburn.train.dashboard.web import serving

#: milliseconds to wait for the page to show what was written (it asks every second)
SHOWN_MS = 20_000
#: the points of every polyline `selector` finds, together
POINTS = """(selector) => [...document.querySelectorAll(selector)]
  .map((p) => p.getAttribute('points').split(' ').length).reduce((a, b) => a + b, 0)"""


def write(folder: Path, *events: dict) -> None:
    with open(folder / "events.jsonl", "a") as log:
        for event in events:
            log.write(json.dumps({"time": 1764500000.0, **event}) + "\n")


def metrics(step: int, loss: float, split: str = "train") -> dict:
    return {"event": "metrics", "split": split, "epoch": 1, "batch": step, "batches": 100,
            "step": step, "end": split == "valid", "metrics": {"loss": loss, "accuracy": 1 - loss}}


def test_the_page_follows_a_run_as_it_writes(browser, tmp_path, screenshot):
    live, done = tmp_path / "live", tmp_path / "done"
    live.mkdir(), done.mkdir()
    write(done, {"event": "status", "state": "started", "step": 0, "epoch": 0, "epochs": 1},
          *(metrics(s, 2 / s) for s in range(1, 41)), metrics(40, 0.04, "valid"),
          {"event": "status", "state": "ended", "step": 40, "epoch": 1})
    write(live, {"event": "status", "state": "started", "step": 0, "epoch": 0, "epochs": 1},
          *(metrics(s, 1 / s) for s in range(1, 11)))
    with serving([("live", live), ("done", done)]) as url:
        watched = Watched(browser, url)
        try:
            page = watched.open("")
            train = 'polyline[data-run="live"][data-split="train"]'
            page.wait_for_function(f"({POINTS})('{train}') === 10", timeout=SHOWN_MS)
            assert page.evaluate(POINTS, 'polyline[data-run="done"][data-split="train"]') == 40
            assert page.locator('circle[data-run="done"][data-split="valid"]').count() == 1
            write(live, *(metrics(s, 1 / s) for s in range(11, 21)))
            page.wait_for_function(f"({POINTS})('{train}') === 20", timeout=SHOWN_MS)
            write(live, metrics(21, float("nan")), metrics(22, 0.05),
                  {"event": "status", "state": "paused", "reason": "nan", "step": 22,
                   "epoch": 0})
            page.wait_for_selector('tr[data-run="live"] >> text=paused: the loss is not finite',
                                   timeout=SHOWN_MS)
            assert page.locator(train).count() == 2  # the NaN broke the line
            assert page.locator('tr[data-run="done"]').inner_text().split()[1] == "ended"
            page.keyboard.press("ArrowRight")
            assert page.locator('button[aria-selected="true"]').inner_text() == "accuracy"
            assert page.inner_text("#chart-title") == "accuracy · full · smoothing 0.6"
            page.keyboard.press("+")
            assert page.inner_text("#chart-title").endswith("smoothing 0.7")
            page.keyboard.press("ArrowDown")
            page.keyboard.press("ArrowDown")
            assert page.inner_text("#chart-title") == "accuracy · summary"
            assert page.locator('#summary tr[data-series="done valid"]').inner_text().split()[2] \
                == "0.96000"
            page.keyboard.press("ArrowDown")
            screenshot(page, "dash")
            watched.check()
        finally:
            watched.close()
