"""CocoDetection against pycocotools' reading of the same annotation file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from pycocotools.coco import COCO

import pyburn
from pyburn.data.datasets import CocoDetection

ANNOTATIONS = {
    "images": [{"id": 42, "file_name": "b.png", "width": 4, "height": 3},
               {"id": 7, "file_name": "sub/a.png", "width": 4, "height": 3},
               {"id": 9, "file_name": "c.png", "width": 4, "height": 3}],
    "annotations": [
        {"id": 1, "image_id": 42, "bbox": [0.5, 1, 2, 1.25], "category_id": 3, "iscrowd": 0,
         "area": 2.5},
        {"id": 2, "image_id": 7, "bbox": [0, 0, 4, 3], "category_id": 1, "iscrowd": 1,
         "area": 12},
        {"id": 3, "image_id": 42, "bbox": [1, 0.25, 1, 1], "category_id": 1, "iscrowd": 0,
         "area": 1},
    ],
    "categories": [{"id": 1, "name": "cat"}, {"id": 3, "name": "dog"}],
}


@pytest.fixture
def coco(tmp_path):
    rng = np.random.default_rng(0)
    for image in ANNOTATIONS["images"]:
        path = tmp_path / "images" / image["file_name"]
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (3, 4, 3), dtype=np.uint8)).save(path)
    (tmp_path / "ann.json").write_text(json.dumps(ANNOTATIONS))
    return tmp_path


def test_items_match_pycocotools(coco):
    ds = CocoDetection(coco / "images", coco / "ann.json")
    reference = COCO(str(coco / "ann.json"))
    assert ds.ids == sorted(reference.getImgIds()) == [7, 9, 42]
    assert ds.categories == {c["id"]: c["name"] for c in reference.loadCats([1, 3])}
    for i, image_id in enumerate(ds.ids):
        image, target = ds[i]
        info = reference.loadImgs([image_id])[0]
        assert ds.paths[i] == coco / "images" / info["file_name"]
        pixels = np.asarray(Image.open(ds.paths[i])).transpose(2, 0, 1)
        np.testing.assert_array_equal(image.numpy(), pixels.astype(np.float32) / np.float32(255))
        objects = reference.loadAnns(reference.getAnnIds(imgIds=[image_id]))
        boxes = np.array([[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in objects)],
                         dtype=np.float32).reshape(-1, 4)
        assert target["image_id"] == image_id
        assert target["boxes"].dtype is pyburn.float32 and target["boxes"].shape == boxes.shape
        np.testing.assert_array_equal(target["boxes"].numpy(), boxes)
        assert target["labels"].dtype is pyburn.int32
        assert target["labels"].tolist() == [a["category_id"] for a in objects]
        assert target["iscrowd"].tolist() == [a["iscrowd"] for a in objects]
    assert ds[1][1]["boxes"].shape == (0, 4)  # image 9 has no objects
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        ds[3]


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("images"), "no list of 'images'"),
    (lambda d: d["images"].append({"id": 7, "file_name": "x.png"}), "two images have the id 7"),
    (lambda d: d["annotations"][1].update(image_id=5), "annotation 1 .*image 5, which"),
    (lambda d: d["annotations"][0].update(bbox=[1, 2, 3]), "annotation 0 .*4 numbers"),
    (lambda d: d["annotations"][2].pop("category_id"), "annotation 2 .*needs 'category_id'"),
    (lambda d: d["annotations"][2].update(iscrowd=2), "iscrowd is 0 or 1"),
])
def test_bad_annotation_files(coco, change, message):
    data = json.loads(json.dumps(ANNOTATIONS))
    change(data)
    (coco / "bad.json").write_text(json.dumps(data))
    with pytest.raises(pyburn.FormatError, match=message):
        CocoDetection(coco / "images", coco / "bad.json")


def test_missing_files(coco):
    (coco / "broken.json").write_text('{"images": [')
    with pytest.raises(pyburn.FormatError, match="broken.json is not JSON"):
        CocoDetection(coco / "images", coco / "broken.json")
    with pytest.raises(pyburn.ArgumentError, match="none.json is no such file"):
        CocoDetection(coco / "images", coco / "none.json")
