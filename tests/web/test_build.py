"""`pyburn web build` end to end on this machine (the page itself runs in e2e/test_web.py):
the folder holds what a first visit needs, precompressed, within the size budget; the wheel
is trimmed and byte-compiled; a failed build leaves the earlier one as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import pyburn
from pyburn.web import build as web_build
from pyburn.web.app import resolve

ROOT = Path(__file__).resolve().parents[2]
PYODIDE = ROOT / "node_modules" / "pyodide"
EXAMPLE = ROOT / "examples" / "web"
#: the issue's budget for a first visit of a small model's page, gzip'd
BUDGET = 8_000_000


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """The example app, with its model exported here."""
    if not PYODIDE.is_dir():
        pytest.fail("node_modules/pyodide is missing: run `make node_modules/.installed`")
    folder = tmp_path_factory.mktemp("example") / "points"
    shutil.copytree(EXAMPLE / "points", folder, ignore=shutil.ignore_patterns("model.onnx"))
    subprocess.run([sys.executable, str(EXAMPLE / "export_model.py"), "--steps", "20", "--out",
                    str(folder / "model.onnx")], check=True, capture_output=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def built(app, tmp_path_factory) -> web_build.Report:
    out = tmp_path_factory.mktemp("site") / "dist"
    options = web_build.Options(pyodide=PYODIDE, brotli_quality=5)  # (11 takes half a minute)
    return web_build.build(resolve(app), out, options)


def test_the_folder_holds_a_first_visit_within_budget(built):
    out = built.out
    manifest = json.loads((out / "pyburn-web.json").read_text())
    assert manifest["app"] == {"name": "points", "module": "app", "exports": ["predict", "main"],
                               "files": ["app/app.py", "app/model.onnx"]}
    assert manifest["packages"] == []  # no micropip, no numpy: nothing the app does not load
    for name in ["index.html", "pyburn/page.js", "pyburn/worker.js", "pyodide/pyodide.asm.wasm",
                 *manifest["wheels"], *manifest["app"]["files"]]:
        assert (out / name).is_file(), name
    assert (out / "pyodide/pyodide.asm.wasm.gz").is_file()
    assert (out / "pyodide/pyodide.asm.wasm.br").is_file() == built.brotli
    assert built.total("gzip") <= BUDGET, built.table()
    assert built.total("brotli") <= built.total("gzip") < built.total("raw")


def test_the_wheel_is_trimmed_and_compiled(built):
    (wheel,) = (built.out / "wheels").glob("pyburn-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert not any(n.startswith(("pyburn/bench/", "pyburn/web/", "pyburn/onnx/exporter/"))
                   for n in names)
    assert "pyburn/onnx/runner.pyc" in names and "pyburn/onnx/runner.py" not in names
    assert "pyburn/kernel/examples.py" in names  # kernels compile from their source


def test_a_failed_build_leaves_the_earlier_one(built, app):
    before = sorted(p.relative_to(built.out) for p in built.out.rglob("*"))
    broken = web_build.Options(pyodide=PYODIDE, packages=("no-such-package",))
    with pytest.raises(pyburn.WebBuildError, match="no package named 'no-such-package'"):
        web_build.build(resolve(app), built.out, broken)
    assert sorted(p.relative_to(built.out) for p in built.out.rglob("*")) == before
    assert sorted(p.name for p in built.out.parent.iterdir()) == ["dist"]  # no scratch left


def test_a_folder_that_is_not_a_build_is_not_replaced(app, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(pyburn.WebBuildError, match="is not a pyburn build"):
        web_build.build(resolve(app), tmp_path, web_build.Options(pyodide=PYODIDE))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
