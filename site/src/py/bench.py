"""The benchmark page's Python: pyburn's benchmark suite (``pyburn.bench``) on the browser's
devices, the benchmarks ``pyburn bench --devices wgpu,wasm,flex NAME...`` runs on a desktop,
timed the same way, kept as the same records (``pyburn.bench.record``) and drawn by the same
board (``pyburn.bench.board``). The page runs this file once, then calls `families`, `run`
(and `stop` while it runs), `records_file` and `board` (see bench.js).

There is no PyTorch here (nor numpy, unless the site serves a full Pyodide): burn-bench's
families have their PyTorch peer "not installed", as on a desktop without it, and flex's own
benchmarks (matmul, elementwise, reduction) keep their peer, the plain Python a user would
write. The page compares the devices with each other.

A benchmark (a family on one device) runs whole inside the call; between two, control goes
back to the browser, so that a `stop` is heard. Its records go to the page as they are made
("bench-records", each as a line of the records file holds it), after a "bench-progress".
"""

import asyncio
from dataclasses import replace
from pathlib import Path

from pyburn_web import emit

from pyburn import bench
from pyburn.bench import board as drawn
from pyburn.bench import peers, provenance, record
from pyburn.bench.report import Report
from pyburn.bench.timing import Settings

#: where a run's records file is written (Pyodide's memory file system) for the download
FOLDER = Path("/tmp/bench")
#: families of the suite the page does not offer, and why
LEFT_OUT = {"kernel": "pyburn.kernel's autotuning compiled for minutes on Chromium's software "
                      "WebGPU adapter (SwiftShader), then lost the device"}
if peers.load("numpy") is None:  # npm's Pyodide; a full distribution serves numpy
    LEFT_OUT["to_device"] = "it moves numpy arrays, and numpy is not here"

_state = {"stopped": False, "records": [], "file": None}


def families(devices):
    """The families of the suite on `devices` but `LEFT_OUT`, in suite order: each one's
    name, what it measures and the devices it runs on (a family bound to one device runs
    there only)."""
    found = {}
    for benchmark in bench.catalogue(devices):
        if benchmark.family in LEFT_OUT:
            continue
        family = found.setdefault(benchmark.family, {"family": benchmark.family,
                                                     "about": benchmark.about, "devices": []})
        family["devices"].append(benchmark.device)
    return list(found.values())


def stop():
    """End the run after the benchmark in progress (its records so far are kept)."""
    _state["stopped"] = True


async def run(names, devices, size, repeat, min_time, browser, system, cpus):
    """Run the families `names` on `devices` at `size` ("small" or "full"), `repeat` timed
    runs of at least `min_time` seconds each, as ``pyburn bench --devices ... --size ...
    --repeat ... --min-time ...`` does; the machine is the page's (`provenance.in_page` of
    the user agent `browser`, ``navigator.platform`` `system` and the CPU count `cpus`).
    A benchmark that fails is skipped with its error. Returns the records file's name, how
    many records it holds, the benchmarks skipped (with why) and whether `stop` ended the
    run."""
    _state.update(stopped=False, records=[], file=None)
    settings = Settings(repeat=repeat, min_run_s=min_time, quick=size == "small")
    started = replace(record.Run.here(size), machine=provenance.in_page(browser, system, cpus))
    chosen = bench.select(names, devices)
    skipped = []
    for done, benchmark in enumerate(chosen):
        await asyncio.sleep(0)  # the browser hands over a stop request here
        if _state["stopped"]:
            break
        reason = benchmark.unavailable_reason()
        if reason is not None:
            skipped.append({"benchmark": benchmark.name, "reason": reason})
            continue
        emit("bench-progress", {"benchmark": benchmark.name, "done": done,
                                "total": len(chosen)})
        try:
            rows = benchmark.measure(settings)
        except Exception as exc:  # the page lists it, and the run goes on
            skipped.append({"benchmark": benchmark.name,
                            "reason": f"it failed ({type(exc).__name__}: {exc})"})
            continue
        made = record.records(Report(rows), started)
        _state["records"] += made
        emit("bench-records", [r.as_dict() for r in made])
    path = record.write(_state["records"], FOLDER) if _state["records"] else None
    _state["file"] = path
    return {"file": None if path is None else path.name, "records": len(_state["records"]),
            "skipped": skipped, "stopped": _state["stopped"]}


def records_file():
    """The last run's records file: its name and its text (JSON Lines), or None."""
    path = _state["file"]
    return None if path is None else {"name": path.name, "text": path.read_text()}


def board():
    """The last run's records drawn as ``pyburn bench board`` draws them: a whole HTML page."""
    return drawn.page(_state["records"])
