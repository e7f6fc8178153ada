"""The benchmark page: pyburn's suite at its smallest setting on WebGPU, wasm and flex gives a
row of the table per case and device, the run's charts, and a records file that
``pyburn.bench.record`` reads back, with the browser as its machine. Timings are never
asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyburn.bench import record

#: burn-bench's families the run has, with their cases at --size small (on every device), and
#: the family bound to flex (against plain Python)
FAMILIES = {"binary": 1, "reduce": 3}
ON_FLEX = "matmul"
DEVICES = ("wgpu", "wasm", "flex")
REPEAT = 3
FINISHED = "() => ['done', 'failed', 'stopped'].includes(window.benchDemo.state)"
ROWS = """rows => rows.map(r => [r.dataset.key, r.dataset.device, r.cells[4].textContent])"""


@pytest.fixture(scope="module")
def ran(module_web: object) -> object:
    """The page after a run of FAMILIES and ON_FLEX on DEVICES: small inputs, REPEAT timed
    runs of at least 10 ms each."""
    page = module_web.open("bench.html")
    for name, wanted in (("family", {*FAMILIES, ON_FLEX}), ("device", set(DEVICES))):
        for box in page.query_selector_all(f'input[name="{name}"]'):
            box.set_checked(box.get_attribute("value") in wanted)
    page.select_option("#size", "small")
    page.fill("#repeat", str(REPEAT))
    page.select_option("#min-time", "0.01")
    page.click("#start")
    page.wait_for_function(FINISHED, timeout=60_000)
    assert page.evaluate("() => window.benchDemo.state") == "done", page.inner_text("#status")
    return page


def test_a_row_per_case_and_device_grouped_by_case(ran: object, screenshot: object) -> None:
    rows = ran.eval_on_selector_all("#results tbody tr", ROWS)
    devices: dict[str, list[str]] = {}
    for key, device, _ in rows:
        devices.setdefault(key, []).append(device)
    for family, cases in FAMILIES.items():
        keys = [key for key in devices if key.startswith(f"{family}: ")]
        assert len(keys) == cases
        assert all(devices[key] == list(DEVICES) for key in keys)
    (matmul,) = [key for key in devices if key.startswith(f"{ON_FLEX}: ")]
    assert devices[matmul] == ["flex"]
    assert len(rows) == sum(FAMILIES.values()) * len(DEVICES) + 1
    # a case's rows are together, in the order the cases came
    assert [key for key, *_ in rows] == [key for key in devices for _ in devices[key]]
    # flex's own benchmark has its plain-Python peer; burn-bench's have none here (no PyTorch)
    peers = {(key, device): peer for key, device, peer in rows}
    assert "python" in peers[matmul, "flex"]
    assert all(peer == "–" for (key, _), peer in peers.items() if key != matmul)
    # the board's charts of the run: one per case
    assert ran.frame_locator("#board").locator("svg").count() == len(devices)
    screenshot(ran, "bench")


def test_the_records_download_in_the_desktops_format(ran: object, tmp_path: Path) -> None:
    with ran.expect_download() as got:
        ran.click("#download")
    path = tmp_path / got.value.suggested_filename
    got.value.save_as(path)
    made = record.read_file(path)
    assert len(made) == ran.eval_on_selector_all("#results tbody tr", "rows => rows.length")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(set(line) == set(r.as_dict()) for line, r in zip(lines, made))
    run = made[0].run
    assert all(r.run == run for r in made)
    assert path.name == run.file_name
    assert run.size == "small" and run.commit is None
    machine = run.machine
    assert machine["browser"] == ran.evaluate("() => navigator.userAgent")
    assert {"id", "cpu", "cpus", "platform", "python", "numpy", "torch", "webgpu"} < set(machine)
    assert "swiftshader" in machine["webgpu"].lower()
    for r in made:
        assert len(r.samples) == REPEAT and r.benchmark == f"{r.family}.{r.device}"
        assert r.adapter == (machine["webgpu"] if r.device == "wgpu" else None)
        assert r.summary.min <= r.summary.median <= r.summary.max
    (matmul,) = [r for r in made if r.family == ON_FLEX]
    assert [p.name for p in matmul.peers] == ["python (zip loops)"]
    assert matmul.peers[0].ratio is not None and len(matmul.peers[0].samples) == REPEAT


def test_stop_ends_the_run_after_the_benchmark_in_progress(ran: object) -> None:
    for box in ran.query_selector_all('input[name="family"]'):
        box.set_checked(True)
    ran.click("#start")
    ran.wait_for_function("() => window.benchDemo.records.length > 0", timeout=30_000)
    ran.click("#stop")
    ran.wait_for_function(FINISHED, timeout=30_000)
    demo = ran.evaluate("() => window.benchDemo")
    assert demo["state"] == "stopped" and demo["summary"]["stopped"]
    # the records so far are kept, and the run did not reach its last benchmark
    assert demo["summary"]["records"] == len(demo["records"]) > 0
    assert ran.evaluate("() => document.getElementById('progress').value") < ran.evaluate(
        "() => document.getElementById('progress').max")
    assert ran.is_enabled("#download")
