"""The page's pyburn wheel (`pyburn.web.wheel`): what it leaves out still imports without what
it left out, an app that uses a left-out part keeps it, and the archive is a wheel whose
RECORD matches its members."""

from __future__ import annotations

import ast
import base64
import hashlib
import zipfile

import pytest

import pyburn
from pyburn.web.wheel import (
    BROWSER_EXCLUDE,
    browser_files,
    kept_paths,
    needs_source,
    package_files,
    pyburn_names,
    write_wheel,
)


def module_level_imports(name: str, source: str) -> set[str]:
    """The pyburn modules a module (wheel path `name`) imports when it is imported: at the top
    level and in top-level ifs and trys, not under TYPE_CHECKING, not inside functions."""
    package = name.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    if not name.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    found: set[str] = set()
    pending = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {m for m in found if m.startswith("pyburn")}


@pytest.mark.parametrize("exclude", [tuple(BROWSER_EXCLUDE),
                                     ("pyburn/web", "pyburn/cli.py", "pyburn/__main__.py")],
                         ids=["app", "demo-site"])
def test_what_the_wheel_keeps_imports_nothing_it_leaves_out(exclude):
    # the demo site's wheel keeps all but the build tool (site/build.py's EXCLUDE)
    every, kept = package_files(), browser_files(exclude)
    missing = set()
    for name, path in kept.items():
        if name.endswith(".py"):
            for module in module_level_imports(name, path.read_text()):
                base = module.replace(".", "/")
                for candidate in (f"{base}.py", f"{base}/__init__.py"):
                    if candidate in every and candidate not in kept:
                        missing.add(f"{name} imports {module}")
    assert not missing


def test_every_left_out_part_exists():
    every = package_files()
    for path in BROWSER_EXCLUDE:
        assert path in every or any(name.startswith(path + "/") for name in every), path


@pytest.mark.parametrize("source,kept", [
    ("from pyburn import onnx\nonnx.load('m.onnx')\n", set()),
    ("from pyburn import onnx\nonnx.export(model, x, 'm.onnx')\n", {"pyburn/onnx/exporter"}),
    ("import pyburn.onnx as o\no.convert('m.onnx', 'out')\n", {"pyburn/onnx/codegen.py"}),
    ("def later():\n    from pyburn.bench import report\n", {"pyburn/bench"}),
    ("import pyburn\npyburn.remote.server.Server\n", {"pyburn/remote/server.py"}),
    ("import numpy\nfrom pyburn import nn\n", set()),
])
def test_an_app_keeps_the_parts_it_uses(source, kept):
    assert kept_paths([source], BROWSER_EXCLUDE) == kept


def test_names_follow_import_aliases():
    assert pyburn_names("from pyburn import onnx as o\no.export\n") >= {"pyburn.onnx.export"}
    assert "pyburn.onnx.export" not in pyburn_names("export = 1\nexport.onnx\n")


def test_kernel_modules_keep_their_sources():
    assert needs_source("from pyburn.kernel import kernel\n@kernel\ndef k(x):\n    pass\n")
    assert needs_source("import pyburn.kernel as pk\n@pk.kernel\ndef k(x):\n    pass\n")
    assert not needs_source("import functools\n@functools.cache\ndef k():\n    pass\n")


def test_the_wheel_is_a_wheel_whose_record_matches(tmp_path):
    files = {name: path for name, path in browser_files(BROWSER_EXCLUDE).items()
             if name.startswith(("pyburn/__init__", "pyburn/errors"))}
    wheel = write_wheel(files, tmp_path, pyodide=None)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = archive.read(next(n for n in names if n.endswith("RECORD"))).decode()
        assert {m.compress_type for m in archive.infolist()} == {zipfile.ZIP_STORED}
        for line in record.splitlines():
            name, digest, size = line.rsplit(",", 2)
            if digest:
                data = archive.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                assert (digest, int(size)) == (f"sha256={expected.decode()}", len(data))
    info = f"pyburn-{pyburn.__version__}.dist-info"
    assert sorted(names) == sorted([*files, *(f"{info}/{n}" for n in ("METADATA", "WHEEL",
                                                                      "RECORD"))])
