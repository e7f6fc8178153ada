"""scripts/stages.py, the runner behind `make test`: stages in order, $PYBURN_SKIP honoured
and checked, a failed set-up stage ending the run, and the closing table's counts. A small
shell script stands in for make: it prints a pytest-like closing line and fails the targets
named in $FAIL."""

from __future__ import annotations

import pytest
import stages
from stages import STAGES, Stage, closing_counts, run, skipped_parts, summary

FAKE_MAKE = """#!/bin/sh
target="$2"
echo "running $target"
for bad in $FAIL; do
  if [ "$bad" = "$target" ]; then echo "1 failed, 2 passed in 0.01s"; exit 2; fi
done
echo "3 passed, 1 skipped in 0.01s"
"""
PLAN = (Stage("set-up", "setup", setup=True), Stage("unit", "unit"),
        Stage("browser tests", "e2e", part="browser"), Stage("last", "last"))


@pytest.fixture
def make(tmp_path):
    path = tmp_path / "make"
    path.write_text(FAKE_MAKE)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("line, counts", [
    ("30389 passed, 12 skipped in 1500.25s (0:25:00)", {"passed": 30389, "skipped": 12}),
    ("1 failed, 20 passed, 2 errors in 3.00s", {"failed": 1, "passed": 20, "error": 2}),
    ("15 passed in 61.2s", {"passed": 15}),
    ("wrote 3 passed checks to a file", None),
])
def test_closing_counts_read_pytests_last_line(line, counts):
    assert closing_counts(["....", line, ""]) == counts


def test_every_stage_passes_and_is_counted(make, monkeypatch, capsys):
    monkeypatch.delenv("FAIL", raising=False)
    outcomes, ok = run(make, PLAN, skipped=set())
    assert ok and [o.status for o in outcomes] == ["passed"] * 4
    out = capsys.readouterr().out
    assert out.index("running setup") < out.index("running unit") < out.index("running last")
    table = summary(outcomes, set(), 61.0)
    assert table.splitlines()[0] == "make test, 1m01s in all:"
    assert table.splitlines()[-1] == "tests: 12 passed, 0 failed, 4 skipped"


def test_a_skipped_part_is_not_run_and_says_why(make, monkeypatch, capsys):
    monkeypatch.delenv("FAIL", raising=False)
    outcomes, ok = run(make, PLAN, skipped={"browser"})
    assert ok and [o.status for o in outcomes] == ["passed", "passed", "skipped", "passed"]
    assert "running e2e" not in capsys.readouterr().out
    table = summary(outcomes, {"browser"}, 1.0)
    assert "PYBURN_SKIP=browser" in table
    assert f"skipped on purpose: browser ({stages.PARTS['browser']})" in table


def test_a_failed_test_stage_lets_the_others_run(make, monkeypatch):
    monkeypatch.setenv("FAIL", "unit")
    outcomes, ok = run(make, PLAN, skipped=set())
    assert not ok and [o.status for o in outcomes] == ["passed", "failed", "passed", "passed"]
    assert summary(outcomes, set(), 1.0).splitlines()[-1] == "tests: 11 passed, 1 failed, " \
        "3 skipped"


def test_a_failed_set_up_stage_ends_the_run(make, monkeypatch, capsys):
    monkeypatch.setenv("FAIL", "setup")
    outcomes, ok = run(make, PLAN, skipped=set())
    assert not ok and [o.status for o in outcomes] == ["failed", "not run", "not run", "not run"]
    assert "running unit" not in capsys.readouterr().out


def test_a_failed_stage_without_test_counts_is_a_failure_in_the_totals():
    outcomes = [stages.Outcome(PLAN[0], "failed", 2.0), stages.Outcome(PLAN[1], "not run")]
    table = summary(outcomes, set(), 2.0)
    assert table.splitlines()[-1] == "tests: 0 passed, 1 failed, 0 skipped"
    assert "not run" in table.splitlines()[2]


def test_pyburn_skip_is_checked(monkeypatch):
    monkeypatch.setenv("PYBURN_SKIP", "wgpu, browser")
    assert skipped_parts() == {"wgpu", "browser"}
    monkeypatch.setenv("PYBURN_SKIP", "wgpu,gpu")
    with pytest.raises(SystemExit, match="PYBURN_SKIP names gpu.*the parts are: wgpu, pyodide"):
        skipped_parts()


def test_every_stage_is_a_make_target_of_a_known_part():
    from pathlib import Path

    makefile = (Path(stages.__file__).parents[1] / "Makefile").read_text()
    targets = {line.split(":")[0] for line in makefile.splitlines() if ":" in line}
    assert {s.target for s in STAGES} <= targets
    assert {s.part for s in STAGES} - {None} <= set(stages.PARTS)


def test_the_type_check_runs_after_lint_and_before_the_tests():
    names = [s.name for s in STAGES]
    assert names.index("lint") + 1 == names.index("typecheck") < names.index("doctests")
