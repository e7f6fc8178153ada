"""`pyburn web build`: a user's app as a static folder that runs offline from any static
server: the page (the user's, or a minimal one that runs the app and shows its output), the
loader, Pyodide, the pyburn wheel trimmed and byte-compiled, and the app's code and assets,
each file precompressed.

The folder is written whole or not at all: everything goes into a scratch folder beside the
output, which replaces the output only once complete. An existing output is replaced only
when it is an earlier build.
"""

from __future__ import annotations

import html
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import WebBuildError
from . import compress, kernels, pyodide
from .app import App
from .wheel import BROWSER_EXCLUDE, browser_files, kept_paths, write_wheel

#: the loader's files, served under ``pyburn/``
LOADER_FILES = ("pyburn.js", "session.js", "gpu.js", "worker.js", "wire.js")
#: what the default page adds to the loader
PAGE_FILES = ("page.js", "page.css")
RUNTIME = Path(__file__).parent / "runtime"
MANIFEST = "pyburn-web.json"


@dataclass(frozen=True)
class Options:
    """How to build: where Pyodide comes from and what the page's Python gets."""

    #: a Pyodide distribution folder (None: npm's package, cached)
    pyodide: Path | None = None
    #: Pyodide packages the page loads at start ("numpy", "micropip", ...)
    packages: tuple[str, ...] = ()
    #: more of pyburn to leave out, and what of `BROWSER_EXCLUDE` to keep
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    #: ship pyburn's sources beside its .pyc (tracebacks with source lines; a bigger wheel)
    sources: bool = False
    #: the page needs cross-origin isolation (SharedArrayBuffer, threads)
    isolated: bool = False
    brotli_quality: int = 11


@dataclass(frozen=True)
class Report:
    """What a build wrote: the folder, and what a first visit transfers."""

    out: Path
    transfers: list[compress.Transfer]
    brotli: bool
    notes: list[str] = field(default_factory=list)

    def total(self, kind: str) -> int:
        """The first visit's bytes: "raw", "gzip" or "brotli"."""
        return sum(getattr(row, kind) for row in self.transfers)

    def table(self) -> str:
        """The first visit's files and sizes, as a text table."""
        width = max(len(row.name) for row in self.transfers)
        lines = [f"{'first visit':<{width}}  {'bytes':>10}  {'gzip':>10}  {'brotli':>10}"]
        for row in sorted(self.transfers, key=lambda r: -r.raw):
            lines.append(f"{row.name:<{width}}  {row.raw:>10,}  {row.gzip:>10,}  "
                         f"{row.brotli:>10,}")
        lines.append(f"{'total':<{width}}  {self.total('raw'):>10,}  {self.total('gzip'):>10,}"
                     f"  {self.total('brotli'):>10,}")
        return "\n".join(lines)


def wheel_exclude(app: App, options: Options) -> tuple[list[str], list[str]]:
    """The paths of pyburn the app's wheel leaves out, and the notes saying which of the
    default exclusions it keeps (because the app imports them, or `options` says so)."""
    wanted = set(BROWSER_EXCLUDE) | set(options.exclude)
    if "numpy" in options.packages:
        wanted -= {"pyburn/backends/cpu", "pyburn/kernel/numpy_exec.py"}
    imported = kept_paths(app.sources(), wanted)
    keep = imported | set(options.include)
    notes = [f"keeping {path}: the app imports it" for path in sorted(imported)]
    return sorted(wanted - keep), notes


def build(app: App, out: Path, options: Options = Options()) -> Report:
    """Build `app` into the folder `out` (see the module docstring)."""
    out = out.resolve()
    if out.exists() and not (out / MANIFEST).is_file() and any(out.iterdir()):
        raise WebBuildError(f"{out} exists and is not a pyburn build: pick another folder, "
                            "or empty it")
    if out == app.root or out in app.root.parents:
        raise WebBuildError(f"the output {out} would hold the app itself: pick a folder "
                            "outside the app")
    source = pyodide.find(options.pyodide)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        notes = _write(app, scratch, source, options)
        wrote_brotli = compress.precompress(scratch, options.brotli_quality)
        transfers = compress.first_visit(scratch, _first_visit_files(scratch))
        _replace(out, scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if not wrote_brotli:
        notes.append("no .br files: pip install brotli (or 'pyburn[web]') to write them")
    return Report(out, transfers, wrote_brotli, notes)


def _write(app: App, folder: Path, source: Path, options: Options) -> list[str]:
    """Everything of the build into `folder`; returns the notes worth telling the user."""
    served = pyodide.copy_runtime(source, folder / "pyodide", list(options.packages))
    exclude, notes = wheel_exclude(app, options)
    (folder / "wheels").mkdir()
    wheel = write_wheel(browser_files(exclude), folder / "wheels", source,
                        sourceless=not options.sources)
    loader = folder / "pyburn"
    loader.mkdir()
    for name in LOADER_FILES:
        shutil.copy2(RUNTIME / name, loader / name)
    for name, path in app.python_files.items():
        (folder / "app" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / "app" / name)
    for name, path in app.page_files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / name)
    if "index.html" not in app.page_files:
        for name in PAGE_FILES:
            shutil.copy2(RUNTIME / name, loader / name)
        page = (RUNTIME / "page.html").read_text().replace("{{title}}", html.escape(app.name))
        (folder / "index.html").write_text(page)
    manifest = {
        "pyodide": "pyodide/",
        "packages": served,
        "wheels": [f"wheels/{wheel.name}"],
        "app": {"name": app.name, "module": app.module, "exports": list(app.exports),
                "files": sorted(f"app/{name}" for name in app.python_files)},
        "isolated": options.isolated,
        # the loader asks for WebGPU's device while Python starts
        **kernels.write(folder, []),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return notes


def _first_visit_files(folder: Path) -> list[str]:
    """Every file a first visit fetches: all the build wrote but its precompressed copies."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.suffix not in (".gz", ".br"))


def _replace(out: Path, complete: Path) -> None:
    """Put the folder `complete` at `out`, the earlier build there removed."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}-old-", dir=out.parent))
        out.rename(old / "build")
        complete.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        complete.rename(out)
