"""What the terminal shows: plain lines when the stream is not a terminal, a progress bar
redrawn in place when it is."""

from __future__ import annotations

import io
import re

import pytest

import pyburn.nn.functional as F
from pyburn.train import Accuracy, Learner, Progress, TerminalRenderer

from .helpers import make_setup


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """A bar is cut to the terminal's width: these tests see a 120-column one, whatever
    runs them (pytest-xdist's workers, a narrow window)."""
    monkeypatch.setenv("COLUMNS", "120")


def fit_output(device, tty: bool, epochs: int = 2) -> str:
    model, optimizer, train, valid = make_setup(device)  # 12 batches per epoch
    out = io.StringIO()
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], log_every=5,
                      renderer=TerminalRenderer(out, tty=tty, refresh=0.0))
    learner.fit(train, valid, epochs=epochs)
    return out.getvalue()


NUMBER = r"[0-9.e+-]+"


def test_plain_lines_when_not_a_terminal(device):
    lines = fit_output(device, tty=False).splitlines()
    assert "\r" not in "".join(lines)
    patterns = [
        rf"epoch 1/2  batch 5/12  loss {NUMBER}  accuracy {NUMBER}",
        rf"epoch 1/2  batch 10/12  loss {NUMBER}  accuracy {NUMBER}",
        rf"epoch 1/2 done in {NUMBER} s  train: loss {NUMBER}  accuracy {NUMBER} \| "
        rf"valid: loss {NUMBER}  accuracy {NUMBER}",
        rf"epoch 2/2  batch 5/12  loss {NUMBER}  accuracy {NUMBER}",
        rf"epoch 2/2  batch 10/12  loss {NUMBER}  accuracy {NUMBER}",
        rf"epoch 2/2 done in {NUMBER} s  train: loss {NUMBER}  accuracy {NUMBER} \| "
        rf"valid: loss {NUMBER}  accuracy {NUMBER}",
    ]
    assert len(lines) == len(patterns), lines
    for line, pattern in zip(lines, patterns):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_progress_bar_on_a_terminal(device):
    text = fit_output(device, tty=True, epochs=1)
    frames = [f for f in text.split("\r") if f.startswith("epoch 1/1  ")]
    assert len(frames) == 12  # refresh=0: a frame per batch
    last = frames[-1].removesuffix("\x1b[K")
    assert re.match(r"epoch 1/1  █{24}  12/12  \d\d:\d\d<00:00  [\d,]+ items/s", last), last
    assert re.search(r"loss [0-9.]+  accuracy [0-9.]+", frames[5])  # after the 5th batch
    # the bar is cleared before the epoch's summary line
    assert re.search(r"\r\x1b\[Kepoch 1/1 done in", text)


def test_the_bar_fits_the_terminal_and_estimates_the_time_left():
    out = io.StringIO()
    renderer = TerminalRenderer(out, tty=True, refresh=0.0)
    renderer.progress(Progress(3, 10, 40, 100, 20, 640, 10.0, {"loss": "0.5"}, True))
    bar = out.getvalue().removeprefix("\r").removesuffix("\x1b[K")
    # 20 batches in 10 s this session: 60 left take 30 s
    assert bar.startswith("epoch 3/10  " + "█" * 9 + "░" * 15 + "  40/100  00:10<00:30  "
                          "64 items/s  loss 0.5")


def test_messages_and_unknown_lengths():
    out = io.StringIO()
    renderer = TerminalRenderer(out, tty=False)
    renderer.progress(Progress(1, 1, 7, None, 7, 70, 1.0, {"loss": "1"}, True))
    renderer.message("hello")
    assert out.getvalue() == "epoch 1/1  batch 7  loss 1\nhello\n"
