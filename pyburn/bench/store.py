"""Loading a 100 MB state dict: pyburn's PyTorch and safetensors readers against
``torch.load(map_location="cpu")`` and ``safetensors.numpy.load_file``, in the same run.

The state dict is 25 float32 matrices of 1024 x 1024 (105 MB; the quick run: 4 of 64 x 64),
written once by PyTorch (``.pt``, zip and legacy formats) and by pyburn (``.safetensors``).

Time rows (ms per load; the ratio is the peer's time over pyburn's, above 1: pyburn faster):
every tensor read into a dict of cpu tensors (``load_pytorch(path).load()`` against
``torch.load``; ``pyburn.store.load`` against ``safetensors.numpy.load_file``), and listing
the keys of the ``.pt`` file (against ``torch.load(mmap=True)``, PyTorch's lazy path).

Memory rows (MB of resident memory a load adds at its peak, measured in a fresh process:
Linux's peak-RSS counter reset through ``/proc/self/clear_refs`` just before the load; the
ratio is the peer's peak over pyburn's, above 1: pyburn needs less): the same loads, and
loading the file into a model that already exists (``model.load_from(path)`` against
``model.load_state_dict(torch.load(path))``). The memory rows need Linux; elsewhere they
are left out. Without PyTorch, the ``.pt`` rows are left out (nothing else writes .pt files).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable

import pyburn

from . import peers
from .report import Row
from .suite import Benchmark
from .timing import Settings, measure

#: (layers, width) of the state dict: full size and quick
SIZES = {False: (25, 1024), True: (4, 64)}
_PAGE = 4096  # a peak below one page is measured as one page (ratios stay finite)

# Run in a fresh process: SETUP, then the peak resident memory that LOAD adds, in bytes.
_PEAK_SCRIPT = """
import re
def status(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\\s+(\\d+) kB", f.read()).group(1)) * 1024
{setup}
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
{load}
print(status("VmHWM") - before)
"""
_PYBURN = "import pyburn\nfrom pyburn import nn\nfrom pyburn.store import load_pytorch\n"
_MODEL = ("model = {nn}.Sequential(*[{nn}.Linear({width}, {width}, bias=False{device}) "
          "for _ in range({layers})])")


def _can_measure_peak() -> bool:
    return sys.platform.startswith("linux") and os.access("/proc/self/clear_refs", os.W_OK)


def _peak_mb(setup: str, load: str) -> float:
    """Peak resident memory added by `load` (after `setup`) in a fresh Python, in MB."""
    script = _PEAK_SCRIPT.format(setup=setup, load=load)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=True)
    return max(int(done.stdout.split()[-1]), _PAGE) / 1e6


def _memory_row(case: str, ours: tuple[str, str], theirs: tuple[str, str] | None,
                peer: str, quick: bool) -> Row:
    mine = _peak_mb(*ours)
    other = None if theirs is None else _peak_mb(*theirs)
    return Row("store.cpu", case, "MB", mine, mine, peer, other,
               None if other is None else other / mine, None, quick)


def _time_row(case: str, ours: Callable[[], object], theirs: Callable[[], object] | None,
              peer: str, settings: Settings) -> Row:
    candidates = {"pyburn": ours} if theirs is None else {"pyburn": ours, "peer": theirs}
    times = measure(candidates, settings)
    return Row.compare("store.cpu", case, "ms", lambda seconds: seconds * 1e3, times, "peer",
                       peer, None, settings.quick)


def measure_cpu(settings: Settings) -> list[Row]:
    """Load times and peak memory of a 105 MB state dict (pyburn's readers on the cpu
    device), each next to PyTorch's or safetensors' in the same run."""
    layers, width = SIZES[settings.quick]
    torch = peers.load("torch")
    st_numpy = peers.load("safetensors.numpy")
    st_label = peers.label("safetensors") if st_numpy else "safetensors.numpy"
    torch_label = peers.label("torch")
    size_mb = layers * width * width * 4 / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        st_path = os.path.join(folder, "weights.safetensors")
        pyburn.manual_seed(0)
        state = {f"{i}.weight": pyburn.randn(width, width, device="cpu") for i in range(layers)}
        pyburn.store.save(state, st_path)
        pt_paths = {}
        if torch is not None:
            for fmt, zip_format in (("zip", True), ("legacy", False)):
                pt_paths[fmt] = os.path.join(folder, f"weights-{fmt}.pt")
                torch.save({k: torch.from_numpy(v.numpy().copy()) for k, v in state.items()},
                           pt_paths[fmt], _use_new_zipfile_serialization=zip_format)
        del state
        for fmt, path in pt_paths.items():
            rows.append(_time_row(
                f"load .pt ({fmt}) {size_mb:.0f} MB", lambda p=path: pyburn.store.load_pytorch(
                    p, device="cpu").load(),
                lambda p=path: torch.load(p, map_location="cpu"), torch_label, settings))
        if "zip" in pt_paths:
            path = pt_paths["zip"]
            rows.append(_time_row(
                f"list the keys of a {size_mb:.0f} MB .pt",
                lambda: list(pyburn.store.load_pytorch(path)),
                lambda: list(torch.load(path, mmap=True, map_location="cpu")), torch_label,
                settings))
        rows.append(_time_row(
            f"load .safetensors {size_mb:.0f} MB", lambda: pyburn.store.load(st_path, "cpu"),
            None if st_numpy is None else lambda: st_numpy.load_file(st_path), st_label,
            settings))
        if _can_measure_peak():
            rows.extend(_memory_rows(pt_paths.get("zip"), st_path, layers, width, size_mb,
                                     torch_label, st_label, settings.quick,
                                     st_numpy is not None))
    return rows


def _memory_rows(pt: str | None, st: str, layers: int, width: int, size_mb: float,
                 torch_label: str, st_label: str, quick: bool,
                 has_safetensors: bool) -> list[Row]:
    """Peak-memory rows, each load in its own fresh process."""
    rows = []
    if pt is not None:
        rows.append(_memory_row(
            f"peak memory added, load .pt {size_mb:.0f} MB",
            (_PYBURN, f"sd = load_pytorch({pt!r}, device='cpu').load()"),
            ("import torch", f"sd = torch.load({pt!r}, map_location='cpu')"),
            torch_label, quick))
        ours = _MODEL.format(nn="nn", width=width, layers=layers, device=", device='cpu'")
        theirs = _MODEL.format(nn="torch.nn", width=width, layers=layers, device="")
        rows.append(_memory_row(
            f"peak memory added, load a {size_mb:.0f} MB .pt into a model",
            (_PYBURN + ours, f"model.load_from({pt!r})"),
            ("import torch\n" + theirs,
             f"model.load_state_dict(torch.load({pt!r}, map_location='cpu'))"),
            torch_label, quick))
    rows.append(_memory_row(
        f"peak memory added, load .safetensors {size_mb:.0f} MB",
        (_PYBURN, f"sd = pyburn.store.load({st!r}, device='cpu')"),
        ("from safetensors.numpy import load_file", f"sd = load_file({st!r})")
        if has_safetensors else None, st_label, quick))
    return rows


BENCHMARKS = (
    Benchmark("store", "cpu", "loading a 105 MB state dict (.pt, .safetensors): time and peak "
              "memory vs torch.load and safetensors", measure_cpu),
)
