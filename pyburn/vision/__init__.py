"""pyburn.vision: images and the operations on them (burn-vision's counterpart). So far: PNG
read and write in pure Python (`png`), colour conversions (`color`) and boxes: IoU, GIoU,
non-maximum suppression, masks to boxes (`boxes`)."""

from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    generalized_box_iou,
    masks_to_boxes,
    nms,
)
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

__all__ = ["batched_nms", "box_area", "box_convert", "box_iou", "encode_png",
           "generalized_box_iou", "grayscale_to_rgb", "hsv_to_rgb", "lab_to_rgb",
           "masks_to_boxes", "nms", "read_png", "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_lab",
           "rgb_to_yuv", "write_png", "yuv_to_rgb"]
