"""pyburn's WebGPU runtime in the page's worker: the device order, uploads and reads of
every dtype, synchronous reads through JSPI, and the error that names the `_async` form
where a synchronous read cannot wait."""

from __future__ import annotations

import pytest

RUN = "(code) => window.pyburn.run(code)"


@pytest.fixture(scope="module")
def page(module_web: object) -> object:
    """A page with pyburn started (the playground, whose code is not used here)."""
    return module_web.open("playground.html")


def run(page: object, code: str) -> object:
    """The value of the last expression of `code`, run in the page's Python."""
    return page.evaluate(RUN, code)


def test_a_fallback_adapter_ranks_after_wasm(page: object) -> None:
    """Chromium's SwiftShader is a fallback adapter: the wasm device's kernels come first."""
    assert run(page, "import pyburn\n[d.name for d in pyburn.available_devices()]") == [
        "wasm", "wgpu", "flex"]
    assert run(page, "str(pyburn.default_device())") == "wasm"
    assert run(page, "from pyburn.backends import wgpu\n"
                     "info = wgpu.adapters()[0][0]\n[info.backend, info.is_software]") == [
        "WebGPU", True]


def test_uploads_and_reads_keep_every_value(page: object) -> None:
    # A 4 MB upload (a view of Python's memory handed to WebGPU) and reads of each dtype.
    code = """
import array, pyburn
n = 1 << 20
x = pyburn.tensor(array.array("f", range(n)).tobytes(), shape=(n,), dtype="float32",
                  device="wgpu")
# every value compared with its own index (a float32 sum as the checksum would depend on
# the order the adapter adds in)
checks = [bool((x == pyburn.arange(n, dtype="float32", device="wgpu")).all()),
          x[-3:].tolist() == [n - 3.0, n - 2.0, n - 1.0]]
for dtype, values in [("int32", [-7, 0, 2**31 - 1]), ("uint8", [0, 7, 255]),
                      ("bool", [True, False, True])]:
    t = pyburn.tensor(values, dtype=dtype, device="wgpu")
    checks.append(t.tolist() == values and (await t.tolist_async()) == values)
checks
"""
    assert run(page, code) == [True] * 5


def test_a_synchronous_read_blocks_through_jspi(page: object) -> None:
    code = """
import pyburn
from pyodide.ffi import can_run_sync
[can_run_sync(), (pyburn.ones(3, device="wgpu") * 2).tolist()]
"""
    assert run(page, code) == [True, [2.0, 2.0, 2.0]]


def test_where_jspi_cannot_wait_the_error_names_the_async_form(page: object) -> None:
    # A JavaScript frame between the entry and the read: no stack switch is possible there.
    code = """
import js, pyburn
from pyodide.ffi import create_proxy
x = pyburn.ones(2, device="wgpu")
seen = []
def read(*_):
    try:
        x.tolist()
    except pyburn.PyburnError as exc:
        seen.append(f"{type(exc).__name__}: {exc}")
callback = create_proxy(read)
js.Array.new(1).fill(0).forEach(callback)
callback.destroy()
seen
"""
    [message] = run(page, code)
    assert message.startswith("ReadbackError")
    assert "tolist_async" in message
