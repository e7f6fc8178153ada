"""`pyburn web build`'s checks of an app, through the command line: each bad input is refused
with a `pyburn.WebBuildError` that says what to fix, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

import pyburn
from pyburn.cli import main
from pyburn.web.app import resolve

APP = "def predict(x):\n    return x\n\ndef _helper():\n    pass\n"


def folder_app(root: Path, files: dict[str, str | bytes]) -> Path:
    """A folder app under `root` holding `files` (name -> text or bytes)."""
    app = root / "app"
    for name, content in files.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (app / name).write_bytes(content)
        else:
            (app / name).write_text(content)
    return app


def test_a_folder_ships_its_python_files_and_page_files_apart(tmp_path):
    app = folder_app(tmp_path, {"app.py": APP, "weights/w.bin": b"\0" * 8, "index.html": "<p>",
                                "style.css": "p{}", ".hidden": "x", "__pycache__/a.pyc": b"x"})
    found = resolve(app, skip=[app / "dist"])
    assert (found.module, found.exports) == ("app", ("predict",))
    assert sorted(found.python_files) == ["app.py", "weights/w.bin"]
    assert sorted(found.page_files) == ["index.html", "style.css"]


def test_a_module_ships_what_its_assets_list_names(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"weights")
    (tmp_path / "other.bin").write_bytes(b"not shipped")
    module = tmp_path / "digits.py"
    module.write_text('ASSETS = ["model.bin"]\n' + APP)
    found = resolve(module)
    assert (found.name, sorted(found.python_files)) == ("digits", ["digits.py", "model.bin"])


def corrupt_safetensors(app: Path) -> list[str]:
    (app / "model.safetensors").write_bytes((10**6).to_bytes(8, "little") + b"{}")
    return []


def corrupt_onnx(app: Path) -> list[str]:
    (app / "model.onnx").write_bytes(b"\xff\xff\xff\xff not protobuf")
    return []


def dangling_link(app: Path) -> list[str]:
    (app / "weights.bin").symlink_to(app / "gone.bin")
    return []


def link_outside(app: Path) -> list[str]:
    (app.parent / "secret.txt").write_text("outside")
    (app / "secret.txt").symlink_to(app.parent / "secret.txt")
    return []


def listed_outside(app: Path) -> list[str]:
    (app.parent / "secret.txt").write_text("outside")
    (app / "app.py").write_text('ASSETS = ["../secret.txt"]\n' + APP)
    return [str(app / "app.py")]


def asset_outside(app: Path) -> list[str]:
    (app.parent / "secret.txt").write_text("outside")
    return ["--asset", str(app.parent / "secret.txt")]


def no_entry(app: Path) -> list[str]:
    (app / "app.py").rename(app / "model.py")
    return []


def missing_entry(app: Path) -> list[str]:
    return ["--entry", "serve"]


def syntax_error(app: Path) -> list[str]:
    (app / "app.py").write_text("def predict(:\n")
    return []


def computed_assets(app: Path) -> list[str]:
    (app / "app.py").write_text('ASSETS = [name for name in ("a", "b")]\n' + APP)
    return [str(app / "app.py")]


def not_python(app: Path) -> list[str]:
    (app / "notes.txt").write_text("hello")
    return [str(app / "notes.txt")]


#: a way to break an app (it may name the APP argument instead of the folder), and what the
#: error must say
BROKEN = {
    corrupt_safetensors: "not a readable safetensors file",
    corrupt_onnx: "not a readable onnx file",
    dangling_link: "cannot read",
    link_outside: "lies outside the app's folder",
    listed_outside: "lies outside the app's folder",
    asset_outside: "lies outside the app's folder",
    no_entry: "has no entry point: add app.py or main.py",
    missing_entry: "the entry point 'serve' is not a module",
    syntax_error: "does not compile",
    computed_assets: "ASSETS must be a list of file names",
    not_python: "is not a Python module",
}


@pytest.mark.parametrize("breaks", list(BROKEN), ids=lambda f: f.__name__)
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, capsys, breaks):
    app = folder_app(tmp_path, {"app.py": APP})
    extra = breaks(app)
    target = [extra.pop(0)] if extra and not extra[0].startswith("--") else [str(app)]
    out = tmp_path / "dist"
    assert main(["web", "build", *target, "-o", str(out), *extra]) == 1
    message = capsys.readouterr().err
    assert message.startswith("pyburn web: error: ")
    assert BROKEN[breaks] in message
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["app", *(["secret.txt"] if "outside" in breaks.__name__ else [])])


def test_the_error_is_a_pyburn_error(tmp_path):
    with pytest.raises(pyburn.WebBuildError, match="no app at"):
        resolve(tmp_path / "nothing")
