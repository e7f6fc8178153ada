"""``pyburn bench web``: pyburn in headless Chromium, on WebGPU, wasm and flex, against
TensorFlow.js 4.22 and onnxruntime-web 1.31 in the same browser.

What it measures, with the built site (``make site``) served from 127.0.0.1:

- cold start to first prediction: a fresh browser context (empty cache) opens the
  draw-a-digit page, which starts Pyodide, installs the wheel, fetches the weights; a digit
  is drawn and the clock stops when its probabilities are back (the goal: under 5 s); TF.js
  does the same with the same CNN (random weights) on its webgpu, wasm and cpu backends;
- the first prediction after the page reports "ready" (the page's round trip: the page
  warms its device with a prediction while it loads; the goal: under 200 ms);
- per-image latency of that CNN: pyburn's time in the worker (the image to a tensor, the
  model, the read-back of the probabilities) against TF.js's time for the same steps, and
  the page's whole round trip (drawing to bars) in the case text; and on wasm, the time of
  predictions back to back as the page makes them (its forward pass captured, an image's
  bytes in, the probabilities out) against TF.js wasm's (goal: at least 1x), which a page's
  0.1 ms timer cannot round;
- training throughput of the MNIST MLP (784-128-10, batch 64, Adam): pyburn in the page
  (``in_page.py``) on WebGPU, wasm and flex, and TF.js (``tfjs.html``) on its webgpu, cpu
  and wasm backends; pyburn's WebGPU against TF.js's WebGPU on the same adapter, and
  pyburn's wasm against TF.js's wasm (goals: at least 1x), wasm and flex against TF.js's
  cpu and wasm backends;
- matmul 256^3 and 1024^3 GFLOP/s, pyburn's wasm device against TF.js's wasm backend
  (reported);
- the quantized products of ``pyburn bench quant`` in the page (ms per call, reported):
  64 x 1024 float32 rows times the int8 1024 x 1024 weight on pyburn's wasm device
  (``in_page.py``) against onnxruntime-web's wasm build on one thread (``ort.html``) running
  the ONNX files of ``pyburn.bench.quant.write_models`` on the same matrices: the dynamic
  product against the quantize_dynamic'ed MatMul and against the float32 MatMul, the integer
  product alone against MatMulInteger, and the weight-only product against pyburn's own
  float32 ``x @ W.T``; the outputs are checked first (the integer products equal, the
  dynamic ones within `DYNAMIC_TOLERANCE`).

TF.js and onnxruntime-web come from the repository's node_modules (npm devDependencies,
``npm ci``), so this runs from a checkout, not from an installed wheel.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import ResultMismatch
from .. import peers, quant
from ..report import Row, Target
from ..suite import Benchmark
from ..timing import Settings
from . import chromium

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SITE = ROOT / "site" / "dist"
NODE_MODULES = ROOT / "node_modules"
TFJS_PACKAGES = ("tfjs", "tfjs-backend-webgpu", "tfjs-backend-wasm")
ORT_WEB = NODE_MODULES / "onnxruntime-web"
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
PREDICT = """async () => {
  const started = performance.now();
  await window.mnistDemo.predict();
  return [performance.now() - started, window.mnistDemo.lastResult.ms, performance.now()];
}"""
PYBURN_TRAIN = """
from pyburn.bench.web.in_page import train_throughput
await train_throughput({device!r}, {seconds}, {repeat})
"""
PYBURN_LATENCY = """
from pyburn.bench.web.in_page import cnn_latency
await cnn_latency({count}, {repeat})
"""
PYBURN_MATMUL = """
from pyburn.bench.web.in_page import matmul_rate
await matmul_rate({device!r}, {size}, {repeat})
"""
PYBURN_QUANT = """
from pyburn.bench.web.in_page import quant_products
await quant_products({m}, {size}, {samples}, {min_ms})
"""
RUN = "(code) => window.pyburn.run(code)"
ORT_RUN = "(args) => window.ortBench.run(...args)"
#: a timed run of a quantized product lasts at least this many ms (its calls back to back)
QUANT_RUN_MS = 50.0
#: the largest difference of the dynamic products, relative to onnxruntime-web's largest
#: output
DYNAMIC_TOLERANCE = 1e-4
#: the matmul sizes measured, and the TF.js backend pyburn's wasm device meets there
MATMUL_SIZES = (256, 1024)
TFJS = "([name, ...args]) => window.tfjsBench[name](...args)"
#: pyburn's devices, and the TF.js backend each is compared with at inference
DEVICES = (("wgpu", "WebGPU", "webgpu"), ("wasm", "wasm", "wasm"), ("flex", "flex", "cpu"))
#: pyburn's device against each TF.js backend in training, and the ratio goal (None: none)
TRAIN_PEERS = (("wgpu", "webgpu", Target("ratio", at_least=True, bound=1.0)),
               ("wasm", "wasm", Target("ratio", at_least=True, bound=1.0)),
               ("wasm", "cpu", None), ("flex", "cpu", None), ("flex", "wasm", None))
COLD_START_TARGET = Target("value", at_least=False, bound=5.0, unit="s")
LATENCY_TARGET = Target("ratio", at_least=True, bound=1.0)
#: predictions a run of the back-to-back latency times
BACK_TO_BACK = 200
FIRST_AFTER_READY_TARGET = Target("value", at_least=False, bound=200.0, unit="ms")
MODEL = "MNIST CNN"
MLP = "MNIST MLP 784-128-10, batch 64, Adam"


def unavailable_reason() -> str | None:
    """Why the browser benchmarks cannot run here (with the fix), or None."""
    if not (SITE / ".built").exists():
        return "the site is not built: make site"
    missing = [p for p in TFJS_PACKAGES if not (NODE_MODULES / "@tensorflow" / p).is_dir()]
    if missing:
        return f"TF.js is not installed ({', '.join(missing)}): npm ci"
    if not (ORT_WEB / "dist").is_dir():
        return "onnxruntime-web is not installed: npm ci"
    if peers.load("numpy") is None or peers.load("onnxruntime") is None:
        return "numpy and onnxruntime make the ONNX files: pip install -e '.[dev]'"
    return chromium.unavailable_reason()


def _digit() -> list[int]:
    from ...data.datasets import MNIST  # import time: 30 ms (with pyburn.store), for web only

    images, _ = MNIST(train=False, device="flex").tensors()
    return images[0].reshape(784).tolist()


class _Browser:
    """The browser, the served site, and pages opened in fresh contexts (nothing cached)."""

    def __init__(self, browser: Any, base: str):
        self.browser, self.base = browser, base

    def open(self, path: str) -> tuple[Any, Any]:
        """A fresh context and its page at `path`, once the page is ready."""
        context = self.browser.new_context()
        page = context.new_page()
        page.goto(self.base + path)
        page.wait_for_selector("body[data-ready]", timeout=READY_MS)
        return context, page

    def tfjs(self, *call: object) -> Any:
        """``tfjsBench[name](...args)`` for `call` = (name, *args), in a fresh page."""
        context, page = self.open("bench/tfjs.html")
        try:
            return page.evaluate(TFJS, list(call))
        finally:
            context.close()


def _row(case: str, unit: str, values: Sequence[float], peer: str,
         peer_values: Sequence[float], target: Target | None, quick: bool) -> Row:
    """A row from the runs measured in the browser; "s" and "ms" are times (lower is
    faster), other units rates."""
    value, peer_value = statistics.median(values), statistics.median(peer_values)
    is_time = unit in ("s", "ms")
    ratio = peer_value / value if is_time else value / peer_value
    return Row("web.chromium", case, unit, value, (min if is_time else max)(values), peer,
               peer_value, ratio, target, quick, tuple(values), tuple(peer_values))


def _progress(message: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _inference(web: _Browser, digit: list[int], version: str, repeat: int,
               quick: bool) -> list[Row]:
    pixels = [v / 255 for v in digit]
    count = 5 if quick else 20
    rows = []
    for device, label, backend in DEVICES:
        _progress(f"cold start and latency on {label}, and TF.js on {backend} ...")
        starts, firsts, model_ms, round_trips = [], [], [], []
        for _ in range(repeat):
            context, page = web.open(f"mnist.html?device={device}")
            page.evaluate(PASTE, digit)
            first, _, since_start = page.evaluate(PREDICT)
            starts.append(since_start / 1000)
            firsts.append(first)
            for _ in range(count):
                round_trip, model, _ = page.evaluate(PREDICT)
                round_trips.append(round_trip)
                model_ms.append(model)
            context.close()
        peer = f"TF.js {version} {backend}"
        tfjs_starts = [web.tfjs("firstPrediction", backend, pixels) / 1000
                       for _ in range(repeat)]
        tfjs_ms = web.tfjs("latency", backend, pixels, count * repeat)
        rows.append(_row(f"cold start to first prediction ({MODEL}), {label}", "s", starts,
                         peer, tfjs_starts, COLD_START_TARGET, quick))
        rows.append(Row("web.chromium", f"first prediction after the page is ready ({MODEL}), "
                        f"{label}", "ms", statistics.median(firsts), min(firsts), "-", None,
                        None, FIRST_AFTER_READY_TARGET, quick, tuple(firsts)))
        round_trip = statistics.median(round_trips)
        rows.append(_row(f"per-image latency ({MODEL}), {label}; the page's round trip "
                         f"{round_trip:.0f} ms", "ms", model_ms, peer, tfjs_ms, None, quick))
    return rows


def _training(web: _Browser, version: str, seconds: float, repeat: int,
              quick: bool) -> list[Row]:
    context, page = web.open("playground.html")
    ours = {}
    for device, label, _ in DEVICES:
        _progress(f"pyburn training on {label} ...")
        # flex takes about a second a step: one round of steps is all a run needs
        wanted = 0.0 if device == "flex" else seconds
        code = PYBURN_TRAIN.format(device=device, seconds=wanted, repeat=repeat)
        ours[device] = page.evaluate(RUN, code)
    context.close()
    rows = []
    labels = {device: label for device, label, _ in DEVICES}
    for device, backend, target in TRAIN_PEERS:
        _progress(f"TF.js training on {backend} ...")
        theirs = web.tfjs("train", backend, seconds, repeat)
        rows.append(_row(f"{MLP}, pyburn {labels[device]}", "samples/s", ours[device],
                         f"TF.js {version} {backend}", theirs, target, quick))
    return rows


def _latency(web: _Browser, digit: list[int], version: str, repeat: int,
             quick: bool) -> list[Row]:
    """The captured CNN's per-image latency on wasm against TF.js wasm's, both timed over
    predictions back to back."""
    count = BACK_TO_BACK // 10 if quick else BACK_TO_BACK
    _progress(f"{count} predictions back to back on wasm, and TF.js on wasm ...")
    context, page = web.open("playground.html")
    ours = page.evaluate(RUN, PYBURN_LATENCY.format(count=count, repeat=repeat))
    context.close()
    theirs = web.tfjs("latencyBackToBack", "wasm", [v / 255 for v in digit], count, repeat)
    return [_row(f"per-image latency ({MODEL}), wasm captured, {count} predictions back to "
                 "back", "ms", ours, f"TF.js {version} wasm", theirs, LATENCY_TARGET, quick)]


def _matmul(web: _Browser, version: str, repeat: int, quick: bool) -> list[Row]:
    """matmul's GFLOP/s on the wasm device against TF.js's wasm backend (reported)."""
    context, page = web.open("playground.html")
    rows = []
    for size in MATMUL_SIZES[:1] if quick else MATMUL_SIZES:
        _progress(f"matmul {size}^3 on wasm, and TF.js on wasm ...")
        code = PYBURN_MATMUL.format(device="wasm", size=size, repeat=repeat)
        ours = page.evaluate(RUN, code)
        theirs = web.tfjs("matmul", "wasm", size, repeat)
        rows.append(_row(f"matmul {size}x{size} @ {size}x{size} float32, pyburn wasm",
                         "GFLOP/s", ours, f"TF.js {version} wasm", theirs, None, quick))
    context.close()
    return rows


def _quant(web: _Browser, models: Path, quick: bool) -> list[Row]:
    """The quantized products on pyburn's wasm device against onnxruntime-web's wasm build
    (reported), once their outputs agree; `models` is the folder served at /quant/."""
    np: Any = peers.load("numpy")
    m, size = (quant.QUICK[0][0], quant.QUICK[1]) if quick else (quant.ROWS[0], quant.SIZE)
    samples = 3 if quick else 10
    w, _, q = quant.int8_weight(np, size)
    quant.write_models(w, q, str(models))
    _progress(f"quantized products {m}x{size} @ {size}x{size} on wasm, and onnxruntime-web ...")
    context, page = web.open("playground.html")
    ours = page.evaluate(RUN, PYBURN_QUANT.format(m=m, size=size, samples=samples,
                                                  min_ms=QUANT_RUN_MS))
    context.close()
    floats = {"x": ["float32", [m, size], quant.float_input(m, size).data.tolist()]}
    integers = {"a": ["uint8", [m, size], [v for row in ours["a"] for v in row]],
                "az": ["uint8", [], [ours["a_zero"]]]}
    context, page = web.open("bench/ort.html")
    version = page.evaluate("() => window.ortBench.version")
    files = {name: [f"/quant/{name}.onnx", floats] for name in ("float", "dynamic")}
    files["integer"] = ["/quant/integer.onnx", integers]
    theirs = page.evaluate(ORT_RUN, [files, samples, QUANT_RUN_MS])
    context.close()
    _check_quant(np, ours, theirs)
    peer = f"onnxruntime-web {version} wasm"
    shape = f"{m}x{size} @ int8 {size}x{size}, pyburn wasm"
    times = ours["times"]
    return [_row(f"dynamic {shape}", "ms", times["dynamic"], f"{peer} quantize_dynamic'ed "
                 "MatMul", theirs["dynamic"]["times"], None, quick),
            _row(f"integer product {shape}", "ms", times["integer"], f"{peer} MatMulInteger",
                 theirs["integer"]["times"], None, quick),
            _row(f"weight-only {shape}", "ms", times["weight_only"],
                 "pyburn wasm float32 x @ W.T", times["float32"], None, quick),
            _row(f"dynamic {shape} (vs float32 MatMul)", "ms", times["dynamic"],
                 f"{peer} float32 MatMul", theirs["float"]["times"], None, quick)]


def _check_quant(np: Any, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Raises ResultMismatch unless pyburn's integer product equals onnxruntime-web's
    MatMulInteger and the dynamic products agree within `DYNAMIC_TOLERANCE`."""
    integer = np.array(ours["integer"], np.int64).ravel()
    if not np.array_equal(integer, np.array(theirs["integer"]["output"], np.int64)):
        wrong = int((integer != np.array(theirs["integer"]["output"])).sum())
        raise ResultMismatch(f"quantized products in the browser: pyburn's integer product "
                             f"differs from onnxruntime-web's MatMulInteger in {wrong} of "
                             f"{integer.size} elements")
    dynamic = np.array(ours["dynamic"], np.float64).ravel()
    reference = np.array(theirs["dynamic"]["output"], np.float64)
    error = float(np.abs(dynamic - reference).max() / np.abs(reference).max())
    if not error <= DYNAMIC_TOLERANCE:
        raise ResultMismatch(f"quantized products in the browser: pyburn's dynamic product "
                             f"differs from onnxruntime-web's quantize_dynamic'ed MatMul by "
                             f"{error:.2e} of its largest output (allowed: "
                             f"{DYNAMIC_TOLERANCE:.0e})")


@contextmanager
def opened(site: Path = SITE) -> Iterator[tuple[_Browser, Path]]:
    """A headless Chromium on the built `site`, served from 127.0.0.1 with this folder at
    /bench/, node_modules at /node_modules/ and an empty temporary folder at /quant/ (for the
    ONNX files); yields the browser and that folder. One part alone runs as
    ``with opened() as (web, models): _quant(web, models, quick=True)``."""
    from playwright.sync_api import sync_playwright  # optional: playwright

    # desktop only: the site's pages import this package (in_page) from a wheel without it
    from ...web.serve import serving

    with tempfile.TemporaryDirectory() as models, \
            serving({"/": site, "/bench/": HERE, "/node_modules/": NODE_MODULES,
                     "/quant/": Path(models)}) as base, sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        try:
            yield _Browser(browser, base), Path(models)
        finally:
            browser.close()


def measure(settings: Settings) -> list[Row]:
    """Every browser measurement (see the module docstring), in one headless Chromium."""
    repeat = 1 if settings.quick else 3
    seconds = 0.5 if settings.quick else 3.0
    digit = _digit()
    with opened() as (web, models):
        context, page = web.open("bench/tfjs.html")
        version = page.evaluate("() => window.tfjsBench.version")
        context.close()
        rows = _inference(web, digit, version, repeat, settings.quick)
        rows += _latency(web, digit, version, repeat, settings.quick)
        rows += _training(web, version, seconds, repeat, settings.quick)
        rows += _matmul(web, version, repeat, settings.quick)
        rows += _quant(web, models, settings.quick)
    return rows


BENCHMARKS = (
    Benchmark("web", "chromium", "pyburn in headless Chromium (WebGPU, wasm, flex) vs TF.js 4.22 "
              "and onnxruntime-web: cold start, latency, MLP training, quantized products",
              measure, requires=unavailable_reason),
)
