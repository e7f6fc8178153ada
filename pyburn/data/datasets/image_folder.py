"""Folders of image files as datasets: classification (`ImageFolder`), multi-label
classification from a CSV file (`MultiLabelImages`) and segmentation (`SegmentationFolder`).

Images are decoded when an item is asked for, by `load_image`: float32 (C, H, W) tensors in
[0, 1], C being the file's own channels (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..._tensor import Tensor
from ...devices import Device
from ...dtypes import float32, int32, uint8
from ...errors import ArgumentError, FormatError, MissingExtraError
from ...ops.creation import tensor
from ..dataset import Dataset, check_index
from .class_folders import ClassFolders, extension_tuple
from .files import PathLike, existing_file, existing_folder
from .tabular import CsvDataset

#: the file name endings `ImageFolder` and `SegmentationFolder` look for
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
#: the Pillow modes that a PNG holds as they are (any other is converted to RGB)
_PNG_MODES = ("1", "L", "LA", "P", "RGB", "RGBA")


def load_image(path: PathLike, device: Device | str | None = None) -> Tensor:
    """The image in the file at `path` as a float32 (C, H, W) tensor in [0, 1] on `device`.

    PNG and JPEG are read by `pyburn.vision.io.read_image` (PNG by pyburn's own decoder,
    JPEG through Pillow); 8-bit samples are divided by 255, 16-bit ones by 65535. Any other
    format Pillow opens (BMP, GIF, WebP, ...) is read through Pillow (the first frame, in
    its own mode, or converted to RGB where a PNG could not hold that mode).
    """
    # for import time: pyburn.vision takes about 0.15 s to import, most of this package's
    from ...vision.io import JPEG_SIGNATURE, read_image
    from ...vision.png import SIGNATURE as PNG_SIGNATURE

    data = existing_file(path, "load_image").read_bytes()
    if not data.startswith((PNG_SIGNATURE, JPEG_SIGNATURE)):
        data = _as_png(data, path)
    try:
        image = read_image(data, device)
    except FormatError as error:
        raise FormatError(f"{path}: {error}") from None
    return image.float() / (255.0 if image.dtype is uint8 else 65535.0)


def _as_png(data: bytes, path: PathLike) -> bytes:
    """An image in a format pyburn does not decode, re-encoded by Pillow as a PNG, so that
    one decoder gives every format the same layout."""
    try:
        from PIL import Image  # optional: Pillow, for formats other than PNG and JPEG
    except ImportError:
        raise MissingExtraError(f"{path} is neither PNG nor JPEG; reading it needs Pillow: "
                                "pip install pillow") from None
    try:
        opened = Image.open(io.BytesIO(data))
        opened.load()
    except (OSError, ValueError) as error:  # Pillow's "cannot identify" is an OSError
        raise FormatError(f"{path}: not an image file pyburn or Pillow can read "
                          f"({error})") from None
    picture = opened if opened.mode in _PNG_MODES else opened.convert("RGB")
    out = io.BytesIO()
    picture.save(out, "PNG", compress_level=0)
    return out.getvalue()


class ImageFolder(ClassFolders[Any]):
    """Image classification from one sub-folder per class (``root/cat/1.png``, ...). Item
    ``i`` is ``(image, label)``: `load_image` of ``paths[i]``, through `transform` if given,
    and the class's index. How classes and files are found and sorted, and what `classes`,
    `class_to_index`, `paths` and `targets` hold: see `ClassFolders`.

        ds = ImageFolder("pets/train")
        image, label = ds[0]          # float32 (3, H, W) in [0, 1], 0 (the first class)
    """

    def __init__(self, root: PathLike, *, transform: Callable[[Tensor], Any] | None = None,
                 extensions: str | Iterable[str] = IMAGE_EXTENSIONS,
                 device: Device | str | None = None):
        if transform is not None and not callable(transform):
            raise ArgumentError(f"ImageFolder's transform must be callable, got {transform!r}")
        super().__init__(root, extensions)
        self.transform = transform
        self.device = device

    def load(self, path: Path) -> Any:
        """The image at `path`, transformed."""
        image = load_image(path, self.device)
        return image if self.transform is None else self.transform(image)


class MultiLabelImages(Dataset[tuple[Tensor, Tensor]]):
    """Multi-label image classification: a CSV file with the columns ``path`` (relative to
    `root`, or absolute) and ``labels`` (class names separated by ";", spaces around them
    ignored; empty for none) names each image and its classes.

    Item ``i`` is ``(image, target)``: `load_image` of the ``i``-th row's file and a float32
    multi-hot vector (K,) with 1 at the index of each of its classes. `classes` holds every
    class name that appears, sorted by ``sorted()`` (code point order); `paths` and `labels`
    each row's file and class names, in the CSV's order. Every file is checked to exist when
    the dataset is made.
    """

    def __init__(self, root: PathLike, labels_csv: PathLike, *,
                 device: Device | str | None = None):
        self.root = existing_folder(root, "MultiLabelImages")
        rows = CsvDataset(labels_csv)
        if not {"path", "labels"} <= set(rows.columns):
            raise FormatError(f"{labels_csv}: a labels file has the columns 'path' and "
                              f"'labels', this one {rows.columns}")
        self.paths: list[Path] = [self.root / row["path"] for row in rows.rows]
        self.labels: list[list[str]] = [
            [name.strip() for name in row["labels"].split(";") if name.strip()]
            for row in rows.rows]
        for path in self.paths:
            if not path.is_file():
                raise FormatError(f"{labels_csv} names {path}, which is not a file")
        self.classes: list[str] = sorted({name for names in self.labels for name in names})
        self.class_to_index: dict[str, int] = {c: i for i, c in enumerate(self.classes)}
        self.device = device

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        i = check_index(index, len(self.paths), "MultiLabelImages")
        target = [0.0] * len(self.classes)
        for name in self.labels[i]:
            target[self.class_to_index[name]] = 1.0
        return (load_image(self.paths[i], self.device),
                tensor(target, dtype=float32, device=self.device))

    def __repr__(self) -> str:
        return (f"MultiLabelImages({str(self.root)!r}, {len(self.paths)} images, "
                f"{len(self.classes)} classes)")


class SegmentationFolder(Dataset[tuple[Tensor, Tensor]]):
    """Semantic segmentation: images in `images_dir` (the files directly in it whose names
    end in one of `IMAGE_EXTENSIONS`, sorted by name), each with the mask of the same stem in
    `masks_dir` (``cat.jpg`` → ``cat.png``).

    Item ``i`` is ``(image, mask)``: `load_image` of the image, and the mask, a single-channel
    PNG (8 or 16 bits) whose values are class indices, as an int32 tensor (H, W) of the
    image's height and width. A palette PNG is decoded to its colours, not its indices, and
    so is refused: save such masks as greyscale. A missing mask raises `FormatError` naming
    the image, when the dataset is made; a mask of the wrong form, when its item is read.
    """

    def __init__(self, images_dir: PathLike, masks_dir: PathLike, *,
                 device: Device | str | None = None):
        images = existing_folder(images_dir, "SegmentationFolder")
        masks = existing_folder(masks_dir, "SegmentationFolder")
        suffixes = extension_tuple(IMAGE_EXTENSIONS, "SegmentationFolder")
        names = sorted(entry.name for entry in os.scandir(images) if entry.is_file()
                       and not entry.name.startswith(".") and entry.name.lower().endswith(suffixes))
        self.image_paths: list[Path] = [images / name for name in names]
        self.mask_paths: list[Path] = [masks / f"{path.stem}.png" for path in self.image_paths]
        stems: dict[str, Path] = {}
        for image, mask in zip(self.image_paths, self.mask_paths):
            if image.stem in stems:
                raise FormatError(f"{stems[image.stem]} and {image} share the stem "
                                  f"{image.stem!r}: which one {mask.name} is the mask of "
                                  "is unclear")
            stems[image.stem] = image
            if not mask.is_file():
                raise FormatError(f"the image {image} has no mask: {mask} is not a file")
        self.device = device

    def __len__(self) -> int:
        return len(self.image_paths)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        from ...vision.png import read_png  # for import time, as in load_image

        i = check_index(index, len(self.image_paths), "SegmentationFolder")
        image = load_image(self.image_paths[i], self.device)
        path = self.mask_paths[i]
        try:
            mask = read_png(path, self.device)
        except FormatError as error:
            raise FormatError(f"{path}: {error}") from None
        if mask.shape[0] != 1 or mask.shape[1:] != image.shape[1:]:
            raise FormatError(f"{path}: a mask is a single-channel PNG of the image's size "
                              f"{image.shape[1:]}; this one has {mask.shape[0]} channel(s) "
                              f"and size {mask.shape[1:]}")
        return image, mask[0].cast(int32)

    def __repr__(self) -> str:
        return f"SegmentationFolder({len(self.image_paths)} images)"
