"""pyburn.vision: images and the operations on them (burn-vision's counterpart). So far: PNG
read and write in pure Python (`png`) and colour conversions (`color`)."""

from .color import (
    grayscale_to_rgb,
    hsv_to_rgb,
    lab_to_rgb,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_lab,
    rgb_to_yuv,
    yuv_to_rgb,
)
from .png import encode_png, read_png, write_png

__all__ = ["encode_png", "grayscale_to_rgb", "hsv_to_rgb", "lab_to_rgb", "read_png",
           "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_lab", "rgb_to_yuv", "write_png",
           "yuv_to_rgb"]
