"""The ``pyburn`` command: ``info`` and the help texts.

``info`` runs in a fresh interpreter (``python -m pyburn``), because it resolves the default
device, which a process does once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import pyburn
from pyburn.cli import main
from pyburn.devices import device_report


def run_pyburn(*args: str, device: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pyburn ARGS`` with $PYBURN_DEVICE set to `device` (unset for None)."""
    env = {k: v for k, v in os.environ.items() if k != "PYBURN_DEVICE"}
    if device is not None:
        env["PYBURN_DEVICE"] = device
    return subprocess.run([sys.executable, "-m", "pyburn", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_info_lists_every_device_kind_and_the_default():
    result = run_pyburn("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"pyburn {pyburn.__version__} ")
    assert lines[1].startswith(f"Python {sys.version.split()[0]} ")
    report = device_report()
    for kind, reason in report:
        line = next(line for line in lines if line.split()[:1] == [kind])
        assert line.split(None, 1)[1] == ("available" if reason is None
                                          else f"unavailable: {reason}")
    fastest = next(kind for kind, reason in report if reason is None)
    assert lines[-1] == (f"default device: {fastest} "
                         "(the fastest available; set PYBURN_DEVICE to choose another)")


def test_info_names_pyburn_device_as_the_reason():
    result = run_pyburn("info", device="flex")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "default device: flex (from PYBURN_DEVICE=flex)"


def test_info_reports_a_bad_pyburn_device_after_the_table():
    result = run_pyburn("info", device="nosuchdevice")
    assert result.returncode == 1
    assert "devices, fastest first:" in result.stdout
    assert result.stderr.startswith("pyburn info: error: ")
    assert "nosuchdevice" in result.stderr


@pytest.mark.parametrize("argv", [["--help"], ["info", "--help"]])
def test_help_describes_the_commands(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pyburn")
    assert "info" in out and "device" in out


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: pyburn" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"pyburn {pyburn.__version__}"


def test_console_script_is_the_cli():
    (script,) = entry_points(group="console_scripts", name="pyburn")
    assert script.load() is main
