"""``pyburn bench web``: pyburn in headless Chromium, on WebGPU and on flex, against
TensorFlow.js 4.22 in the same browser.

What it measures, with the built site (``make site``) served from 127.0.0.1:

- cold start to first prediction: a fresh browser context (empty cache) opens the
  draw-a-digit page, which starts Pyodide, installs the wheel, fetches the weights; a digit
  is drawn and the clock stops when its probabilities are back (the goal: under 5 s);
- per-image latency: the page's round trip for one digit (preprocessing, the worker, the
  model, the read-back), WebGPU and flex;
- training throughput of the MNIST MLP (784-128-10, batch 64, Adam): pyburn in the page
  (``in_page.py``) on WebGPU and flex, and TF.js (``tfjs.html``) on its webgpu, cpu and wasm
  backends; pyburn's WebGPU against TF.js's WebGPU on the same adapter (goal: at least 1x),
  flex against TF.js's cpu and wasm backends.

TF.js comes from the repository's node_modules (npm devDependencies, ``npm ci``), so this
runs from a checkout, not from an installed wheel.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..report import Row, Target
from ..suite import Benchmark
from ..timing import Settings
from . import chromium

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SITE = ROOT / "site" / "dist"
NODE_MODULES = ROOT / "node_modules"
TFJS_PACKAGES = ("tfjs", "tfjs-backend-webgpu", "tfjs-backend-wasm")
READY_MS = 180_000
#: the first MNIST test image, a 7, drawn as 10×10 squares of the 280×280 canvas
PASTE = """(pixels) => {
  const pen = document.getElementById("canvas").getContext("2d");
  pen.fillStyle = "#000";
  pen.fillRect(0, 0, 280, 280);
  pixels.forEach((v, i) => {
    pen.fillStyle = `rgb(${v},${v},${v})`;
    pen.fillRect((i % 28) * 10, Math.floor(i / 28) * 10, 10, 10);
  });
}"""
ROUND_TRIP = """async () => {
  const started = performance.now();
  await window.mnistDemo.predict();
  return performance.now() - started;
}"""
FIRST_PREDICTION = "async () => { await window.mnistDemo.predict(); return performance.now(); }"
PYBURN_TRAIN = """
from pyburn.bench.web.in_page import train_throughput
await train_throughput({device!r}, {seconds}, {repeat})
"""
DEVICES = (("wgpu", "WebGPU"), ("flex", "flex"))
#: pyburn's device against each TF.js backend, and the ratio goal (None: reported only)
TRAIN_PEERS = (("wgpu", "webgpu", Target("ratio", at_least=True, bound=1.0)),
               ("flex", "cpu", None), ("flex", "wasm", None))
COLD_START_TARGET = Target("value", at_least=False, bound=5.0, unit="s")


def unavailable_reason() -> str | None:
    """Why the browser benchmarks cannot run here (with the fix), or None."""
    if not (SITE / ".built").exists():
        return "the site is not built: make site"
    missing = [p for p in TFJS_PACKAGES if not (NODE_MODULES / "@tensorflow" / p).is_dir()]
    if missing:
        return f"TF.js is not installed ({', '.join(missing)}): npm ci"
    return chromium.unavailable_reason()


def _digit() -> list[int]:
    from ...data.datasets import MNIST

    images, _ = MNIST(train=False, device="flex").tensors()
    return images[0].reshape(784).tolist()


def _open(browser: Any, url: str) -> tuple[Any, Any]:
    """A fresh context (nothing cached) and its page at `url`, once the page is ready."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("body[data-ready]", timeout=READY_MS)
    return context, page


def _row(case: str, unit: str, values: Sequence[float], best: Callable[..., float],
         peer: str = "-", peer_values: Sequence[float] | None = None,
         target: Target | None = None, quick: bool = False) -> Row:
    """A row from the runs measured in the browser (pyburn's and, if any, the peer's)."""
    value = statistics.median(values)
    peer_value = None if peer_values is None else statistics.median(peer_values)
    ratio = None if peer_value is None else value / peer_value
    return Row("web.chromium", case, unit, value, best(values), peer, peer_value, ratio,
               target, quick)


def _progress(message: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _inference(browser: Any, base: str, digit: list[int], repeat: int,
               quick: bool) -> list[Row]:
    rows = []
    for device, label in DEVICES:
        _progress(f"cold start and latency on {label} ...")
        starts: list[float] = []
        latencies: list[float] = []
        for _ in range(repeat):
            context, page = _open(browser, f"{base}mnist.html?device={device}")
            page.evaluate(PASTE, digit)
            starts.append(page.evaluate(FIRST_PREDICTION) / 1000)
            latencies.extend(page.evaluate(ROUND_TRIP) for _ in range(5 if quick else 20))
            context.close()
        rows.append(_row(f"cold start to first prediction, {label}", "s", starts, min,
                         target=COLD_START_TARGET, quick=quick))
        rows.append(_row(f"per-image latency (MNIST CNN), {label}", "ms", latencies, min,
                         quick=quick))
    return rows


def _training(browser: Any, base: str, seconds: float, repeat: int,
              quick: bool) -> list[Row]:
    context, page = _open(browser, f"{base}playground.html")
    ours = {}
    for device, label in DEVICES:
        _progress(f"pyburn training on {label} ...")
        # flex takes about a second a step: one step a run is all a run needs
        wanted = seconds if device == "wgpu" else 0.0
        code = PYBURN_TRAIN.format(device=device, seconds=wanted, repeat=repeat)
        ours[device] = page.evaluate("(code) => window.pyburn.run(code)", code)
    context.close()
    context, page = _open(browser, f"{base}bench/tfjs.html")
    version = page.evaluate("() => window.tfjsBench.version")
    theirs = {}
    for _, backend, _ in TRAIN_PEERS:
        _progress(f"TF.js training on {backend} ...")
        theirs[backend] = page.evaluate("([b, s, r]) => window.tfjsBench.train(b, s, r)",
                                        [backend, seconds, repeat])
    context.close()
    case = "MNIST MLP 784-128-10, batch 64, Adam"
    return [_row(f"{case}, pyburn {dict(DEVICES)[device]}", "samples/s", ours[device], max,
                 f"TF.js {version} {backend}", theirs[backend], target, quick)
            for device, backend, target in TRAIN_PEERS]


def measure(settings: Settings) -> list[Row]:
    """Every browser measurement (see the module docstring), in one headless Chromium."""
    from playwright.sync_api import sync_playwright

    repeat = 1 if settings.quick else 3
    seconds = 0.5 if settings.quick else 3.0
    digit = _digit()
    mounts = {"/": SITE, "/bench/": HERE, "/node_modules/": NODE_MODULES}
    with chromium.serve(mounts) as base, sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        try:
            rows = _inference(browser, base, digit, repeat, settings.quick)
            rows += _training(browser, base, seconds, repeat, settings.quick)
        finally:
            browser.close()
    return rows


BENCHMARKS = (
    Benchmark("web", "chromium", "pyburn in headless Chromium (WebGPU, flex) vs TF.js 4.22: "
              "cold start, latency, MLP training", measure, requires=unavailable_reason),
)
