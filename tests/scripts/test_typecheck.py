"""scripts/typecheck.py, the baseline behind `make typecheck`: mypy's errors without line
numbers, a new error fails, a fixed one asks for --update, and --update only shrinks the list.
mypy itself is stood in for by canned output (the typecheck stage runs the real one)."""

from __future__ import annotations

import pytest
import stages
import tensor_stub
import typecheck

OUTPUT = """\
pyburn/a.py:10: error: Name "data" already defined on line 349  [no-redef]
pyburn/a.py:12: note: See https://mypy.rtfd.io for more
pyburn/b.py:3:7: error: Item "None" of "Node | None" has no attribute "kind"  [union-attr]
pyburn/b.py:9: error: Item "None" of "Node | None" has no attribute "kind"  [union-attr]
"""
A = 'pyburn/a.py: Name "data" already defined on line N  [no-redef]'
B = 'pyburn/b.py: Item "None" of "Node | None" has no attribute "kind"  [union-attr]'


def test_errors_are_normalized_without_line_numbers_or_notes():
    assert typecheck.normalize(OUTPUT) == {A: 1, B: 2}


def test_compare_counts_repeated_errors():
    current = typecheck.normalize(OUTPUT)
    assert typecheck.compare(current, current) == ([], [])
    new, fixed = typecheck.compare(current, typecheck.Counter({A: 1, B: 1}))
    assert (new, fixed) == ([B], [])
    new, fixed = typecheck.compare(typecheck.Counter({B: 1}), current)
    assert (new, fixed) == ([], [A, B])


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A baseline in tmp_path, a current stub, and mypy answering `state["output"]`."""
    state = {"output": OUTPUT}
    monkeypatch.setattr(typecheck, "BASELINE", tmp_path / "typecheck-baseline.txt")
    monkeypatch.setattr(tensor_stub, "main", lambda argv: 0)
    monkeypatch.setattr(typecheck, "run_mypy",
                        lambda args=(): (1 if state["output"] else 0, state["output"], 0.1))
    return state


def test_the_baseline_is_written_then_holds(fake, capsys):
    assert typecheck.main(["--update"]) == 0
    text = typecheck.BASELINE.read_text()
    assert text.startswith("# mypy's errors") and text.endswith(f"{A}\n{B}\n{B}\n")
    assert typecheck.main([]) == 0
    out = capsys.readouterr().out
    assert "mypy: errors found 3, listed in typecheck-baseline.txt 3" in out
    assert stages.closing_counts(out.splitlines()) is None  # not test counts in the table


def test_a_new_error_fails_with_mypys_line(fake, capsys):
    typecheck.write_baseline(typecheck.Counter({A: 1, B: 2}), typecheck.BASELINE)
    fake["output"] = OUTPUT + "pyburn/c.py:5: error: Bad thing  [misc]\n"
    assert typecheck.main([]) == 1
    err = capsys.readouterr().err
    assert "new errors (1)" in err and "pyburn/c.py:5: error: Bad thing  [misc]" in err
    assert typecheck.main(["--update"]) == 1  # the baseline does not grow
    assert "c.py" not in typecheck.BASELINE.read_text()


def test_a_fixed_error_asks_for_update_which_shrinks_the_baseline(fake, capsys):
    typecheck.write_baseline(typecheck.Counter({A: 1, B: 2}), typecheck.BASELINE)
    fake["output"] = OUTPUT.splitlines()[0] + "\n"
    assert typecheck.main([]) == 1
    err = capsys.readouterr().err
    assert "fixed errors (2) that typecheck-baseline.txt still lists: run `python " \
        "scripts/typecheck.py --update`" in err
    assert stages.closing_counts(err.splitlines()) is None
    assert typecheck.main(["--update"]) == 0
    assert typecheck.read_baseline(typecheck.BASELINE) == {A: 1}
    assert typecheck.main([]) == 0


def test_mypy_failing_to_run_is_not_a_pass(fake, monkeypatch):
    monkeypatch.setattr(typecheck, "run_mypy", lambda args=(): (2, "mypy: bad config", 0.1))
    assert typecheck.main([]) == 2


def test_a_stale_stub_stops_the_check(fake, monkeypatch):
    monkeypatch.setattr(tensor_stub, "main", lambda argv: 1)
    assert typecheck.main([]) == 1
