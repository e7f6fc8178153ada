"""Where builds get Pyodide (`pyburn.web.pyodide`): a folder must hold the runtime; the copy
serves only the packages asked for, with their dependencies, each under its own hash (PyPI's
micropip under PyPI's, which Pyodide's lock does not record), and the standard library with
its members stored, the modules a page's start loads byte-compiled by Pyodide's Python."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

import pyburn
from pyburn.web import pyodide

MICROPIP = "micropip-0.11.1-py3-none-any.whl"
PYODIDE = Path(__file__).resolve().parents[2] / "node_modules" / "pyodide"


@pytest.fixture
def no_node(monkeypatch):
    """A stand-in distribution has no Python to run: its copy takes the path of a machine
    without Node.js (the standard library stored as it is)."""
    monkeypatch.setattr(pyodide, "run_python", lambda *args: False)


def distribution(root: Path, wheels: dict[str, bytes]) -> Path:
    """A Pyodide folder with stand-in runtime files and a lock of micropip, numpy (which
    depends on a library) and that library; `wheels` are the package files it holds."""
    folder = root / "pyodide-dist"
    folder.mkdir()
    for name in pyodide.RUNTIME_FILES:
        if name == pyodide.STDLIB:
            with zipfile.ZipFile(folder / name, "w", zipfile.ZIP_DEFLATED) as stdlib:
                stdlib.writestr("os.py", "import sys\n" * 100)
        else:
            (folder / name).write_bytes(name.encode())
    packages = {
        "micropip": {"name": "micropip", "file_name": MICROPIP, "sha256": "the CDN's",
                     "depends": []},
        "numpy": {"name": "numpy", "file_name": "numpy.whl", "sha256": "?", "depends": ["lib"]},
        "lib": {"name": "lib", "file_name": "lib.whl", "sha256": "?", "depends": []},
    }
    (folder / pyodide.LOCK).write_text(json.dumps({"info": {}, "packages": packages}))
    for name, data in wheels.items():
        (folder / name).write_bytes(data)
    return folder


def served(out: Path) -> dict:
    return json.loads((out / pyodide.LOCK).read_text())["packages"]


def test_packages_come_with_their_dependencies_under_their_own_hashes(tmp_path, no_node):
    source = distribution(tmp_path, {"numpy.whl": b"numpy", "lib.whl": b"lib"})
    out = tmp_path / "out"
    assert pyodide.copy_runtime(source, out, ["numpy"]) == ["lib", "numpy"]
    lock = served(out)
    assert sorted(lock) == ["lib", "numpy"]
    assert lock["numpy"]["sha256"] == hashlib.sha256(b"numpy").hexdigest()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*pyodide.RUNTIME_FILES, pyodide.LOCK, "numpy.whl", "lib.whl"])


def test_npm_pyodide_serves_pypi_micropip_under_its_own_hash(tmp_path, monkeypatch, no_node):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path / "cache"))
    cached = pyodide.cache_dir() / "pypi" / MICROPIP  # what `pip download` left there
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"PyPI's micropip")
    out = tmp_path / "out"
    assert pyodide.copy_runtime(distribution(tmp_path, {}), out, ["micropip"]) == ["micropip"]
    assert (out / MICROPIP).read_bytes() == b"PyPI's micropip"
    assert served(out)["micropip"]["sha256"] == hashlib.sha256(b"PyPI's micropip").hexdigest()


def test_the_standard_library_is_stored_with_the_same_members(tmp_path, no_node):
    source = distribution(tmp_path, {})
    pyodide.copy_runtime(source, tmp_path / "out", [])
    with zipfile.ZipFile(source / pyodide.STDLIB) as before, \
            zipfile.ZipFile(tmp_path / "out" / pyodide.STDLIB) as after:
        assert [m.compress_type for m in after.infolist()] == [zipfile.ZIP_STORED]
        assert after.read("os.py") == before.read("os.py")


def test_the_modules_a_page_starts_with_are_byte_compiled(tmp_path):
    if not PYODIDE.is_dir():
        pytest.fail("node_modules/pyodide is missing: run `make node_modules/.installed`")
    pyodide.copy_stdlib(PYODIDE, tmp_path / pyodide.STDLIB)
    with zipfile.ZipFile(PYODIDE / pyodide.STDLIB) as before, \
            zipfile.ZipFile(tmp_path / pyodide.STDLIB) as after:
        names = set(after.namelist())
        assert {m.compress_type for m in after.infolist()} == {zipfile.ZIP_STORED}
        # Pyodide's start and pyburn's import (os, re, importlib.resources, json) compiled,
        # the rest (a mail client, difflib) kept as sources, nothing lost
        for module in ("os", "re/__init__", "importlib/resources/__init__", "json/__init__"):
            assert f"{module}.pyc" in names and f"{module}.py" not in names, module
            header = after.read(f"{module}.pyc")[:8]
            assert header[4:] == (1).to_bytes(4, "little")  # hash-based, unchecked
        for module in ("smtplib", "difflib"):
            assert after.read(f"{module}.py") == before.read(f"{module}.py")
        assert {n.removesuffix("c") for n in names} == set(before.namelist())


@pytest.mark.parametrize("ask,message", [(["scipy"], "has no package named 'scipy'"),
                                         (["numpy"], "has no wheel of lib")])
def test_a_package_the_distribution_lacks_is_named(tmp_path, ask, message, no_node):
    with pytest.raises(pyburn.WebBuildError, match=message):
        pyodide.copy_runtime(distribution(tmp_path, {}), tmp_path / "out", ask)


def test_a_folder_that_is_not_pyodide_is_refused(tmp_path):
    with pytest.raises(pyburn.WebBuildError, match="lacks pyodide.mjs"):
        pyodide.find(tmp_path)


def test_without_npm_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    monkeypatch.setattr(pyodide.shutil, "which", lambda name: None)
    with pytest.raises(pyburn.WebBuildError, match="apt-get install npm"):
        pyodide.find()
