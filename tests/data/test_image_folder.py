"""ImageFolder, MultiLabelImages and SegmentationFolder over tiny files Pillow writes, each
image checked against Pillow's own decode of the file."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import pyburn
from pyburn.data.datasets import ImageFolder, MultiLabelImages, SegmentationFolder, load_image

RNG = np.random.default_rng(0)


def save(path, mode="RGB", size=(4, 3), **kwargs):
    """A random image of `mode` and size (width, height) saved at `path`; its pixels."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (size[1], size[0]) + ({"L": (), "LA": (2,), "RGBA": (4,)}.get(mode, (3,)))
    pixels = RNG.integers(0, 256, size=shape, dtype=np.uint8)
    Image.fromarray(pixels, mode).save(path, **kwargs)
    return pixels


def pillow_reference(path):
    """The file's pixels as Pillow decodes them, as float32 (C, H, W) in [0, 1]."""
    with Image.open(path) as image:
        pixels = np.asarray(image)
    planes = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
    return planes.astype(np.float32) / np.float32(255)


@pytest.fixture
def folder(tmp_path):
    """root/<class>/...: classes whose sorted order is by code point, nested files, and files
    that are not images of the class (hidden, other extensions)."""
    root = tmp_path / "root"
    save(root / "b" / "z.png")
    save(root / "b" / "deep" / "a.png", "L")
    save(root / "b" / "deep-er.png", "RGBA")
    save(root / "A" / "only.JPG", format="JPEG")
    save(root / "a" / "x.bmp")
    save(root / "a" / ".hidden.png")
    (root / "a" / "notes.txt").write_text("not an image")
    (root / ".cache").mkdir()
    (root / "empty").mkdir()
    (root / "stray.png").write_bytes(b"")  # not in a class folder
    return root


def test_image_folder_classes_paths_and_pixels(folder):
    ds = ImageFolder(folder)
    assert ds.classes == ["A", "a", "b", "empty"]
    assert ds.class_to_index == {"A": 0, "a": 1, "b": 2, "empty": 3}
    # within a class: by relative path, folder by folder ("deep/a.png" before "deep-er.png")
    assert ds.paths == [folder / "A" / "only.JPG", folder / "a" / "x.bmp",
                        folder / "b" / "deep" / "a.png", folder / "b" / "deep-er.png",
                        folder / "b" / "z.png"]
    assert ds.targets == [0, 1, 2, 2, 2] and len(ds) == 5
    for i, path in enumerate(ds.paths):
        image, label = ds[i]
        assert image.dtype is pyburn.float32 and label == ds.targets[i]
        np.testing.assert_array_equal(image.numpy(), pillow_reference(path))
    assert ds[3][0].shape == (4, 3, 4) and ds[2][0].shape == (1, 3, 4)
    with pytest.raises(pyburn.IndexOutOfRange, match="length 5"):
        ds[5]


def test_image_folder_transform_extensions_and_relative_root(folder, monkeypatch):
    monkeypatch.chdir(folder.parent)
    ds = ImageFolder("root", extensions=".png", transform=lambda image: image.shape)
    assert ds.paths[0].as_posix() == "root/b/deep/a.png"  # relative, as the root was given
    assert [ds[i] for i in range(len(ds))] == [((1, 3, 4), 2), ((4, 3, 4), 2), ((3, 3, 4), 2)]
    with pytest.raises(pyburn.ArgumentError, match="no files ending in .gif"):
        ImageFolder("root", extensions=[".gif"])
    with pytest.raises(pyburn.ArgumentError, match="suffixes starting with '.'"):
        ImageFolder("root", extensions=["png"])
    with pytest.raises(pyburn.ArgumentError, match="transform must be callable"):
        ImageFolder("root", transform=3)
    with pytest.raises(pyburn.ArgumentError, match="no such folder"):
        ImageFolder("elsewhere")


def test_load_image_scales_16_bit_and_names_bad_files(tmp_path):
    deep = (np.arange(12, dtype=np.uint16) * 5000).reshape(3, 4)
    Image.fromarray(deep).save(tmp_path / "deep.png")
    image = load_image(tmp_path / "deep.png")
    np.testing.assert_array_equal(image.numpy()[0],
                                  deep.astype(np.float32) / np.float32(65535))
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8)
    with pytest.raises(pyburn.FormatError, match="bad.png: .*truncated"):
        load_image(tmp_path / "bad.png")
    (tmp_path / "bad.gif").write_bytes(b"GIF89a but no more")
    with pytest.raises(pyburn.FormatError, match="bad.gif: not an image file"):
        load_image(tmp_path / "bad.gif")


def test_multi_label_images(tmp_path):
    for name in ("a.png", "sub/b.png", "c.png"):
        save(tmp_path / "img" / name)
    labels = tmp_path / "labels.csv"
    labels.write_text("path,labels\na.png,dog;cat\nsub/b.png,\nc.png, Cat ;dog\n")
    ds = MultiLabelImages(tmp_path / "img", labels)
    assert ds.classes == ["Cat", "cat", "dog"]
    assert ds.labels == [["dog", "cat"], [], ["Cat", "dog"]]
    expected = [[0, 1, 1], [0, 0, 0], [1, 0, 1]]
    for i, path in enumerate(ds.paths):
        image, target = ds[i]
        np.testing.assert_array_equal(image.numpy(), pillow_reference(path))
        assert target.dtype is pyburn.float32 and target.tolist() == expected[i]
    labels.write_text("path,labels\nmissing.png,x\n")
    with pytest.raises(pyburn.FormatError, match="names .*missing.png, which is not a file"):
        MultiLabelImages(tmp_path / "img", labels)
    labels.write_text("file,labels\na.png,x\n")
    with pytest.raises(pyburn.FormatError, match="columns 'path' and 'labels'"):
        MultiLabelImages(tmp_path / "img", labels)


def test_segmentation_folder(tmp_path):
    images, masks = tmp_path / "images", tmp_path / "masks"
    save(images / "b.png")
    save(images / "a.jpg", format="JPEG")
    save(images / "b.png.bak", format="PNG")  # not an image file name: left out
    masks.mkdir()
    for stem in ("a", "b"):
        Image.fromarray(RNG.integers(0, 5, size=(3, 4), dtype=np.uint8), "L").save(
            masks / f"{stem}.png")
    ds = SegmentationFolder(images, masks)
    assert ds.image_paths == [images / "a.jpg", images / "b.png"]
    assert ds.mask_paths == [masks / "a.png", masks / "b.png"]
    for i in range(2):
        image, mask = ds[i]
        np.testing.assert_array_equal(image.numpy(), pillow_reference(ds.image_paths[i]))
        assert mask.dtype is pyburn.int32 and mask.shape == (3, 4)
        np.testing.assert_array_equal(mask.numpy(), np.asarray(Image.open(ds.mask_paths[i])))
    save(masks / "b.png")  # RGB: not a mask
    with pytest.raises(pyburn.FormatError, match="b.png: a mask is a single-channel PNG.*3 "
                                                 "channel"):
        ds[1]
    save(images / "c.png")
    with pytest.raises(pyburn.FormatError, match=r"the image .*c\.png has no mask"):
        SegmentationFolder(images, masks)
