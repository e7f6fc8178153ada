"""`make npm`: the page loader as the npm package ``pyburn-web``, a .tgz that
``npm install ./pyburn-web-VERSION.tgz`` accepts.

The package holds the ES modules of the loader with their TypeScript types, an esbuild plugin
and a command (``npx pyburn-web assets DIR``) that put the assets beside a bundle, and those
assets: the pyburn wheel (trimmed and byte-compiled as for `pyburn web build`), Pyodide's
standard library (members stored) and a lock listing no packages. Pyodide's runtime itself
comes from the pinned ``pyodide`` dependency.

    python -m pyburn.web.npm --out build/npm [--pyodide node_modules/pyodide]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyburn

from ..errors import WebBuildError
from . import pyodide
from .build import LOADER_FILES, RUNTIME
from .wheel import BROWSER_EXCLUDE, browser_files, write_wheel

NAME = "pyburn-web"
#: the package's own files, from runtime/npm
PLUGIN_FILES = ("assets.mjs", "cli.mjs", "README.md")


def package_json() -> dict:
    """The package's package.json."""
    return {
        "name": NAME,
        "version": pyburn.__version__,
        "description": "pyburn in a web page: Python (Pyodide) with pyburn in a module Web "
                       "Worker, on WebGPU or WebAssembly; typed arrays in and out.",
        "license": "MIT",
        "type": "module",
        "exports": {".": {"types": "./pyburn.d.ts", "default": "./pyburn.js"},
                    "./plugin": "./assets.mjs"},
        "types": "./pyburn.d.ts",
        "bin": {NAME: "./cli.mjs"},
        "files": [*LOADER_FILES, "pyburn.d.ts", *PLUGIN_FILES, "assets"],
        "dependencies": {"pyodide": pyodide.PYODIDE_VERSION},
    }


def pack(out: Path, source: Path) -> Path:
    """Write the package's .tgz into `out`, with the standard library and wheel made from
    the Pyodide distribution `source`; returns the .tgz's path."""
    npm = shutil.which("npm")
    if npm is None:
        raise WebBuildError("npm is not installed: install Node.js with npm to pack pyburn-web")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / NAME
        folder.mkdir()
        for name in (*LOADER_FILES, "pyburn.d.ts"):
            shutil.copy2(RUNTIME / name, folder / name)
        for name in PLUGIN_FILES:
            shutil.copy2(RUNTIME / "npm" / name, folder / name)
        (folder / "package.json").write_text(json.dumps(package_json(), indent=2) + "\n")
        assets = folder / "assets"
        runtime = Path(scratch) / "runtime"
        pyodide.copy_runtime(source, runtime, [])
        (assets / "pyodide").mkdir(parents=True)
        for name in (pyodide.STDLIB, pyodide.LOCK):
            shutil.copy2(runtime / name, assets / "pyodide" / name)
        (assets / "wheels").mkdir()
        wheel = write_wheel(browser_files(BROWSER_EXCLUDE), assets / "wheels", source)
        manifest = {"pyodide": "pyodide/", "packages": [], "wheels": [f"wheels/{wheel.name}"]}
        (assets / "pyburn-web.json").write_text(json.dumps(manifest, indent=2) + "\n")
        done = subprocess.run([npm, "pack", "--pack-destination", str(out.resolve())],
                              cwd=folder, check=True, capture_output=True, text=True,
                              timeout=120)
    return out / done.stdout.strip().splitlines()[-1]


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder for the .tgz")
    parser.add_argument("--pyodide", type=Path, help="a Pyodide distribution folder "
                        "(default: npm's package, cached)")
    args = parser.parse_args()
    print(f"packed {pack(args.out, pyodide.find(args.pyodide))}")


if __name__ == "__main__":
    main()
