"""A run without wgpu is the user's choice: tests/conftest.py stops a run that finds no
adapter unless $PYBURN_SKIP names wgpu, and a run that skips it sees no wgpu device at all.
Each case runs pytest on a few tests in a fresh process; $PYBURN_WGPU=0 stands for a machine
without a GPU or Mesa's driver (it hides every adapter)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PROBE = "tests/test_dtypes.py::test_dtype_lookup_accepts_names_aliases_and_python_types"


def _pytest(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYBURN_SKIP", "PYBURN_WGPU")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *args], cwd=TESTS.parent, env=environ | env,
                          capture_output=True, text=True, timeout=300)


def test_no_adapter_stops_the_run_before_any_test():
    done = _pytest({"PYBURN_WGPU": "0"}, PROBE)
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    message = done.stdout + done.stderr
    assert "the wgpu tests cannot run: wgpu is switched off" in message
    assert "PYBURN_SKIP=wgpu" in message and "passed" not in message


def test_skipping_wgpu_on_purpose_runs_the_rest_without_any_wgpu_device():
    done = _pytest({"PYBURN_SKIP": "wgpu"},  # an adapter here stays unused
                   "tests/conformance/test_creation.py", "-k", "zeros", "--collect-only")
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids and not any("[wgpu" in i or "-wgpu" in i for i in ids)
    assert any("[cpu" in i for i in ids) and any("[flex" in i for i in ids)
