"""site/build.py's Pyodide folder: npm's package gets PyPI's micropip with the lock's hash
fixed; a full distribution keeps its own micropip and adds numpy (the pages then offer cpu)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parent.parent / "site" / "build.py"
MICROPIP = "micropip-0.11.1-py3-none-any.whl"
NUMPY = "numpy-2.4.6-cp314-cp314-pyemscripten_2026_0_wasm32.whl"


@pytest.fixture(scope="module")
def build():
    """site/build.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("site_build", BUILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def distribution(root: Path, build, *, full: bool) -> Path:
    """A Pyodide folder with placeholder runtime files; `full` adds micropip and numpy."""
    folder = root / "pyodide-dist"
    folder.mkdir()
    for name in build.PYODIDE_FILES:
        (folder / name).write_bytes(name.encode())
    packages = {"micropip": {"file_name": MICROPIP, "sha256": "the CDN's"}}
    if full:
        packages["numpy"] = {"file_name": NUMPY, "sha256": "numpy's"}
        (folder / MICROPIP).write_bytes(b"the distribution's micropip")
        (folder / NUMPY).write_bytes(b"numpy")
    (folder / "pyodide-lock.json").write_text(json.dumps({"packages": packages}))
    return folder


def served_lock(out: Path) -> dict:
    return json.loads((out / "pyodide-lock.json").read_text())["packages"]


def test_npm_pyodide_serves_pypi_micropip_under_its_own_hash(tmp_path, build):
    pypi = tmp_path / MICROPIP
    pypi.write_bytes(b"PyPI's micropip")
    out = tmp_path / "out"
    assert build.copy_pyodide(distribution(tmp_path, build, full=False), pypi, out) == []
    assert (out / MICROPIP).read_bytes() == b"PyPI's micropip"
    assert served_lock(out)["micropip"]["sha256"] == hashlib.sha256(b"PyPI's micropip").hexdigest()
    assert sorted(p.name for p in out.iterdir()) == sorted([*build.PYODIDE_FILES,
                                                            "pyodide-lock.json", MICROPIP])


def test_a_full_distribution_keeps_its_micropip_and_adds_numpy(tmp_path, build):
    pypi = tmp_path / MICROPIP
    pypi.write_bytes(b"PyPI's micropip")
    out = tmp_path / "out"
    assert build.copy_pyodide(distribution(tmp_path, build, full=True), pypi, out) == ["numpy"]
    assert (out / MICROPIP).read_bytes() == b"the distribution's micropip"
    assert (out / NUMPY).read_bytes() == b"numpy"
    assert served_lock(out)["micropip"]["sha256"] == "the CDN's"
