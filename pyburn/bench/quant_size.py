"""What quantized weights save: the draw-a-digit page's MNIST CNN (52,162 parameters) as the
safetensors file the page fetches, float32 against ``pyburn.quant`` int8 (symmetric, per
channel) and int4 (block-wise, 32), as written and compressed as a first visit transfers it
(brotli at quality 11, what ``pyburn web build`` serves; gzip where brotli is missing).

Each row's value is the quantized file's size in KB and its peer the float32 file's; the
ratio is float32 over quantized (above 1: smaller). The issue's goal for int8: half of
today's weights (ratio at least 2). The weights are the float32 ones the site's build
quantizes (``artifacts/mnist.safetensors`` from ``make demo``, else
``build/mnist-quick.safetensors`` from ``make site``), else a fresh model's (the same sizes
written; compressed sizes differ a little).
"""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyburn

from .. import quant, store
from ..models.mnist import MnistCNN, load_mnist
from ..nn.module import Module
from . import peers
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings

ROOT = Path(__file__).resolve().parents[2]
#: the float32 weights the site's build quantizes: `make demo`'s, else `make site`'s own
SITE_WEIGHTS = (ROOT / "artifacts" / "mnist.safetensors",
                ROOT / "build" / "mnist-quick.safetensors")
#: the issue's goal: int8 weights half the size of today's
TARGET = Target("ratio", at_least=True, bound=2.0)
SCHEMES = (("int8 per-channel", quant.INT8_SYMMETRIC_PER_CHANNEL, TARGET),
           ("int4 block 32", quant.INT4_BLOCK32, None))


def _model() -> tuple[Module, str]:
    """The page's model and where its weights come from."""
    for path in SITE_WEIGHTS:
        if path.is_file():
            return load_mnist(path.read_bytes(), device="cpu"), "trained"
    pyburn.manual_seed(0)
    return MnistCNN(device="cpu").eval(), "random"


def _compressor() -> tuple[str, Callable[[bytes], bytes]]:
    brotli = peers.load("brotli")
    if brotli is None:
        return "gzip", lambda data: gzip.compress(data, 9, mtime=0)
    return "brotli", lambda data: brotli.compress(data, quality=11)


def measure_cpu(settings: Settings) -> list[Row]:
    """The sizes of the page's weights, float32 and quantized, raw and compressed."""
    kind, compress = _compressor()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        floats = os.path.join(folder, "float32.safetensors")
        model, weights = _model()
        store.save(model, floats)
        plain = Path(floats).read_bytes()
        for label, scheme, target in SCHEMES:
            path = os.path.join(folder, "quantized.safetensors")
            quant.save(quant.quantize(_model()[0], scheme), path)
            packed = Path(path).read_bytes()
            for what, mine, theirs in (("safetensors", packed, plain),
                                       (f"safetensors, {kind}", compress(packed),
                                        compress(plain))):
                case = f"MNIST CNN ({weights} weights), {label}: {what}"
                rows.append(Row("quant_size.cpu", case, "KB", len(mine) / 1e3, len(mine) / 1e3,
                                "float32", len(theirs) / 1e3, len(theirs) / len(mine), target,
                                settings.quick))
    return rows


BENCHMARKS = (Benchmark("quant_size", "cpu", "the draw-a-digit model's weights: float32 vs "
                        "int8 and int4 safetensors, raw and brotli'd", measure_cpu),)
