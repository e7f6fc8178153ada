"""Where a benchmark's numbers come from: the code (pyburn's version and git commit), the
machine, and the adapter a wgpu device runs on.

A machine has an id, a short hash of what makes its numbers comparable with another run's:
its CPU model, CPU count, operating system and architecture. Kernel updates, Python and peer
versions are recorded but left out of the id: a run after an upgrade is still compared with
the runs before it (that is what a record's history is for). The host name is left out too,
so that the same machine type in a container with a new name keeps its history.

Inside a web page (the site's benchmark page) Python sees no CPU model and one CPU: the page
says what the machine is (`in_page`).
"""

from __future__ import annotations

import hashlib
import platform
import re
import subprocess
from pathlib import Path

import pyburn

from ..backends import wgpu
from ..errors import DeviceError
from ..runtime import IN_BROWSER
from .report import environment

#: where pyburn's own files are: a git checkout when its parent is the repository's root
PACKAGE = Path(pyburn.__file__).resolve().parent
#: how long `git rev-parse` may take, in seconds
GIT_TIMEOUT_S = 5


def git_commit() -> str | None:
    """The commit pyburn's checkout is at (40 hex digits), or None when pyburn is not run
    from a git checkout of its own (an installed wheel, Pyodide) or git is missing."""
    if IN_BROWSER:  # Pyodide starts no processes
        return None
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=PACKAGE,
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):  # no git
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != PACKAGE.parent:
        return None  # not a checkout, or pyburn installed inside someone else's
    return lines[1]


def cpu_model() -> str:
    """The CPU's model name ("AMD EPYC 7B13"), from /proc/cpuinfo on Linux, else what the
    platform module says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _machine_id(*parts: object) -> str:
    """The id of the machine `parts` describe: a short hash of them."""
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8]


def machine() -> dict[str, object]:
    """The machine a run is on: its id (see the module's docstring), CPU model and count,
    platform, Python and the peers' versions."""
    described = {key: value for key, value in environment().items() if key != "pyburn"}
    cpu = cpu_model()
    return {"id": _machine_id(cpu, described["cpus"], platform.system(), platform.machine()),
            "cpu": cpu, **described}


def in_page(browser: str, system: str, cpus: int) -> dict[str, object]:
    """The machine of a run inside a web page, as its page tells it: the browser's user agent
    (`browser`), ``navigator.platform`` (`system`, as the CPU: "Linux x86_64") and
    ``navigator.hardwareConcurrency`` (`cpus`), with the WebGPU adapter Python reaches (None
    without one), Pyodide's platform and Python. The id hashes the user agent without its
    version numbers, the CPU count and the adapter: as on a desktop, an update of the
    browser keeps the machine's history.

    >>> page = in_page("Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.0.0", "Linux x86_64", 8)
    >>> page["id"] == in_page("Mozilla/5.0 (X11; Linux x86_64) Chrome/121.0.1.0",
    ...                       "Linux x86_64", 8)["id"]
    True
    """
    gpu = adapter("wgpu")
    described = {key: value for key, value in environment().items() if key != "pyburn"}
    return {"id": _machine_id(re.sub(r"/[\d.]+", "", browser), cpus, gpu), "cpu": system,
            **described, "cpus": cpus, "browser": browser, "webgpu": gpu}


def adapter(device: str) -> str | None:
    """The adapter a wgpu `device` runs on ("llvmpipe (LLVM 15.0.6, 256 bits) via Vulkan");
    None for the other devices, and for names that are not pyburn devices ("chromium")."""
    try:
        chosen = pyburn.device(device)
    except DeviceError:
        return None
    if chosen.kind != "wgpu":
        return None
    info = wgpu.adapters()[chosen.index][0]
    return f"{info.name} via {info.backend}"
