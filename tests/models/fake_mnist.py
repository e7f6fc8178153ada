"""Tiny MNIST files for tests: random 28×28 images in MNIST's IDX layout, so that nothing is
downloaded and runs take seconds."""

from __future__ import annotations

import random
import struct
from pathlib import Path

NAMES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def write_fake_mnist(data_root: Path, train: int = 96, test: int = 32) -> Path:
    """Write `train` training and `test` test images with labels 0-9 into
    ``data_root/mnist`` (where ``$PYBURN_DATA=data_root`` makes `MNIST` look); returns that
    folder."""
    folder = Path(data_root) / "mnist"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for is_train, count in ((True, train), (False, test)):
        images_name, labels_name = NAMES[is_train]
        pixels = rng.randbytes(count * 28 * 28)
        labels = bytes(i % 10 for i in range(count))
        (folder / images_name).write_bytes(bytes([0, 0, 8, 3]) + struct.pack(">III", count, 28, 28)
                                           + pixels)
        (folder / labels_name).write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", count) + labels)
    return folder
