"""What ``import pyburn`` loads: the tensor layer, not nn, optim, train, store or data (those
load on first use, PEP 562), and no backend; each lazy name still works every usual way.

And the import graph, read from the source with `ast`: no cycle among pyburn's modules, and an
import inside a function only for an optional dependency or for import time, with a comment
that says which."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pyburn

LAZY = ("array_api", "data", "kernel", "nn", "optim", "quant", "store", "train")


def _modules_after(code: str) -> set[str]:
    """The pyburn modules a fresh interpreter holds after running `code`."""
    probe = code + "\nimport sys; print(' '.join(m for m in sys.modules if m.startswith('pyburn')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return set(done.stdout.split())


def test_import_pyburn_loads_neither_the_subpackages_nor_a_backend():
    loaded = _modules_after("import pyburn")
    assert not {f"pyburn.{name}" for name in LAZY} & loaded
    assert not {m for m in loaded if m.startswith("pyburn.backends.") and
                m != "pyburn.backends.base"}


@pytest.mark.parametrize("code, wanted", [
    ("import pyburn; pyburn.nn.Linear", "pyburn.nn"),
    ("from pyburn import optim", "pyburn.optim"),
    ("import pyburn.train", "pyburn.train"),
    ("import pyburn; pyburn.store.save", "pyburn.store"),
])
def test_a_subpackage_loads_when_named(code, wanted):
    assert wanted in _modules_after(code)


def test_the_lazy_names_are_listed_and_unknown_names_say_so():
    assert set(LAZY) <= set(dir(pyburn)) and set(pyburn.LAZY_SUBPACKAGES) == set(LAZY)
    assert pyburn.nn.Linear.__module__ == "pyburn.nn.linear"
    with pytest.raises(AttributeError, match="module 'pyburn' has no attribute 'nnn'"):
        pyburn.nnn  # noqa: B018



# --- the import graph: no cycle, and every import inside a function says why ----------------

PACKAGE = Path(pyburn.__file__).parent
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: tool directives, which say nothing of why an import is where it is
DIRECTIVE = re.compile(r"noqa(:\s*[A-Z]+\d+(\s*,\s*[A-Z]+\d+)*)?|type:\s*ignore(\[[^\]]*\])?"
                       r"|pragma:\s*no\s*cover")


@dataclass(frozen=True)
class Import:
    """An edge of the import graph: `importer` runs `imported` through the import statement at
    `path`:`line`, which names `named` (`imported` itself, or a module inside it)."""

    importer: str
    imported: str
    named: str
    path: Path
    line: int

    def __str__(self) -> str:
        via = f" (through {self.named})" if self.named != self.imported else ""
        return f"{self.importer} -> {self.imported}{via}  at {self.path}:{self.line}"


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the package at `root` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    """Whether an `if` tests ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_statements(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that runs (none under ``if TYPE_CHECKING:``) in line order, each
    with whether it stands inside a function."""
    found, todo = [], [(tree, False)]
    while todo:
        node, in_function = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, in_function))
        inside = in_function or isinstance(node, FUNCTIONS)
        children = ([node.test, *node.orelse] if isinstance(node, ast.If) and
                    _is_type_checking(node.test) else ast.iter_child_nodes(node))
        todo.extend((child, inside) for child in children)
    return sorted(found, key=lambda statement: statement[0].lineno)


def _named_modules(node: ast.Import | ast.ImportFrom, importer: str,
                   modules: dict[str, Path]) -> list[str]:
    """The package's modules an import statement in `importer` names (relative imports
    resolved): ``from pkg import name`` names ``pkg.name`` where that is a module, else ``pkg``."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = importer.split(".")
            if modules[importer].name != "__init__.py":
                package.pop()
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + [base] if base else package)
        names = [f"{base}.{alias.name}" for alias in node.names]
    found = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


def _graph(root: Path) -> dict[str, dict[str, Import]]:
    """Who runs whom when the package at `root` is imported, importer -> imported -> the first
    import statement that does it. Imports inside functions count (they run on the first call).
    Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, so an edge to a module is
    also an edge to each package above it, except those that hold the importer."""
    modules = _modules(root)
    graph: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for importer, path in modules.items():
        for node, _ in _import_statements(ast.parse(path.read_text(), str(path))):
            for named in _named_modules(node, importer, modules):
                parts = named.split(".")
                for imported in (".".join(parts[:depth]) for depth in range(len(parts), 0, -1)):
                    if importer == imported or importer.startswith(imported + "."):
                        break
                    graph[importer].setdefault(imported, Import(
                        importer, imported, named, path.relative_to(root.parent), node.lineno))
    return graph


def _tangles(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan's
    algorithm, walked with a stack instead of recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    tangles = []

    def visit(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        return node, iter(graph[node])

    for start in graph:
        walk = [] if start in index else [visit(start)]
        while walk:
            node, successors = walk[-1]
            successor = next(successors, None)
            if successor is not None and successor not in index:
                walk.append(visit(successor))
            elif successor is not None:
                if successor in stack:
                    low[node] = min(low[node], index[successor])
            else:
                walk.pop()
                if walk:
                    low[walk[-1][0]] = min(low[walk[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(component) > 1:
                        tangles.append(sorted(component))
    return tangles


def _cycle(graph: dict[str, dict[str, Import]], start: str, within: set[str]) -> list[Import]:
    """A shortest chain of imports from `start` back to itself through the modules `within`
    (breadth first)."""
    reached: dict[str, Import] = {}
    queue = deque([start])
    while start not in reached:
        for imported, edge in graph[queue.popleft()].items():
            if imported in within and imported not in reached:
                reached[imported] = edge
                queue.append(imported)
    chain = [reached[start]]
    while chain[0].importer != start:
        chain.insert(0, reached[chain[0].importer])
    return chain


def _cycles(root: Path) -> list[tuple[list[str], list[Import]]]:
    """Each tangle of the package at `root` with a shortest import cycle through it (one
    wrong import can tangle dozens of modules, in as many cycles: the shortest shows it)."""
    graph = _graph(root)
    return [(tangle, min((_cycle(graph, start, set(tangle)) for start in tangle), key=len))
            for tangle in _tangles(graph)]


def test_pyburn_has_no_import_cycle():
    cycles = _cycles(PACKAGE)
    assert not cycles, "import cycles (break one import of each, then look again):\n" + "\n".join(
        f"  {len(tangle)} modules import each other, the shortest way round:\n    "
        + "\n    ".join(map(str, chain)) for tangle, chain in cycles)


def test_the_cycle_check_follows_functions_and_packages_but_not_type_checking(tmp_path):
    files = {"__init__.py": "",
             "a.py": "from .sub import b\n",  # runs pkg.sub, then pkg.sub.b
             "sub/__init__.py": "from .. import c\n", "sub/b.py": "",
             "c.py": "def load():\n    import pkg.a\n",
             "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import E\n",
             "e.py": "from . import d\n"}
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    graph = _graph(tmp_path / "pkg")
    assert _tangles(graph) == [["pkg.a", "pkg.c", "pkg.sub"]]
    assert [str(edge) for edge in _cycle(graph, "pkg.a", {"pkg.a", "pkg.c", "pkg.sub"})] == [
        f"pkg.a -> pkg.sub (through pkg.sub.b)  at {Path('pkg', 'a.py')}:1",
        f"pkg.sub -> pkg.c  at {Path('pkg', 'sub', '__init__.py')}:1",
        f"pkg.c -> pkg.a  at {Path('pkg', 'c.py')}:2"]


def _comments(source: str) -> dict[int, str]:
    """Each line's comment, by line number."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0]: token.string for token in tokens if token.type == tokenize.COMMENT}


def _says_why(comment: str | None) -> bool:
    """Whether a comment holds words besides tool directives (``noqa``, ``type: ignore``)."""
    return comment is not None and re.search("[a-z]", DIRECTIVE.sub("", comment), re.I) is not None


def _unexplained(path: Path) -> list[int]:
    """The lines of the imports inside functions in `path` that give no reason: a comment on
    the statement's own lines, or a comment line directly above it (or above the run of import
    lines it belongs to)."""
    source = path.read_text()
    lines, comments = source.splitlines(), _comments(source)
    inner = [node for node, in_function in _import_statements(ast.parse(source)) if in_function]
    spans = {node: range(node.lineno, (node.end_lineno or node.lineno) + 1) for node in inner}
    import_lines = {line for span in spans.values() for line in span}
    missing = []
    for node, span in spans.items():
        above = node.lineno - 1
        while above in import_lines:
            above -= 1
        said_above = above > 0 and lines[above - 1].lstrip().startswith("#")
        if not (any(_says_why(comments.get(line)) for line in span) or
                said_above and _says_why(comments[above])):
            missing.append(node.lineno)
    return missing


def test_imports_inside_functions_say_why():
    """An import inside a function is there for an optional dependency (numpy, wgpu, torch...)
    or for import time (a module that loads on first use), and a comment says which; any other
    import belongs at the top of its module."""
    missing = [f"{path.relative_to(PACKAGE.parent)}:{line}"
               for path in _modules(PACKAGE).values() for line in _unexplained(path)]
    assert not missing, ("imports inside functions with no comment saying why (an optional "
                         "dependency, or import time); move the others to the top:\n  "
                         + "\n  ".join(missing))
