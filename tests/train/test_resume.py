"""The resume guarantee, tested for real: a training script in a subprocess is killed with
SIGKILL at random points mid-epoch (twice), resumed each time, and must end with the same
weights, bit for bit, and the same logged metrics as a run that was never stopped. SIGINT
must stop it after the current batch with a checkpoint to resume from."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

import pyburn
from pyburn.train import read_metrics

SCRIPT = os.path.join(os.path.dirname(__file__), "train_script.py")
DELAY = 0.02  # seconds per batch: 5 batches between two progress lines
# the progress lines printed mid-epoch: batch 5, 10, 15 and 20 of 25
MID_EPOCH = re.compile(r"epoch (\d)/3  batch (5|10|15|20)/25")

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def start(run_dir, delay=DELAY) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, SCRIPT, str(run_dir), "--delay", str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_mid_epoch(proc: subprocess.Popen, rng: random.Random, signum: int) -> str:
    """Wait for a random mid-epoch progress line, wait a random part of the next five
    batches, send `signum`; returns the line."""
    lines = rng.randint(1, 6)
    seen = 0
    for line in proc.stdout:
        if MID_EPOCH.search(line):
            seen += 1
            if seen == lines:
                time.sleep(rng.uniform(0, 4 * DELAY))
                proc.send_signal(signum)
                return line
    raise AssertionError(f"the run ended before it could be stopped: {proc.stderr.read()}")


def finish(proc: subprocess.Popen, timeout=120) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def final_weights(run_dir) -> dict[str, bytes]:
    return {k: t.to_bytes() for k, t in
            pyburn.store.load(os.path.join(run_dir, "final.safetensors"), device="cpu").items()}


def logged(run_dir) -> list[tuple]:
    """The metric lines without their wall-clock time."""
    rows = []
    for r in read_metrics(run_dir):
        rows.append((r["split"], r["epoch"], r["batch"], r["step"], r["end"],
                     json.dumps(r["metrics"], sort_keys=True)))
    return rows


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    code, output = finish(start(run_dir, delay=0.0))
    assert code == 0 and "DONE" in output, output
    return final_weights(run_dir), logged(run_dir)


@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_twice_mid_epoch_then_resume_is_bit_exact(tmp_path, reference, seed):
    rng = random.Random(seed)
    for _ in range(2):
        proc = start(tmp_path)
        stop_mid_epoch(proc, rng, signal.SIGKILL)
        code, output = finish(proc)
        assert code == -signal.SIGKILL, output
        assert not os.path.exists(tmp_path / "final.safetensors")
    code, output = finish(start(tmp_path, delay=0.0))
    assert code == 0 and "DONE" in output, output
    assert "resuming from" in output
    weights, log = reference
    assert final_weights(tmp_path) == weights
    assert logged(tmp_path) == log  # re-run batches are logged once, with the same values
    leftovers = [n for n in os.listdir(tmp_path / "checkpoints") if n.endswith(".tmp")]
    assert leftovers == []


def test_sigint_stops_after_the_batch_with_a_checkpoint(tmp_path, reference):
    rng = random.Random(7)
    proc = start(tmp_path)
    stop_mid_epoch(proc, rng, signal.SIGINT)
    code, output = finish(proc)
    assert code == 0, output
    assert "INTERRUPTED" in output
    found = re.search(r"stopped by SIGINT after batch (\d+) of epoch (\d): checkpoint (\S+);",
                      output)
    assert found, output
    batch, epoch, path = int(found[1]), int(found[2]), found[3]
    ckpt = pyburn.store.load_checkpoint(path, device="cpu")
    assert ckpt.step == (epoch - 1) * 25 + batch
    assert ckpt.extra["position"] == batch
    assert 0 < batch < 25
    code, output = finish(start(tmp_path, delay=0.0))
    assert code == 0 and "DONE" in output, output
    weights, log = reference
    assert final_weights(tmp_path) == weights
    assert logged(tmp_path) == log
