"""The run-your-own-code page: a Python file prints exactly what it prints on the desktop, and
an error shows the traceback Python would show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "site" / "src" / "examples"
DONE = "(runs) => window.playground.runs === runs"


def run_in_page(page: object, code: str) -> str:
    """Puts `code` in the editor, runs it, and returns the output pane's text."""
    runs = page.evaluate("() => window.playground.runs")
    page.fill("#editor", code)
    page.click("#run")
    page.wait_for_function(DONE, arg=runs + 1, timeout=120_000)
    return page.inner_text("#output")


@pytest.fixture(scope="module")
def page(module_web: object) -> object:
    """The playground, loaded once for the module's tests."""
    return module_web.open("playground.html")


def test_a_file_prints_the_same_in_the_page_and_on_the_desktop(page: object,
                                                               screenshot: object) -> None:
    source = EXAMPLES / "regression.py"
    desktop = subprocess.run([sys.executable, str(source)], capture_output=True, text=True,
                             check=True).stdout
    page.select_option("#examples", "regression.py")
    page.wait_for_function("() => document.getElementById('editor').value.includes('SGD')")
    assert page.input_value("#editor") == source.read_text()
    assert run_in_page(page, source.read_text()) == desktop
    assert page.evaluate("() => window.playground.ok") is True
    screenshot(page, "playground")


def test_kernels_run_in_the_page_as_on_the_desktop(page: object) -> None:
    """The kernels example (pyburn.kernel) on the page's devices (WebGPU, wasm, flex) prints
    what it prints on the desktop: the same kernels, compiled to WGSL for Chromium's
    WebGPU."""
    source = EXAMPLES / "kernels.py"
    desktop = subprocess.run([sys.executable, str(source)], capture_output=True, text=True,
                             check=True).stdout
    output = run_in_page(page, source.read_text())
    assert output == desktop
    assert output.endswith("agrees: True\n")
    # the kernels ran on WebGPU among the others, the row sums on SwiftShader's own
    # subgroups (4 wide), flex's and wasm's on emulated ones
    assert run_in_page(page, FEATURES).split() == ["wasm,wgpu,flex", "True"]


FEATURES = """import pyburn
from pyburn.kernel import wgsl_exec
print(",".join(d.name for d in pyburn.available_devices()))
print("subgroups" in wgsl_exec.gpu_of(pyburn.device("wgpu").backend)[0].runtime.features)
"""


KEPT = """import pyburn
from pyburn.kernel import examples, wgsl_exec
examples.gelu(pyburn.arange(4.0, device="wgpu")).tolist()
print(wgsl_exec.STATS.generated, wgsl_exec.STATS.from_disk)
"""


def test_the_next_visit_finds_its_shaders_in_indexeddb(module_web: object) -> None:
    """A kernel's WGSL, generated on one visit, is read back from IndexedDB on the next (a
    new page: a new worker, a new Python)."""
    first = run_in_page(module_web.open("playground.html"), KEPT).split()
    second = run_in_page(module_web.open("playground.html"), KEPT).split()
    assert sum(map(int, first)) == 1  # made here, or kept by an earlier test of the module
    assert second == ["0", "1"]


def test_every_example_runs(page: object) -> None:
    for example in sorted(EXAMPLES.glob("*.py")):
        output = run_in_page(page, example.read_text())
        assert page.evaluate("() => window.playground.ok") is True, output
        assert output.strip(), example.name


def test_an_error_shows_its_traceback(page: object, screenshot: object) -> None:
    output = run_in_page(page, "import pyburn\n\npyburn.ones(2, 3) @ pyburn.ones(2, 3)\n")
    assert page.evaluate("() => window.playground.ok") is False
    assert output.startswith("Traceback (most recent call last):\n  File \"snippet.py\", line 3")
    assert "ShapeError" in output.splitlines()[-1]
    screenshot(page, "playground-error")
