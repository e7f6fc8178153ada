"""The GPU kernels a web build records, so that a page compiles them while Python starts.

A page's first prediction on WebGPU compiles a pipeline per kernel it runs: about 80 ms each
on a software adapter (SwiftShader), a second for a small CNN. Python cannot ask for them
before Pyodide has started (2-3 s), but the loader can (``runtime/gpu.js``), given their
sources. pyburn writes the same WGSL on every adapter (the sources depend on the work, not on
the machine), so running the work once on this machine's wgpu device at build time gives the
list the page will need: `record` runs it, `write` saves the list into the build with the
device request that goes with it (`browser.REQUEST`), and the manifest names both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..backends import wgpu
from ..backends.wgpu.browser import REQUEST
from ..devices import device
from ..errors import WebBuildError

if TYPE_CHECKING:
    from ..backends.wgpu.backend import WgpuBackend

#: the recorded kernels' file in a build: a JSON list of [entry point, WGSL source]
KERNELS = "kernels.json"


def record(work: Callable[[], Any]) -> list[tuple[str, str]]:
    """(entry, source) of each kernel `work` compiles on this machine's wgpu device, in the
    order they were first compiled. `work` runs with its tensors on ``device("wgpu")``; it
    should do what the page does first (one prediction). Raises `WebBuildError` where there
    is no wgpu device, saying why."""
    reason = wgpu.unavailable_reason()
    if reason is not None:
        raise WebBuildError(f"cannot record the page's GPU kernels: {reason}")
    # fused or not, a wgpu device's backend holds its runtime
    runtime = cast("WgpuBackend", device("wgpu").backend).runtime
    before = set(runtime.kernels())
    work()
    return [(entry, source) for source, entry in runtime.kernels()
            if (source, entry) not in before]


def write(folder: Path, kernels: list[tuple[str, str]]) -> dict[str, Any]:
    """Write `kernels` into the build `folder`; returns the manifest's entries for them (the
    device request always, the kernels' file where there are any)."""
    entries: dict[str, Any] = {"webgpu": REQUEST}
    if kernels:
        (folder / KERNELS).write_text(json.dumps([list(k) for k in kernels]))
        entries["kernels"] = KERNELS
    return entries
