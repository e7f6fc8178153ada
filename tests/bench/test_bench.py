"""Smoke tests of ``pyburn bench``: every benchmark runs on tiny inputs and reports rows of the
documented structure. Timings are never asserted (they depend on the machine and its load);
verdicts are checked on rows built by hand.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from pyburn import bench
from pyburn.bench import peers
from pyburn.bench.report import Report, Row, Target
from pyburn.bench.suite import unavailable
from pyburn.bench.timing import Settings, Timing, measure, speed_ratio
from pyburn.cli import main

TINY = Settings(repeat=2, warmup=0, min_run_s=0.0, quick=True)
TINY_ARGS = ["--size", "small", "--repeat", "2", "--warmup", "0", "--min-time", "0"]
VERDICTS = {"pass", "MISS", "-", "no peer", "quick"}
#: burn-bench's families, which run on any device
BURN_BENCH = {"unary", "binary", "custom_gelu", "reduce", "gemm", "softmax", "conv2d",
              "max_pool2d", "conv3d", "conv_transpose2d", "conv_transpose3d", "attention",
              "transformer", "lstm", "random", "launch_overhead", "to_device", "load_record"}
ROW_KEYS = {"benchmark", "case", "unit", "value", "best", "peer", "peer_value", "ratio",
            "target", "verdict"}


@pytest.fixture(autouse=True)
def _records_in_tmp(tmp_path, monkeypatch):
    """Runs write their records to ./benchmarks: here, a fresh folder, not the repository's."""
    monkeypatch.chdir(tmp_path)


def check_row(row: Row, name: str) -> None:
    """A row as every benchmark must produce it."""
    assert row.benchmark == name
    assert row.case and row.unit and row.peer
    assert math.isfinite(row.value) and row.value > 0
    assert math.isfinite(row.best) and row.best > 0
    assert (row.peer_value is None) == (row.ratio is None)
    if row.ratio is not None:
        assert row.peer_value > 0 and row.ratio > 0
    assert row.verdict in VERDICTS
    assert row.verdict in (("-",) if row.target is None else ("quick",))
    assert all(math.isfinite(v) and v > 0 for v in row.samples + row.peer_samples)
    assert not row.peer_samples or row.peer_value is not None


@pytest.mark.parametrize("benchmark", bench.BENCHMARKS, ids=lambda b: b.name)
def test_every_benchmark_runs_on_tiny_inputs(benchmark):
    if reason := benchmark.unavailable_reason():
        pytest.skip(reason)
    rows = benchmark.measure(TINY)
    assert rows
    for row in rows:
        check_row(row, benchmark.name)


def test_every_family_is_selectable_and_listed(capsys):
    families = {b.family for b in bench.BENCHMARKS}
    assert families == {"matmul", "overhead", "elementwise", "reduction", "conv",
                        "autodiff", "train", "amp", "distributed", "all_reduce", "rl", "store",
                        "onnx", "quant", "quant_size", "models", "gpu", "kernel", "remote",
                        "remote_transfer", "wasm", "web"} | BURN_BENCH
    for family in families:
        assert {b.family for b in bench.select([family])} == {family}
    assert bench.select([]) == list(bench.BOUND)  # burn-bench's run when named
    assert main(["bench", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [b.name for b in bench.BENCHMARKS]


def test_devices_choose_the_benchmarks_and_where_burn_bench_families_run():
    assert {b.device for b in bench.BENCHMARKS if b.family in BURN_BENCH} == {"cpu", "wgpu"}
    address = "remote+ws://127.0.0.1:1"
    chosen = bench.select([], ["flex", address])
    assert {b.device for b in chosen} == {"flex", address}
    assert [b.name for b in chosen if b.family == "matmul"] == ["matmul.flex"]
    assert {b.family for b in chosen if b.device == address} == BURN_BENCH
    assert [b.name for b in bench.select(["gemm", "unary.flex"], ["flex", "cpu"])] == [
        "unary.flex", "gemm.flex", "gemm.cpu"]


def test_a_burn_bench_family_on_a_named_device(capsys):
    assert main(["bench", "--json", *TINY_ARGS, "--devices", "flex", "gemm"]) == 0
    report = json.loads(capsys.readouterr().out)
    cases = [row["case"] for row in report["rows"]]
    assert {row["benchmark"] for row in report["rows"]} == {"gemm.flex"}
    assert len(cases) == len(set(cases)) == 6  # four squares, batched, fused


def test_json_report_structure(capsys):
    assert main(["bench", "--json", *TINY_ARGS, "matmul", "reduction.flex"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"environment", "rows", "skipped"}
    assert {"pyburn", "python", "platform", "cpus", "numpy", "torch"} <= set(report["environment"])
    ran = {row["benchmark"] for row in report["rows"]}
    skipped = {entry["benchmark"] for entry in report["skipped"]}
    assert ran | skipped == {"matmul.flex", "matmul.cpu", "reduction.flex"}
    for row in report["rows"]:
        assert set(row) == ROW_KEYS
        assert row["verdict"] in VERDICTS


def test_table_has_a_line_per_row(capsys):
    assert main(["bench", *TINY_ARGS, "overhead", "matmul.flex"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("benchmark "))
    for word in ("pyburn", "best", "peer value", "ratio", "target"):
        assert word in lines[header]
    body = lines[header + 1:]
    assert sum(line.startswith("matmul.flex ") for line in body) == 1
    ran_overhead = unavailable("cpu") is None
    assert sum(line.startswith("overhead.cpu ") for line in body) == (2 if ran_overhead else 0)
    assert "running matmul.flex" in captured.err  # progress stays off stdout


def test_unknown_benchmark_is_an_error(capsys):
    assert main(["bench", "nosuchbench"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pyburn bench: error: ") and "nosuchbench" in err


def test_missing_peer_is_reported_not_a_crash(monkeypatch):
    if reason := unavailable("cpu"):
        pytest.skip(reason)
    monkeypatch.setitem(peers._loaded, "torch", None)
    rows = bench.select(["overhead.cpu"])[0].measure(TINY)
    torch_row = next(row for row in rows if row.peer == "torch")
    assert torch_row.peer_value is None and torch_row.ratio is None
    assert "not installed" in Report(rows=rows).as_table()
    assert peers.versions()["torch"] == "not installed"


def test_without_numpy_or_torch_the_cpu_benchmarks_are_skipped(tmp_path):
    # Pyodide's situation: neither peer nor the cpu device exists; flex still runs.
    code = ("import sys; sys.modules['numpy'] = sys.modules['torch'] = None\n"
            "from pyburn.cli import main\n"
            f"sys.exit(main(['bench', '--json', *{TINY_ARGS!r}, 'matmul']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [row["benchmark"] for row in report["rows"]] == ["matmul.flex"]
    assert [entry["benchmark"] for entry in report["skipped"]] == ["matmul.cpu"]
    assert "numpy" in report["skipped"][0]["reason"]
    assert report["environment"]["numpy"] == report["environment"]["torch"] == "not installed"


def row(target: Target | None, value: float = 10.0, peer_value: float | None = 5.0,
        ratio: float | None = 2.0, quick: bool = False) -> Row:
    """A hand-made row, for checking verdicts."""
    return Row("x.flex", "case", "us", value, value, "peer", peer_value, ratio, target, quick)


@pytest.mark.parametrize(("target", "kwargs", "verdict"), [
    (None, {}, "-"),
    (Target("value", at_least=False, bound=5.0, unit="us"), {"value": 4.0}, "pass"),
    (Target("value", at_least=False, bound=5.0, unit="us"), {"value": 6.0}, "MISS"),
    (Target("value", at_least=False, bound=5.0, unit="us"),
     {"value": 4.0, "peer_value": None, "ratio": None}, "pass"),
    (Target("ratio", at_least=True, bound=0.95), {"ratio": 0.95}, "pass"),
    (Target("ratio", at_least=True, bound=0.95), {"ratio": 0.5}, "MISS"),
    (Target("ratio", at_least=True, bound=0.95), {"peer_value": None, "ratio": None}, "no peer"),
    (Target("ratio", at_least=True, bound=0.95), {"ratio": 0.5, "quick": True}, "quick"),
])
def test_verdicts(target, kwargs, verdict):
    assert row(target, **kwargs).verdict == verdict


def test_measure_interleaves_and_pairs_runs():
    order = []
    times = measure({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                    Settings(repeat=3, warmup=1, min_run_s=0.0))
    assert order == ["a", "a", "b", "b"] + ["a", "b"] * 3  # warm-up + probe each, then ABAB
    assert all(len(t.runs) == 3 and t.calls_per_run == 1 for t in times.values())
    # Ratios are taken run by run: a slow pair (load) does not skew the result.
    assert speed_ratio(Timing((1.0, 10.0, 1.0), 1), Timing((2.0, 20.0, 2.0), 1)) == 2.0
