"""The pyburn wheel a page installs: the installed package's own files, less what a page does
not use (`BROWSER_EXCLUDE`, unless the app imports it), byte-compiled by Pyodide's Python.

The wheel is a plain zip that the page unpacks into site-packages. Its members are stored, not
deflated: the server's brotli or gzip then compresses the whole archive as one stream, which
finds the repetition across modules that per-member deflate cannot (the ``.br`` of a stored
wheel is about a third smaller than the deflated wheel).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyburn

from .pyodide import run_python

#: what a page leaves out of pyburn, each with why: tools of the desktop's command line, and
#: parts that need a library Pyodide's npm package lacks
BROWSER_EXCLUDE: Mapping[str, str] = {
    "pyburn/web": "this build tool",
    "pyburn/bench": "benchmarks (pyburn bench)",
    "pyburn/cli.py": "the command line",
    "pyburn/__main__.py": "the command line",
    "pyburn/onnx/cli.py": "the command line",
    "pyburn/onnx/codegen.py": "ONNX to Python source (pyburn onnx convert)",
    "pyburn/onnx/exporter": "ONNX export (pyburn.onnx.export); import stays",
    "pyburn/remote/cli.py": "the command line",
    "pyburn/remote/server.py": "the server of the remote device (pyburn serve)",
    "pyburn/remote/process.py": "the server's worker processes",
    "pyburn/models/mnist_job.py": "pyburn train mnist",
    "pyburn/data/datasets": "dataset downloads into ~/.cache",
    "pyburn/backends/cpu": "the numpy device (Pyodide's npm package has no numpy)",
    "pyburn/kernel/numpy_exec.py": "the numpy device's kernel runner",
    "pyburn/backends/wgpu/native.py": "wgpu-py, the desktop's WebGPU",
    "pyburn/distributed": "data-parallel training on Ray, which Pyodide lacks",
}
#: the public names through which an app reaches an excluded part (beyond its own module
#: name): an app that uses one keeps the part
ENTRY_POINTS: Mapping[str, tuple[str, ...]] = {
    "pyburn/onnx/exporter": ("pyburn.onnx.export",),
    "pyburn/onnx/codegen.py": ("pyburn.onnx.convert",),
}


def package_files() -> dict[str, Path]:
    """Every file of the installed pyburn package, by its path in a wheel ("pyburn/...")."""
    root = Path(pyburn.__file__).resolve().parent
    return {f"pyburn/{path.relative_to(root).as_posix()}": path
            for path in sorted(root.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def excluded(name: str, exclude: Iterable[str]) -> bool:
    """Whether the wheel path `name` falls under one of the paths of `exclude`."""
    return any(name == prefix or name.startswith(prefix.rstrip("/") + "/") for prefix in exclude)


def pyburn_names(source: str) -> set[str]:
    """The dotted pyburn names Python `source` uses: what it imports (anywhere in it), and
    attribute chains on those (``onnx.export`` after ``from pyburn import onnx`` is
    "pyburn.onnx.export")."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}")
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            found.add(node.module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = [node.attr]
            base = node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                found.add(".".join([bound[base.id], *reversed(chain)]))
    return {name for name in found if name == "pyburn" or name.startswith("pyburn.")}


def kept_paths(app_sources: Iterable[str], exclude: Iterable[str]) -> set[str]:
    """The paths of `exclude` that the app's own code uses (by module or `ENTRY_POINTS`),
    which the wheel keeps."""
    used = {name for source in app_sources for name in pyburn_names(source)}

    def uses(path: str) -> bool:
        module = path.removesuffix(".py").replace("/", ".")
        names = (module, *ENTRY_POINTS.get(path, ()))
        return any(u == n or u.startswith(n + ".") for u in used for n in names)

    return {path for path in exclude if uses(path)}


def browser_files(exclude: Iterable[str]) -> dict[str, Path]:
    """The files of pyburn that go into the page's wheel."""
    exclude = tuple(exclude)
    return {name: path for name, path in package_files().items() if not excluded(name, exclude)}


def write_wheel(files: Mapping[str, Path], out_dir: Path, pyodide: Path | None,
                sourceless: bool = True) -> Path:
    """The wheel holding `files` in `out_dir`, byte-compiled by the Pyodide in `pyodide`;
    `sourceless` ships each module's .pyc in place of its source (a third smaller; tracebacks
    then show no source lines), else both. No .pyc without Node.js (with a note: imports are
    then slower) or when `pyodide` is None."""
    version = pyburn.__version__
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        for name, path in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, tree / name)
        if pyodide is not None and byte_compile(tree, pyodide, sourceless) and sourceless:
            drop_sources(tree)
        info = f"pyburn-{version}.dist-info"
        (tree / info).mkdir()
        (tree / info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: pyburn\nVersion: {version}\n")
        (tree / info / "WHEEL").write_text(
            "Wheel-Version: 1.0\nGenerator: pyburn web build\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n")
        wheel = out_dir / f"pyburn-{version}-py3-none-any.whl"
        _zip(tree, f"{info}/RECORD", wheel)
    return wheel


def needs_source(source: str) -> bool:
    """Whether a module must ship its source: it defines `pyburn.kernel` kernels, which are
    compiled from their Python source (``@kernel``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                name = decorator.attr if isinstance(decorator, ast.Attribute) else \
                    getattr(decorator, "id", None)
                if name == "kernel":
                    return True
    return False


def drop_sources(tree: Path) -> None:
    """Keep each module of `tree` as its .pyc alone, but those that `needs_source`, which
    keep their .py alone."""
    for source in tree.rglob("*.py"):
        compiled = source.with_suffix(".pyc")
        if needs_source(source.read_text()):
            compiled.unlink()
        else:
            source.unlink()


def _zip(tree: Path, record: str, wheel: Path) -> None:
    """`tree` as a wheel at `wheel`: members stored in name order, with a RECORD of them."""
    names = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    lines = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for name in names:
            data = (tree / name).read_bytes()
            member = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            lines.append(f"{name},sha256={digest.decode()},{len(data)}")
        archive.writestr(zipfile.ZipInfo(record, date_time=(2026, 1, 1, 0, 0, 0)),
                         "\n".join([*lines, f"{record},,"]) + "\n")


def byte_compile(tree: Path, pyodide: Path, sourceless: bool) -> bool:
    """Compile every module under `tree` with the Python of the Pyodide in `pyodide`, run by
    Node.js (`sourceless`: see `write_wheel`). Returns False (and says so) where Node.js is
    missing."""
    return run_python(pyodide, [str(tree), *(["--sourceless"] if sourceless else [])],
                      "the wheel carries no .pyc files and pages import pyburn about 0.7 s "
                      "slower")
