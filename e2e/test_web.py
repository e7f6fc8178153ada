"""A user's app shipped as a static site: examples/web/points (an ONNX model exported by
pyburn and a predict function) built with `pyburn web build`, served with `pyburn web serve`,
opened in Chromium with every request kept on localhost. The page's predictions equal the
desktop's, typed arrays in and out."""

from __future__ import annotations

import os
import queue
import runpy
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, Watched

import pyburn

EXAMPLE = ROOT / "examples" / "web"
PYBURN = Path(sys.executable).parent / "pyburn"
#: seconds the server may take to say where it listens
SERVER_START_S = 30
POINTS = [0.0, 0.5, -0.5, 0.0, 0.3, -0.3, 0.8, 0.1, -0.2, -0.7]


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """The example app with its model trained and exported, as its README says."""
    folder = tmp_path_factory.mktemp("example") / "points"
    shutil.copytree(EXAMPLE / "points", folder, ignore=shutil.ignore_patterns("model.onnx"))
    subprocess.run([sys.executable, str(EXAMPLE / "export_model.py"), "--out",
                    str(folder / "model.onnx")], check=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def built(app, tmp_path_factory) -> Path:
    """`pyburn web build` with its defaults: Pyodide from npm (cached), brotli at 11."""
    out = tmp_path_factory.mktemp("site") / "dist"
    done = subprocess.run([str(PYBURN), "web", "build", str(app), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    return out


@pytest.fixture(scope="module")
def served(built) -> Iterator[str]:
    """`pyburn web serve` on a free port; the base URL it prints."""
    server = subprocess.Popen([str(PYBURN), "web", "serve", str(built), "--port", "0"],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(server.stdout.readline()), daemon=True).start()
    try:
        first = lines.get(timeout=SERVER_START_S)
        url = next(word for word in first.split() if word.startswith("http://127.0.0.1:"))
        yield url.rstrip(";")
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def page(browser, served) -> Iterator[object]:
    """The built page, opened once it is ready, with what its server sent recorded."""
    watched = Watched(browser, served)
    encodings: dict[str, str | None] = {}
    watched.context.on("response", lambda r: encodings.__setitem__(
        r.url.removeprefix(served), r.headers.get("content-encoding")))
    try:
        opened = watched.open("")
        opened.encodings = encodings
        yield opened
        watched.check()
    finally:
        watched.close()


def desktop_predict(app: Path, points: list[float]) -> list[list[float]]:
    """What the app's predict gives on this machine."""
    namespace = runpy.run_path(str(app / "app.py"))
    return namespace["predict"](points).tolist()


def test_the_page_runs_the_app(page, screenshot):
    assert page.get_attribute("body", "data-error") is None, page.inner_text("#output")
    assert page.inner_text("#status").startswith("ready in")
    output = page.inner_text("#output")
    assert "(+0.0, +0.5) -> class" in output and "main() returned [" in output
    assert page.inner_text("#exports").split() == ["predict", "main"]
    screenshot(page, "web-build-points")


def test_predictions_equal_the_desktops(page, app):
    got = page.evaluate("""async (points) => {
        const probabilities = await window.py.call("predict", new Float32Array(points));
        return {kind: probabilities.constructor.name, shape: probabilities.shape,
                values: Array.from(probabilities)};
    }""", POINTS)
    expected = desktop_predict(app, POINTS)
    assert (got["kind"], got["shape"]) == ("Float32Array", [len(POINTS) // 2, 3])
    assert got["values"] == pytest.approx([p for row in expected for p in row], abs=1e-5)


def test_int_and_byte_arrays_cross_both_ways(page):
    got = page.evaluate("""async () => {
        await window.py.run("import pyburn\\ndef twice(x):\\n    return pyburn.tensor(x) * 2");
        const ints = await window.py.call("twice", new Int32Array([1, -2, 3]));
        const bytes = await window.py.call("twice", new Uint8Array([1, 2, 200]));
        return [ints.constructor.name, Array.from(ints), bytes.constructor.name,
                Array.from(bytes)];
    }""")
    assert got == ["Int32Array", [2, -4, 6], "Uint8Array", [2, 4, 144]]  # uint8 wraps


def test_the_runtime_came_precompressed(page):
    assert page.encodings["pyodide/pyodide.asm.wasm"] in ("br", "gzip")
    assert page.encodings[f"wheels/pyburn-{pyburn.__version__}-py3-none-any.whl"] in ("br", "gzip")
