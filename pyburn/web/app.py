"""What `pyburn web build` ships of the user's app, checked before anything is written.

An app is a Python module (``model_app.py``), or a folder with one. A folder ships whole:
its Python modules and assets go into the page's Python (under ``app/``), and its web files
(``.html``, ``.css``, ``.js``) are served beside the page, its own ``index.html`` replacing
the default page. A lone module ships with the assets it names in a top-level
``ASSETS = ["model.onnx", ...]`` list, and those given with ``--asset``. Every asset must lie
inside the app's folder and be readable; weights (``.safetensors``, ``.onnx``) must parse.
Nothing of the app runs at build time: the entry point and its ``ASSETS`` are read from the
source.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import FormatError, WebBuildError

#: what a folder app serves beside the page instead of loading into Python
WEB_SUFFIXES = frozenset({".html", ".css", ".js", ".mjs", ".map"})
#: the entry modules a folder app is looked for under, in order
ENTRY_NAMES = ("app.py", "main.py")


@dataclass(frozen=True)
class App:
    """An app, resolved: where it lives and what of it goes where."""

    #: the app's folder
    root: Path
    #: the module the page imports (its file is `root`/``<module>.py``)
    module: str
    #: what Python gets, by path relative to `root`
    python_files: dict[str, Path]
    #: what is served beside the page, by path relative to `root`
    page_files: dict[str, Path]
    #: the entry module's public functions, which the page may call
    exports: tuple[str, ...]

    @property
    def name(self) -> str:
        """The app's name, for the page's title: its folder's or its module's."""
        return self.root.name if self.module in ("app", "main") else self.module

    def sources(self) -> list[str]:
        """The text of every Python module of the app."""
        return [path.read_text() for name, path in self.python_files.items()
                if name.endswith(".py")]


def resolve(app: Path, assets: Iterable[Path] = (), entry: str | None = None,
            skip: Iterable[Path] = ()) -> App:
    """The app at `app` (a module or a folder), its `assets` added; `entry` names the entry
    module of a folder, `skip` folders not to ship (the build's output). Raises
    `WebBuildError` for anything a page could not run."""
    app = app.resolve()
    if app.is_file():
        if app.suffix != ".py":
            raise WebBuildError(f"{app} is not a Python module: pass a .py file or a folder")
        root, entry_file = app.parent, app
        named = _listed_assets(entry_file)
        files = {entry_file.name: entry_file}
    elif app.is_dir():
        root = app
        entry_file = _entry_file(root, entry)
        named = []
        files = _folder_files(root, [Path(s).resolve() for s in skip])
    else:
        raise WebBuildError(f"no app at {app}: pass a Python module or a folder holding one")
    for asset in [*named, *assets]:
        path = _inside(root, asset)
        files[path.relative_to(root).as_posix()] = path
    for path in files.values():
        check_readable(path)
    python = {n: p for n, p in files.items() if Path(n).suffix not in WEB_SUFFIXES}
    page = {n: p for n, p in files.items() if Path(n).suffix in WEB_SUFFIXES}
    return App(root, entry_file.stem, python, page, _exports(entry_file))


def _entry_file(root: Path, entry: str | None) -> Path:
    """The entry module of the folder `root`: `entry`, else the first of `ENTRY_NAMES`."""
    if entry is not None:
        path = root / (entry if entry.endswith(".py") else f"{entry}.py")
        if not path.is_file():
            raise WebBuildError(f"the entry point {entry!r} is not a module of {root} (no "
                                f"{path.name} there)")
        return path
    for name in ENTRY_NAMES:
        if (root / name).is_file():
            return root / name
    raise WebBuildError(f"{root} has no entry point: add {' or '.join(ENTRY_NAMES)}, or name "
                        "the module the page imports with --entry")


def _folder_files(root: Path, skip: list[Path]) -> dict[str, Path]:
    """Every file of the folder `root` (links too, even broken ones, which then fail the
    read check), by relative path, less hidden files, caches and the folders of `skip`."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (any(part.startswith(".") or part == "__pycache__" for part in relative.parts)
                or any(path == s or s in path.parents for s in skip)
                or not (path.is_file() or path.is_symlink())):
            continue
        found[relative.as_posix()] = _inside(root, relative)
    return found


def _inside(root: Path, asset: Path) -> Path:
    """`asset` (relative to `root`, or absolute) as a path inside `root`, links followed."""
    path = (root / asset).resolve()
    if root not in path.parents:
        raise WebBuildError(f"the asset {asset} lies outside the app's folder {root}: a page "
                            "serves only what is inside it, so move the file there")
    return path


def check_readable(path: Path) -> None:
    """Read `path` whole (weights: parse them); raise `WebBuildError` saying why it fails."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise WebBuildError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix == ".safetensors":
            _check_safetensors(data)
        elif path.suffix == ".onnx":
            from ..onnx.proto import read  # build time: only apps with ONNX models need it

            read(data)
        elif path.suffix == ".py":
            ast.parse(data, filename=str(path))
    except FormatError as exc:
        raise WebBuildError(f"{path} is not a readable {path.suffix[1:]} file: {exc}") from None
    except SyntaxError as exc:
        raise WebBuildError(f"{path} does not compile: {exc.msg} (line {exc.lineno})") from None


def _check_safetensors(data: bytes) -> None:
    """Parse a safetensors file's header against its size (FormatError if it does not)."""
    from ..store.header import parse_header, parse_length  # build time: weights only

    n = parse_length(data[:8], len(data))
    parse_header(data[8:8 + n], len(data) - 8 - n)


def _listed_assets(module: Path) -> list[Path]:
    """The paths of the module's top-level ``ASSETS = [...]`` (string literals)."""
    tree = _parse(module)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "ASSETS"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise WebBuildError(f"{module}: ASSETS must be a list of file names written "
                                    "out as strings (the build reads it without running "
                                    "the module)")
            return [Path(v) for v in value]
    return []


def _exports(module: Path) -> tuple[str, ...]:
    """The public functions defined at the top level of `module`."""
    return tuple(node.name for node in _parse(module).body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and not node.name.startswith("_"))


def _parse(module: Path) -> ast.Module:
    try:
        return ast.parse(module.read_bytes(), filename=str(module))
    except SyntaxError as exc:
        raise WebBuildError(f"{module} does not compile: {exc.msg} (line {exc.lineno})") from None
    except OSError as exc:
        raise WebBuildError(f"cannot read {module}: {exc.strerror or exc}") from None
