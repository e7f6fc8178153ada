"""Pyodide for a static build: found in a folder the user names, in pyburn's cache, or fetched
from the npm registry with ``npm pack`` (into the cache, once), and copied into the build with
a lock file that lists only the packages the build serves.

npm's package holds the runtime and no package wheels. micropip, where a build asks for it,
comes from PyPI (``pip download``); Pyodide's lock records the sha256 of the copy on its CDN,
which differs from PyPI's, and Pyodide refuses a wheel whose hash does not match, so the lock
served carries the hash of the wheel served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from ..errors import WebBuildError

#: the Pyodide release pyburn's browser runtime is built and tested against
PYODIDE_VERSION = "314.0.7"
#: what a page fetches to start Python (pyodide.mjs imports pyodide.asm.mjs, which loads the rest)
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
LOCK = "pyodide-lock.json"
#: the standard library, a zip Python imports from (zipimport)
STDLIB = "python_stdlib.zip"
#: wheels a build may take from PyPI when the distribution lacks them (npm's has none)
FROM_PYPI = {"micropip": "micropip==0.11.1"}
#: the longest a download (npm pack, pip download) may take, in seconds
DOWNLOAD_SECONDS = 600
#: the Node.js script that runs Pyodide's own Python at build time (byte-compiling), and the
#: longest it may take, in seconds
COMPILE_SCRIPT = Path(__file__).parent / "runtime" / "compile.mjs"
COMPILE_SECONDS = 300
#: what a page imports as it starts (the browser runtime's own imports, the browser's devices,
#: a model's): the standard library's modules that these and Pyodide's start load ship
#: byte-compiled
STARTUP_IMPORTS = ("pyburn", "pyburn.interop", "pyburn.backends.wgpu.browser",
                   "pyburn.backends.wasm", "pyburn.backends.flex", "pyburn.nn", "pyburn.optim",
                   "pyburn.store")


def cache_dir() -> Path:
    """Where pyburn keeps what it fetched: ``$PYBURN_DATA/web``, else ``~/.cache/pyburn/web``."""
    return Path(os.environ.get("PYBURN_DATA") or Path.home() / ".cache" / "pyburn") / "web"


def sha256(path: Path) -> str:
    """The hex sha256 of a file's contents."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def missing_files(folder: Path) -> list[str]:
    """The runtime files (and the lock) that `folder` lacks."""
    return [name for name in (*RUNTIME_FILES, LOCK) if not (folder / name).is_file()]


def find(folder: Path | None = None) -> Path:
    """A Pyodide distribution: `folder` when given, else the cached npm package, fetched first
    when the cache lacks it. Raises `WebBuildError` naming what to install or pass."""
    if folder is not None:
        missing = missing_files(folder)
        if missing:
            raise WebBuildError(f"{folder} is not a Pyodide distribution: it lacks "
                                f"{', '.join(missing)} (pass the folder of Pyodide "
                                f"{PYODIDE_VERSION}'s npm package or of a full release)")
        return folder
    cached = cache_dir() / f"pyodide-{PYODIDE_VERSION}"
    if not missing_files(cached):
        return cached
    return _fetch_from_npm(cached)


def _fetch_from_npm(target: Path) -> Path:
    """npm's ``pyodide`` package, unpacked into `target` (written whole, or not at all)."""
    npm = shutil.which("npm")
    if npm is None:
        raise WebBuildError(
            f"Pyodide {PYODIDE_VERSION} is needed and npm is not installed: install Node.js "
            "with npm (Debian: apt-get install npm) so that pyburn fetches it, or pass "
            "--pyodide DIR, a folder holding Pyodide's files")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        print(f"fetching Pyodide {PYODIDE_VERSION} from the npm registry (once, into "
              f"{target.parent})", file=sys.stderr)
        _run([npm, "pack", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", scratch],
             f"npm pack pyodide@{PYODIDE_VERSION}")
        (archive,) = Path(scratch).glob("pyodide-*.tgz")
        unpacked = Path(scratch) / "pyodide"
        unpacked.mkdir()
        with tarfile.open(archive) as tar:
            for name in (*RUNTIME_FILES, LOCK):
                member = tar.getmember(f"package/{name}")
                source = tar.extractfile(member)
                assert source is not None, name
                (unpacked / name).write_bytes(source.read())
        if target.exists():
            shutil.rmtree(target)
        unpacked.rename(target)
    return target


def _run(command: list[str], what: str) -> None:
    """Run a download command, bounded in time; a failure is a `WebBuildError` with its output."""
    try:
        subprocess.run(command, check=True, capture_output=True, text=True,
                       timeout=DOWNLOAD_SECONDS)
    except subprocess.CalledProcessError as failed:
        raise WebBuildError(f"{what} failed: {failed.stderr.strip() or failed.stdout.strip()}"
                            ) from None
    except subprocess.TimeoutExpired:
        raise WebBuildError(f"{what} took over {DOWNLOAD_SECONDS} s and was stopped") from None


def package_wheel(source: Path, entry: dict) -> Path:
    """The wheel of the lock's package `entry`: the distribution's own, else PyPI's (cached)."""
    own = source / entry["file_name"]
    if own.is_file():
        return own
    name = entry["name"]
    if name not in FROM_PYPI:
        raise WebBuildError(f"the Pyodide distribution {source} has no wheel of {name} "
                            f"({entry['file_name']}): pass --pyodide with a full Pyodide "
                            "release that carries it")
    folder = cache_dir() / "pypi"
    cached = folder / entry["file_name"]
    if not cached.is_file():
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
              "--python-version", "3.14", "-d", str(folder), FROM_PYPI[name]],
             f"pip download {FROM_PYPI[name]}")
    if not cached.is_file():
        raise WebBuildError(f"the lock wants {entry['file_name']}, PyPI gave another version")
    return cached


def run_python(pyodide: Path, args: list[str], what: str) -> bool:
    """Run compile.mjs (`args`) with the Python of the Pyodide in `pyodide`, under Node.js.
    Returns False where Node.js is missing, with a note that `what` is then slower."""
    node = shutil.which("node")
    if node is None:
        print(f"note: Node.js is not installed, so {what} (install Node.js 20+ to compile "
              "them)", file=sys.stderr)
        return False
    try:
        subprocess.run([node, str(COMPILE_SCRIPT), str(pyodide.resolve()), *args],
                       check=True, capture_output=True, text=True, timeout=COMPILE_SECONDS)
    except subprocess.CalledProcessError as failed:
        raise WebBuildError(f"byte-compiling with Pyodide failed: {failed.stderr.strip()}"
                            ) from None
    except subprocess.TimeoutExpired:
        raise WebBuildError(f"byte-compiling took over {COMPILE_SECONDS} s") from None
    return True


def store_uncompressed(source: Path, target: Path) -> None:
    """The zip `source` rewritten with its members stored, not deflated: the server's brotli
    then compresses it as one stream, 2.5 MB down to 1.6 MB for Pyodide's standard library
    (gzip: 2.2 MB), and Python reads the members without inflating them."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as stored:
        for member in original.infolist():
            stored.writestr(member, original.read(member), compress_type=zipfile.ZIP_STORED)


def copy_stdlib(source: Path, target: Path) -> None:
    """The standard library of the Pyodide in `source`, written to `target` with its members
    stored, and the modules that a page's start loads (Pyodide's own start, `STARTUP_IMPORTS`)
    byte-compiled in place of their sources. Pyodide ships sources only, so a page compiled
    those 150-odd modules at every start: about 1.7 s of a 2.5 s start under Node.js, for
    0.6 MB more to download (brotli); tracebacks show no source lines in those modules. The
    other modules keep their sources."""
    package_dir = Path(__file__).resolve().parents[2]
    if not run_python(source, ["--stdlib", str(target.resolve()), str(package_dir),
                               *STARTUP_IMPORTS],
                      "pages compile the standard library's modules as they start"):
        store_uncompressed(source / STDLIB, target)
    target.chmod(0o644)  # Node.js's file system writes it world-writable


def copy_runtime(source: Path, out: Path, packages: list[str]) -> list[str]:
    """Pyodide's runtime files and the wheels of `packages` (with what they depend on) from
    the distribution `source` into `out`, with a lock listing exactly those. Returns the
    package names served, dependencies first."""
    lock = json.loads((source / LOCK).read_text())
    known = lock["packages"]
    served: list[str] = []

    def add(name: str) -> None:
        if name not in known:
            raise WebBuildError(f"the Pyodide distribution {source} has no package named "
                                f"{name!r}")
        if name in served:
            return
        for dependency in known[name]["depends"]:
            add(dependency)
        served.append(name)

    for name in packages:
        add(name)
    out.mkdir(parents=True)
    for name in RUNTIME_FILES:
        if name == STDLIB:
            copy_stdlib(source, out / name)
        else:
            shutil.copy2(source / name, out / name)
    entries = {}
    for name in served:
        entry = dict(known[name])
        wheel = package_wheel(source, entry)
        entry["sha256"] = sha256(wheel)
        shutil.copy2(wheel, out / entry["file_name"])
        entries[name] = entry
    (out / LOCK).write_text(json.dumps({**lock, "packages": entries}, separators=(",", ":")))
    return served
