"""`read_image` / `write_image`: PNG by pyburn's decoder, JPEG through Pillow (read as Pillow
decodes it, written so that Pillow reads back what was written, to JPEG's loss), other
files refused, and a clear error where Pillow is missing."""

from __future__ import annotations

import builtins
import io

import numpy as np
import pytest

import pyburn
from pyburn.vision import read_image, write_image

Image = pytest.importorskip("PIL.Image", reason="Pillow writes the JPEG files")

RGB = (np.random.default_rng(0).random((12, 10, 3)) * 255).astype(np.uint8)
#: smooth ramps: JPEG keeps them close (noise it does not)
_ys, _xs = np.mgrid[0:16, 0:24]
SMOOTH = np.stack([_ys * 15, _xs * 10, 255 - _xs * 10], axis=-1).astype(np.uint8)


def jpeg_bytes(array: np.ndarray, mode: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array, mode=mode).save(out, "JPEG", quality=85)
    return out.getvalue()


@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_jpeg_reads_as_pillow_decodes_it(device, mode):
    array = RGB if mode == "RGB" else RGB[..., 0]
    data = jpeg_bytes(array, mode)
    decoded = np.asarray(Image.open(io.BytesIO(data)))
    want = decoded.transpose(2, 0, 1) if decoded.ndim == 3 else decoded[None]
    np.testing.assert_array_equal(read_image(data, device=device).numpy(), want)


def test_written_files_read_back(tmp_path):
    image = pyburn.tensor(RGB.transpose(2, 0, 1).copy(), device="flex")
    write_image(image, tmp_path / "out.png")
    assert read_image(tmp_path / "out.png").tolist() == image.tolist()
    smooth = pyburn.tensor(SMOOTH.transpose(2, 0, 1).copy(), device="flex")
    write_image(smooth, tmp_path / "out.jpg", quality=95)
    back = np.asarray(Image.open(tmp_path / "out.jpg")).astype(int)
    out = io.BytesIO()
    Image.fromarray(SMOOTH).save(out, "JPEG", quality=95)  # the same pixels, by Pillow alone
    np.testing.assert_array_equal(back, np.asarray(Image.open(out)).astype(int))
    assert np.abs(back - SMOOTH).mean() < 3  # JPEG's loss, not a mix-up of rows or planes


def test_bad_files_and_missing_pillow(tmp_path, monkeypatch):
    with pytest.raises(pyburn.errors.FormatError, match="neither"):
        read_image(b"GIF89a....")
    with pytest.raises(pyburn.PyburnError, match=".png, .jpg"):
        write_image(pyburn.zeros(1, 2, 2, dtype=pyburn.uint8, device="flex"), tmp_path / "x.bmp")
    real_import = builtins.__import__

    def without_pillow(name, *args, **kwargs):
        if name == "PIL":
            raise ImportError("no Pillow here")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", without_pillow)
    with pytest.raises(pyburn.errors.MissingExtraError, match="pip install pillow"):
        read_image(jpeg_bytes(RGB, "RGB"))


def test_save_image_scales_floats_to_bytes(tmp_path):
    from pyburn.vision import save_image

    floats = pyburn.tensor([[[[0.0, 0.5, 1.2], [-0.1, 0.25, 1.0]]]], device="flex")
    save_image(floats, tmp_path / "x.png")
    assert read_image(tmp_path / "x.png").tolist() == [[[0, 128, 255], [0, 64, 255]]]
    with pytest.raises(pyburn.PyburnError, match="one image"):
        save_image(pyburn.zeros(2, 1, 2, 2, device="flex"), tmp_path / "y.png")
