"""The dashboard in a real terminal: tmux runs `dashboard_script.py` in a pane; ``p`` shows
the paused state while the run's step counter stays where it is, ``s`` stops it after a
checkpoint, and after a run that raised, the terminal is restored (``stty -a``) and the
traceback is readable. Every wait is bounded; each test has a tmux server of its own, ended
after it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("textual", reason="the dashboard's extra: pip install 'pyburn[tui]'")

SCRIPT = Path(__file__).with_name("dashboard_script.py")
#: the bound on every wait for the pane
WAIT_S = 60
STEP = re.compile(r"step\s+(\d+)")


@pytest.fixture
def tmux(tmp_path):
    """`tmux(*args)` on a server of this test's own (a socket in tmp_path)."""
    if shutil.which("tmux") is None:
        if "terminal" in os.environ.get("PYBURN_SKIP", ""):
            pytest.skip("PYBURN_SKIP names terminal")
        pytest.fail("tmux is not installed: `make test` installs it (scripts/system_deps.py), "
                    "or skip this part with PYBURN_SKIP=terminal")
    socket = tmp_path / "tmux.sock"

    def run(*args: str) -> str:
        return subprocess.run(["tmux", "-S", str(socket), *args], check=True, timeout=WAIT_S,
                              capture_output=True, text=True).stdout
    yield run
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True,
                   timeout=WAIT_S)


def start(tmux, tmp_path, *options: str) -> tuple[Path, Path]:
    """The script in a 100 x 36 pane; then `stty -a` into a file, then the pane waits."""
    run_dir, stty = tmp_path / "run", tmp_path / "stty.txt"
    command = (f"{sys.executable} {SCRIPT} {run_dir} {' '.join(options)}; "
               f"echo exit=$?; stty -a > {stty}.part; mv {stty}.part {stty}; sleep {WAIT_S}")
    tmux("new-session", "-d", "-s", "run", "-x", "100", "-y", "36", command)
    return run_dir, stty


def screen_until(tmux, condition) -> str:
    """The pane's text once `condition(text)` holds (at most WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        text = tmux("capture-pane", "-p", "-t", "run")
        if condition(text):
            return text
        assert time.monotonic() < deadline, f"timed out; the pane shows:\n{text}"
        time.sleep(0.1)


def restored(stty: Path) -> bool:
    """Whether `stty -a` says the terminal is back in its usual mode (its file is written
    whole, by a rename, a moment after the pane shows the exit: waited for)."""
    deadline = time.monotonic() + WAIT_S
    while not stty.exists():
        assert time.monotonic() < deadline, "stty -a never ran after the script"
        time.sleep(0.05)
    flags = stty.read_text().split()
    return "icanon" in flags and "echo" in flags


def test_pause_freezes_the_steps_and_stop_leaves_after_a_checkpoint(tmux, tmp_path):
    run_dir, stty = start(tmux, tmp_path)
    screen_until(tmux, lambda text: "status  running" in text and "step    0 " not in text)
    tmux("send-keys", "-t", "run", "p")
    shown = screen_until(tmux, lambda text: "PAUSED" in text and "paused at step" in text)
    at = int(STEP.search(shown.split("status")[-1]).group(1))
    time.sleep(1.0)
    later = tmux("capture-pane", "-p", "-t", "run")
    assert int(STEP.search(later.split("status")[-1]).group(1)) == at
    tmux("send-keys", "-t", "run", "s")
    screen_until(tmux, lambda text: "exit=0" in text)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    states = [(e["state"], e["step"]) for e in events if e["event"] == "status"]
    assert states[-2:] == [("paused", at), ("stopped", at)]
    assert (run_dir / "checkpoints" / f"step-{at:08d}.ckpt").exists()
    assert restored(stty)


def test_after_a_failure_the_terminal_is_restored_and_the_traceback_shown(tmux, tmp_path):
    _, stty = start(tmux, tmp_path, "--fail-at", "30")
    shown = screen_until(tmux, lambda text: "exit=1" in text)
    assert "RuntimeError: an injected failure at step 30" in shown
    deadline = time.monotonic() + WAIT_S
    while not stty.exists() or not stty.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert restored(stty)
