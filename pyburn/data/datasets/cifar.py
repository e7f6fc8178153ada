"""CIFAR-10: 32×32 colour images in 10 classes, from the "python version" of its files.

The files (``data_batch_1`` to ``data_batch_5``, ``test_batch``) are pickles of dicts with
bytes keys: ``b"data"``, a uint8 numpy array (N, 3072), each row an image's red, green and
blue 32×32 planes, and ``b"labels"``, a list of N ints. They are read with `load_pickle`,
which runs no code from the file and needs no numpy; the images are kept as one bytes object.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from ..._tensor import Tensor
from ...devices import Device
from ...dtypes import int32, uint8
from ...errors import FormatError
from ...ops.creation import tensor
from ...ops.indexing import index_select
from ..dataset import Dataset, check_index
from .files import PathLike
from .mnist import DatasetUnavailableError, data_root
from .safe_pickle import PickledArray, load_pickle

IMAGE_BYTES = 3 * 32 * 32


class CIFAR10(Dataset[tuple[Tensor, int]]):
    """CIFAR-10's 50,000 training images (``data_batch_1`` to ``_5``, in that order) or its
    10,000 test images (``test_batch``), from the folder `root` (default
    ``$PYBURN_DATA/cifar-10-batches-py``, the folder in the tarball).

    Item ``i`` is ``(image, label)``: a float32 tensor (3, 32, 32) of the bytes / 255, in
    [0, 1], and an int indexing `classes`. `get_batch` is `DataLoader`'s fast path: one
    `index_select` on `tensors()`, the whole split as uint8 images (N, 3, 32, 32) and int32
    labels (N,), made on the first call and then kept, on `device`.
    """

    #: the class names, by label (as the files' ``batches.meta`` gives them)
    classes: ClassVar[tuple[str, ...]] = ("airplane", "automobile", "bird", "cat", "deer",
                                          "dog", "frog", "horse", "ship", "truck")
    train_files: ClassVar[tuple[str, ...]] = tuple(f"data_batch_{k}" for k in range(1, 6))
    test_files: ClassVar[tuple[str, ...]] = ("test_batch",)

    def __init__(self, root: PathLike | None = None, train: bool = True, *,
                 device: Device | str | None = None):
        self.root = Path(root) if root is not None else data_root() / "cifar-10-batches-py"
        self.train = train
        self.device = device
        names = self.train_files if train else self.test_files
        missing = [name for name in names if not (self.root / name).is_file()]
        if missing:
            raise DatasetUnavailableError(
                f"CIFAR10 is not in {self.root} ({', '.join(missing)} missing). Get "
                "cifar-10-python.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and "
                f"put the files of its folder cifar-10-batches-py in {self.root}.")
        images: list[bytes] = []
        #: every image's label, in order
        self.labels: list[int] = []
        for name in names:
            data, labels = _read_batch(self.root / name, len(self.classes))
            images.append(data)
            self.labels.extend(labels)
        #: every image's bytes: image ``i`` is ``data[i * 3072:(i + 1) * 3072]``, (3, 32, 32)
        self.data = b"".join(images)
        self._tensors: tuple[Tensor, Tensor] | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        i = check_index(index, len(self.labels), "CIFAR10")
        pixels = self.data[i * IMAGE_BYTES:(i + 1) * IMAGE_BYTES]
        image = tensor(pixels, shape=(3, 32, 32), dtype=uint8, device=self.device)
        return image.float() / 255.0, self.labels[i]

    def tensors(self) -> tuple[Tensor, Tensor]:
        """The whole split: uint8 images (N, 3, 32, 32) and int32 labels (N,) on `device`."""
        if self._tensors is None:
            self._tensors = (tensor(self.data, shape=(len(self), 3, 32, 32), dtype=uint8,
                                    device=self.device),
                             tensor(self.labels, dtype=int32, device=self.device))
        return self._tensors

    def get_batch(self, indices: Sequence[int]) -> tuple[Tensor, Tensor]:
        """Images float32 (B, 3, 32, 32) in [0, 1] and int32 labels (B,) for `indices`: the
        items' values, by one `index_select` per tensor."""
        images, labels = self.tensors()
        n = len(self)
        index = tensor([check_index(i, n, "CIFAR10") for i in indices], dtype=int32,
                       device=images.device)
        return index_select(images, 0, index).float() / 255.0, index_select(labels, 0, index)

    def __repr__(self) -> str:
        split = "train" if self.train else "test"
        return f"CIFAR10(root={str(self.root)!r}, {split}, {len(self)} items)"


def _read_batch(path: Path, classes: int) -> tuple[bytes, list[int]]:
    """The image bytes and the labels of one batch file, checked."""
    batch = load_pickle(path.read_bytes(), str(path))
    data = batch.get(b"data") if isinstance(batch, dict) else None
    labels = batch.get(b"labels") if isinstance(batch, dict) else None
    if not isinstance(data, PickledArray) or not isinstance(labels, list):
        raise FormatError(f"{path}: a CIFAR-10 batch is a dict with b'data' (an array) and "
                          f"b'labels' (a list), got {type(batch).__name__}")
    if data.dtype != "u1" or len(data.shape) != 2 or data.shape[1] != IMAGE_BYTES \
            or data.fortran:
        raise FormatError(f"{path}: b'data' should be uint8 (N, {IMAGE_BYTES}) in row-major "
                          f"order, got {data!r}{' (column-major)' if data.fortran else ''}")
    if len(data.data) != data.shape[0] * IMAGE_BYTES or len(labels) != data.shape[0]:
        raise FormatError(f"{path}: {data.shape[0]} images, {len(data.data)} bytes of data "
                          f"and {len(labels)} labels do not fit together")
    for label in labels:
        if not isinstance(label, int) or isinstance(label, bool) or not 0 <= label < classes:
            raise FormatError(f"{path}: label {label!r} is not a class index below {classes}")
    return data.data, labels
