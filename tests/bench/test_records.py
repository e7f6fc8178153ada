"""Records of ``pyburn bench`` runs, their history and ``pyburn bench compare``: structure and
statistics only. Runs are tiny and their timings never asserted; the comparisons are checked
on samples built by hand, and the Mann–Whitney U test against scipy's."""

from __future__ import annotations

import json
import random
import re
import statistics

import pytest

from pyburn.bench import compare, history, provenance, record, stats
from pyburn.bench.cli import with_action
from pyburn.bench.record import Peer, Record, Run
from pyburn.bench.suite import unavailable
from pyburn.cli import main
from pyburn.errors import FormatError

TINY_ARGS = ["--size", "small", "--repeat", "3", "--warmup", "0", "--min-time", "0"]
RECORD_KEYS = {"format", "benchmark", "case", "device", "adapter", "unit", "higher_is_better",
               "samples", "median", "min", "max", "iqr", "peers", "run"}
PEER_KEYS = {"peer", "value", "ratio", "samples", "target", "verdict"}
RUN_KEYS = {"time", "pyburn", "commit", "machine", "size"}
MACHINE_KEYS = {"id", "cpu", "cpus", "platform", "python", "numpy", "torch"}


def made(samples, *, unit="ms", time="2026-12-01T10:00:00Z", machine="m1",
         benchmark="matmul.cpu", case="1024x1024 @ 1024x1024 f32") -> Record:
    """A record built by hand, of `samples`, from a run at `time` on `machine`."""
    run = Run(time, "0.1.0", "a" * 40, {"id": machine, "cpu": "test", "cpus": 2}, "full")
    peer = Peer("numpy 2.4.6", 1.0, 1.0, (1.0, 1.1), ">= 0.95x", "pass")
    return Record(benchmark, case, benchmark.split(".")[1], None, unit, tuple(samples),
                  (peer,), run)


def around(centre: float, seed: int, n: int = 15, spread: float = 0.02) -> list[float]:
    """`n` samples scattered by about `spread` (relative) around `centre`, skewed upward as
    timings are."""
    draw = random.Random(seed)
    return [centre * (1 + spread * draw.gauss(0, 1) + spread * draw.expovariate(2))
            for _ in range(n)]


def test_a_run_writes_a_record_per_case(tmp_path, capsys):
    assert main(["bench", *TINY_ARGS, "--record", str(tmp_path), "matmul.flex",
                 "overhead"]) == 0
    assert "records: " in capsys.readouterr().err
    (path,) = tmp_path.glob("*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    names = [line["benchmark"] for line in lines]
    ran_cpu = unavailable("cpu") is None
    assert names == ["matmul.flex"] + (["overhead.cpu"] if ran_cpu else [])
    for line in lines:
        assert set(line) == RECORD_KEYS and line["format"] == record.FORMAT
        assert line["device"] == line["benchmark"].split(".")[1] and line["adapter"] is None
        assert len(line["samples"]) == 3
        assert line["min"] <= line["median"] <= line["max"] and line["iqr"] >= 0
        assert line["median"] == statistics.median(line["samples"])
        assert set(line["run"]) == RUN_KEYS and line["run"]["size"] == "small"
        assert set(line["run"]["machine"]) == MACHINE_KEYS
        assert re.fullmatch("[0-9a-f]{40}", line["run"]["commit"])  # run from the checkout
        for peer in line["peers"]:
            assert set(peer) == PEER_KEYS
            assert (peer["value"] is None) == (peer["samples"] == [])
    if ran_cpu:  # one measurement against two peers: one record, two peers
        assert [p["peer"].split()[0] for p in lines[1]["peers"]] == ["torch", "numpy"]
    assert path.name.startswith(lines[0]["run"]["time"].replace("-", "").replace(":", ""))


def test_records_round_trip(tmp_path):
    records = [made([3.0, 1.0, 2.0]), made([5.0], unit="M elem/s", case="other")]
    path = record.write(records, tmp_path / "new")
    assert record.read([path]) == records == record.read([tmp_path / "new"])
    assert records[0].as_dict()["median"] == 2.0 and records[0].as_dict()["iqr"] == 1.0
    assert [r.as_dict()["higher_is_better"] for r in records] == [False, True]


def test_a_file_that_is_not_records_is_a_format_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "pyburn-bench/1"}\n')
    with pytest.raises(FormatError, match="bad.jsonl:1"):
        record.read([bad])
    with pytest.raises(FormatError, match="no such"):
        record.read([tmp_path / "missing"])


def test_summary_matches_numpys_percentiles():
    np = pytest.importorskip("numpy")
    samples = around(10.0, seed=1, n=14)
    got = stats.summary(samples)
    q1, q3 = np.percentile(samples, [25, 75])
    assert got.iqr == pytest.approx(q3 - q1)
    assert (got.median, got.min, got.max) == (np.median(samples), min(samples), max(samples))
    assert stats.summary([4.0]) == stats.Summary(4.0, 4.0, 4.0, 0.0)


@pytest.mark.parametrize("seed", range(40))
def test_mann_whitney_u_matches_scipy(seed):
    scipy_stats = pytest.importorskip("scipy.stats")
    draw = random.Random(seed)
    n1, n2 = draw.randint(1, 25), draw.randint(1, 25)
    # rounded to one decimal so that ties are common
    a = [round(draw.gauss(0, 1), 1) for _ in range(n1)]
    b = [round(draw.gauss(draw.choice([0, 0.5, 2]), 1), 1) for _ in range(n2)]
    expected = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    u, p = stats.mann_whitney_u(a, b)
    assert u == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-12)


def test_mann_whitney_u_of_identical_samples():
    assert stats.mann_whitney_u([1.0, 1.0], [1.0, 1.0, 1.0]) == (3.0, 1.0)
    assert stats.mann_whitney_u([], [1.0]) == (0.0, 1.0)


@pytest.mark.parametrize(("before", "after", "unit", "verdict"), [
    (around(10.0, seed=1), around(11.0, seed=2), "ms", compare.SLOWER),  # 10 % more time
    (around(10.0, seed=1), around(9.0, seed=2), "ms", compare.FASTER),
    (around(10.0, seed=1), around(10.0, seed=2), "ms", compare.SAME),  # noise
    # significant (the samples hardly spread), but a change of 2 %
    (around(10.0, seed=1, spread=0.001), around(10.2, seed=2, spread=0.001), "ms",
     compare.SAME),
    (around(10.0, seed=1), around(9.0, seed=2), "M elem/s", compare.SLOWER),  # a rate fell
    (around(10.0, seed=1), [11.0], "ms", compare.SAME),  # one sample cannot be significant
])
def test_compare_flags_significant_slowdowns_only(before, after, unit, verdict):
    change = compare.judge(made(before, unit=unit),
                           made(after, unit=unit, time="2026-12-02T10:00:00Z"))
    assert change.verdict == verdict
    assert change.change == pytest.approx(statistics.median(after) / statistics.median(before)
                                          - 1)


def test_compare_noise_is_never_a_regression():
    # the same distribution drawn again and again: at alpha 0.01, beyond the 5 % threshold
    for seed in range(50):
        change = compare.judge(made(around(10.0, seed=seed)),
                               made(around(10.0, seed=1000 + seed)))
        assert change.verdict == compare.SAME


def test_compare_command_exit_status_and_same_machine(tmp_path, capsys):
    baseline = tmp_path / "benchmarks"
    record.write([made(around(10.0, seed=1), machine="m1")], baseline)
    record.write([made(around(20.0, seed=2), machine="m2", time="2026-12-02T10:00:00Z")],
                 baseline)
    slower = record.write([made(around(11.0, seed=3), machine="m1",
                                time="2026-12-03T10:00:00Z")], tmp_path / "new")
    # against m1's record it is 10 % slower; against the newest (m2's) twice as fast
    assert main(["bench", "compare", "--same-machine", str(baseline), str(slower)]) == 1
    out = capsys.readouterr().out
    assert "slower" in out and "1 slower" in out
    assert main(["bench", "compare", str(baseline), str(slower)]) == 0
    assert "1 faster" in capsys.readouterr().out
    alone = record.write([made([1.0], machine="m3", time="2026-12-04T10:00:00Z")],
                         tmp_path / "m3")
    assert main(["bench", "compare", "--same-machine", str(baseline), str(alone)]) == 0
    assert "1 without a baseline" in capsys.readouterr().out


def test_history_lists_each_case_in_time_order(tmp_path, capsys):
    later = made([2.0, 2.2], time="2026-12-02T10:00:00Z")
    other = made([1.0], benchmark="reduction.cpu", case="sum()")
    record.write([later], tmp_path)
    record.write([made([1.0, 1.1]), other], tmp_path)
    assert [r.run.time for r in history.by_case(record.read([tmp_path]))[later.key]] == [
        "2026-12-01T10:00:00Z", "2026-12-02T10:00:00Z"]
    assert main(["bench", "history", "--dir", str(tmp_path), "matmul"]) == 0
    out = capsys.readouterr().out
    assert "matmul.cpu" in out and "reduction.cpu" not in out
    assert out.index("2026-12-01 10:00") < out.index("2026-12-02 10:00")
    assert "1.05 ms" in out and "2.10 ms" in out and "1.00x numpy 2.4.6" in out


def test_bench_without_a_command_runs():
    assert with_action(["bench"]) == ["bench", "run"]
    assert with_action(["bench", "--json", "matmul"]) == ["bench", "run", "--json", "matmul"]
    assert with_action(["bench", "--help"]) == ["bench", "--help"]
    assert with_action(["info"]) == ["info"]


def test_a_page_describes_its_machine():
    """The site's benchmark page: the browser says what the machine is; the id leaves out
    the browser's version, as a desktop's leaves out Python's."""
    agent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/156.0.0.0"
    machine = provenance.in_page(agent, "Linux x86_64", 8)
    assert set(machine) == MACHINE_KEYS | {"browser", "webgpu"}
    assert (machine["browser"], machine["cpu"], machine["cpus"]) == (agent, "Linux x86_64", 8)
    newer = agent.replace("156.0.0.0", "157.0.1.2")
    assert provenance.in_page(newer, "Linux x86_64", 8)["id"] == machine["id"]
    assert provenance.in_page(agent, "Linux x86_64", 4)["id"] != machine["id"]
    assert provenance.in_page(agent, "Linux x86_64", 8)["id"] != provenance.machine()["id"]
