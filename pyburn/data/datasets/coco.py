"""`CocoDetection`: object detection from a folder of images and a COCO-format JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._tensor import Tensor
from ...devices import Device
from ...dtypes import float32, int32
from ...errors import FormatError
from ...ops.creation import tensor
from ..dataset import Dataset, check_index
from .files import PathLike, existing_folder, read_text
from .image_folder import load_image


def _field(entry: Any, key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    """``entry[key]``, checked to be one of `kinds` (never a bool)."""
    value = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise FormatError(f"{where} needs {key!r}, got {entry!r:.120}")
    return value


class CocoDetection(Dataset[tuple[Tensor, dict[str, Any]]]):
    """The images the COCO annotation file `annotation_json` lists (its ``images``: ``id``
    and ``file_name``, relative to `images_dir`), ordered by image id, with their objects
    (its ``annotations``: ``image_id``, ``bbox`` as [x, y, width, height] in pixels,
    ``category_id`` and ``iscrowd``, 0 where absent), in the file's order.

    Item ``i`` is ``(image, target)``: `load_image` of the image, float32 (C, H, W) in [0, 1],
    and a dict with ``boxes`` float32 (N, 4) as (x1, y1, x2, y2) corners, ``labels`` int32
    (N,) the category ids as the file gives them, ``iscrowd`` int32 (N,) and ``image_id``,
    an int; N may be 0. `ids` holds the image ids in order, `paths` their files, and
    `categories` maps category ids to names (from ``categories``, where the file has it).

    A file that is not COCO JSON raises `FormatError` naming the entry at fault.
    """

    def __init__(self, images_dir: PathLike, annotation_json: PathLike, *,
                 device: Device | str | None = None):
        root = existing_folder(images_dir, "CocoDetection")
        text = read_text(annotation_json, "CocoDetection")
        try:
            data = json.loads(text)
        except ValueError as error:
            raise FormatError(f"{annotation_json} is not JSON ({error})") from None
        if not isinstance(data, dict) or not isinstance(data.get("images"), list):
            raise FormatError(f"{annotation_json} is not a COCO annotation file: it has no "
                              "list of 'images'")
        for key in ("annotations", "categories"):
            if not isinstance(data.setdefault(key, []), list):
                raise FormatError(f"{annotation_json}: {key!r} is not a list")
        files: dict[int, str] = {}
        for entry in data["images"]:
            image_id = _field(entry, "id", int, f"{annotation_json}: an image")
            if image_id in files:
                raise FormatError(f"{annotation_json}: two images have the id {image_id}")
            files[image_id] = _field(entry, "file_name", str, f"{annotation_json}: image "
                                     f"{image_id}")
        self.ids: list[int] = sorted(files)
        self.paths: list[Path] = [root / files[i] for i in self.ids]
        self.categories: dict[int, str] = {
            _field(c, "id", int, f"{annotation_json}: a category"):
            _field(c, "name", str, f"{annotation_json}: a category")
            for c in data["categories"]}
        self._objects: dict[int, list[tuple[list[float], int, int]]] = {i: [] for i in files}
        for number, entry in enumerate(data["annotations"]):
            where = f"{annotation_json}: annotation {number} (counted from 0)"
            image_id = _field(entry, "image_id", int, where)
            if image_id not in files:
                raise FormatError(f"{where} is of image {image_id}, which 'images' lacks")
            x, y, w, h = self._box(_field(entry, "bbox", list, where), where)
            label = _field(entry, "category_id", int, where)
            crowd = entry.get("iscrowd", 0)
            if crowd not in (0, 1):
                raise FormatError(f"{where}: iscrowd is 0 or 1, got {crowd!r}")
            self._objects[image_id].append(([x, y, x + w, y + h], label, int(crowd)))
        self.device = device

    @staticmethod
    def _box(box: list[Any], where: str) -> list[float]:
        if len(box) != 4 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                    for v in box):
            raise FormatError(f"{where}: a bbox is 4 numbers [x, y, width, height], got {box}")
        return [float(v) for v in box]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> tuple[Tensor, dict[str, Any]]:
        i = check_index(index, len(self.ids), "CocoDetection")
        objects = self._objects[self.ids[i]]
        boxes = [v for box, _, _ in objects for v in box]
        target = {
            "boxes": tensor(boxes, dtype=float32, device=self.device).reshape(len(objects), 4),
            "labels": tensor([label for _, label, _ in objects], dtype=int32,
                             device=self.device),
            "iscrowd": tensor([crowd for _, _, crowd in objects], dtype=int32,
                              device=self.device),
            "image_id": self.ids[i],
        }
        return load_image(self.paths[i], self.device), target

    def __repr__(self) -> str:
        return f"CocoDetection({len(self.ids)} images)"
