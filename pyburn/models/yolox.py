"""YOLOX (Ge et al., "YOLOX: Exceeding YOLO Series in 2021"), the anchor-free detector with a
decoupled head, in the layout of the official repository (Megvii-BaseDetection/YOLOX), so that
its released weights load with their own keys: ``backbone.*`` (`YOLOPAFPN`, whose own
``backbone.*`` is the CSPDarknet: ``backbone.backbone.stem.conv.conv.weight``, ...) and
``head.*`` (`YOLOXHead`: ``head.stems.0.conv.weight``, ``head.cls_convs.0.1.conv.weight``,
``head.cls_preds.0.weight``, ...). The repository's ``.pth`` files hold the state dict under
``"model"``, which `pyburn.models.create` finds by itself.

`YOLOX` gives what YOLOX gives in inference mode: per image, one row per grid cell of the three
levels (strides 8, 16, 32), the box's centre and size in input pixels, then the objectness and
the class probabilities. `YOLOX.detect` turns that into boxes as YOLOX's ``postprocess`` does.

Inputs are YOLOX's own, not torchvision's: `letterbox` makes them (BGR, values 0 to 255, the
image scaled to fit, padded with 114 on the right and at the bottom); a box found divides by
the scale `letterbox` returns to fall back on the original image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn import functional as F
from ..nn.containers import ModuleList, Sequential
from ..nn.conv import Conv2d
from ..nn.module import Module
from ..ops.creation import tensor
from ..ops.movement import cat
from ..vision.boxes import batched_nms, box_convert
from .convnets import check_images
from .cspdarknet import LEVEL_CHANNELS, YOLOPAFPN, BaseConv, conv_block
from .registry import ModelEntry, register

#: the levels' strides: the head predicts one box per cell of each level's grid
STRIDES = (8, 16, 32)
#: the depth multiplier of YOLOX-Nano and YOLOX-Tiny (one bottleneck where YOLOX-L has three)
SMALL_DEPTH = 0.33
#: the published models' input size
IMAGE_SIZE = 416
#: the grey that `letterbox` pads with
PAD_VALUE = 114.0
#: COCO's 80 detection classes, in the order of YOLOX's class indices
COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
    "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
    "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball",
    "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket",
    "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair",
    "couch", "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse",
    "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush")


class YOLOXHead(Module):
    """The decoupled head: per level, a 1x1 `BaseConv` to ``256 * width`` channels
    (``stems.k``), then two 3x3 convolutions for the classes (``cls_convs.k``) and two for the
    box (``reg_convs.k``), and 1x1 convolutions with bias predicting the classes
    (``cls_preds.k``) from the first branch, the box (``reg_preds.k``, 4) and the objectness
    (``obj_preds.k``, 1) from the second."""

    def __init__(self, num_classes: int, width: float, depthwise: bool = False,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        hidden = int(256 * width)
        # registered in the official order, so that state_dict() lists its keys as its files do
        self.cls_convs = ModuleList()
        self.reg_convs = ModuleList()
        self.cls_preds = ModuleList()
        self.reg_preds = ModuleList()
        self.obj_preds = ModuleList()
        self.stems = ModuleList()
        for channels in LEVEL_CHANNELS:
            self.stems.append(BaseConv(int(channels * width), hidden, 1, device=device,
                                       dtype=dtype))
            for convs in (self.cls_convs, self.reg_convs):
                convs.append(Sequential(
                    *(conv_block(hidden, hidden, 3, 1, depthwise, device, dtype)
                      for _ in range(2))))
            for preds, out in ((self.cls_preds, num_classes), (self.reg_preds, 4),
                               (self.obj_preds, 1)):
                preds.append(Conv2d(hidden, out, 1, device=device, dtype=dtype))

    def forward(self, features: Sequence[Tensor]) -> Tensor:
        """The decoded predictions (N, anchors, 5 + classes) of the three levels' features:
        box centre x, y and width, height in input pixels (``(offset + cell) * stride`` and
        ``exp(size) * stride``), objectness and class probabilities (sigmoids); the anchors
        level by level, row-major within each."""
        levels, sizes = [], []
        for k, x in enumerate(features):
            x = self.stems[k](x)
            reg = self.reg_convs[k](x)
            out = cat([self.reg_preds[k](reg), self.obj_preds[k](reg).sigmoid(),
                       self.cls_preds[k](self.cls_convs[k](x)).sigmoid()], 1)
            levels.append(out.flatten(2))
            sizes.append(x.shape[2:])
        out = cat(levels, 2).permute(0, 2, 1)
        cells, strides = _grid(sizes, out)
        return cat([(out[..., :2] + cells) * strides, out[..., 2:4].exp() * strides,
                    out[..., 4:]], -1)


def _grid(sizes: Sequence[tuple[int, ...]], like: Tensor) -> tuple[Tensor, Tensor]:
    """Each anchor's cell (x, y), (anchors, 2), and its level's stride, (anchors, 1), on
    `like`'s device and dtype."""
    cells: list[list[int]] = []
    strides: list[list[int]] = []
    for (height, width), stride in zip(sizes, STRIDES):
        cells.extend([x, y] for y in range(height) for x in range(width))
        strides.extend([[stride]] * (height * width))
    return (tensor(cells, dtype=like.dtype, device=like.device),
            tensor(strides, dtype=like.dtype, device=like.device))


class YOLOX(Module):
    """YOLOX: the `YOLOPAFPN` backbone and neck (``backbone``) and the `YOLOXHead`
    (``head``). `depth` and `width` scale YOLOX-L's blocks and channels (Nano: 0.33 and 0.25,
    with `depthwise` convolutions; Tiny: 0.33 and 0.375); `num_classes` is 80 for COCO.

    Takes (N, 3, H, W) images, H and W multiples of 32, as `letterbox` makes them; gives the
    decoded predictions (N, anchors, 5 + num_classes) that `detect` turns into boxes.

    >>> import pyburn
    >>> model = YOLOX(0.33, 0.125, num_classes=4, device="cpu").eval()
    >>> model(pyburn.zeros(2, 3, 64, 64, device="cpu")).shape  # 8x8 + 4x4 + 2x2 anchors
    (2, 84, 9)
    """

    def __init__(self, depth: float, width: float, num_classes: int = 80,
                 depthwise: bool = False, device: Any = None, dtype: Any = None):
        super().__init__()
        self.num_classes = num_classes
        self.backbone = YOLOPAFPN(depth, width, depthwise, device, dtype)
        self.head = YOLOXHead(num_classes, width, depthwise, device, dtype)

    def forward(self, images: Tensor) -> Tensor:
        """The decoded predictions (N, anchors, 5 + num_classes) of images (N, 3, H, W)."""
        check_images(images, type(self).__name__)
        if images.shape[2] % STRIDES[-1] or images.shape[3] % STRIDES[-1]:
            raise ShapeError(f"YOLOX takes images whose height and width are multiples of "
                             f"{STRIDES[-1]}, got {images.shape}")
        return self.head(self.backbone(images))

    def detect(self, images: Tensor, score_threshold: float = 0.3,
               iou_threshold: float = 0.45) -> list[dict[str, Tensor]]:
        """The objects found in each image, as YOLOX's ``postprocess`` finds them: each
        anchor's class is its likeliest, its score the objectness times that class's
        probability; those scoring at least `score_threshold` go through non-maximum
        suppression per class (`pyburn.vision.batched_nms`, at `iou_threshold`). Per image a
        dict of "boxes" (K, 4), corners x1, y1, x2, y2 in the input's pixels, "scores" (K,),
        decreasing, and "labels" (K,), class indices (`pyburn.vision.mean_average_precision`
        takes these). The defaults are YOLOX's demo's confidence and its postprocess's IoU.

        >>> import pyburn
        >>> model = YOLOX(0.33, 0.125, num_classes=4, device="cpu").eval()
        >>> found = model.detect(pyburn.zeros(1, 3, 64, 64, device="cpu"), 0.99)
        >>> found[0]["boxes"].shape
        (0, 4)
        """
        for name, value in (("score_threshold", score_threshold),
                            ("iou_threshold", iou_threshold)):
            if not 0 <= value <= 1:
                raise ArgumentError(f"{name} is a probability, got {value}")
        return [_detections(prediction, score_threshold, iou_threshold)
                for prediction in self(images)]


def _detections(prediction: Tensor, score_threshold: float,
                iou_threshold: float) -> dict[str, Tensor]:
    """One image's decoded predictions (anchors, 5 + classes) to its boxes, scores and
    labels."""
    confidence, labels = prediction[:, 5:].max(dim=1)
    scores = prediction[:, 4] * confidence
    chosen = (scores >= score_threshold).nonzero()[:, 0]
    boxes = box_convert(prediction[chosen, :4], "cxcywh", "xyxy")
    scores, labels = scores[chosen], labels[chosen]
    kept = batched_nms(boxes, scores, labels, iou_threshold)
    return {"boxes": boxes[kept], "scores": scores[kept], "labels": labels[kept]}


def letterbox(image: Tensor, size: int = IMAGE_SIZE) -> tuple[Tensor, float]:
    """YOLOX's preprocessing of one image (3, H, W), RGB with values 0 to 255 (as
    `pyburn.vision.read_image` reads it): scaled by ``r = min(size / H, size / W)`` (bilinear,
    as OpenCV's resize, rounded to whole values), its channels in BGR order, placed at the
    top left of a `size` x `size` float image of grey 114. Returns that image and `r` (divide
    a box by it to find it in the original image).

    >>> import pyburn
    >>> padded, r = letterbox(pyburn.zeros(3, 20, 40, device="cpu"), 64)
    >>> padded.shape, r, padded[0, 31, 0].item(), padded[0, 32, 0].item()
    ((3, 64, 64), 1.6, 0.0, 114.0)
    """
    if not isinstance(image, Tensor) or image.ndim != 3 or image.shape[0] != 3:
        raise ShapeError(f"letterbox takes one RGB image (3, H, W), got "
                         f"{getattr(image, 'shape', type(image).__name__)}")
    height, width = image.shape[1:]
    r = min(size / height, size / width)
    scaled = F.interpolate(image.float()[None], size=(int(height * r), int(width * r)),
                           mode="bilinear", align_corners=False)[0]
    bgr = scaled.round().clamp(0, 255).flip(0)
    return F.pad(bgr, (0, size - bgr.shape[2], 0, size - bgr.shape[1]),
                 value=PAD_VALUE), r


def yolox_nano(num_classes: int = 80, width: float = 0.25, device: Any = None,
               dtype: Any = None) -> YOLOX:
    """YOLOX-Nano: depth 0.33, width 0.25, depthwise convolutions (912,159 parameters)."""
    return YOLOX(SMALL_DEPTH, width, num_classes, True, device, dtype)


def yolox_tiny(num_classes: int = 80, width: float = 0.375, device: Any = None,
               dtype: Any = None) -> YOLOX:
    """YOLOX-Tiny: depth 0.33, width 0.375 (5,055,855 parameters)."""
    return YOLOX(SMALL_DEPTH, width, num_classes, False, device, dtype)


def _register() -> None:
    """YOLOX-Nano and -Tiny in the zoo, for the official repository's COCO weights. Their
    preprocessing (`letterbox`) is not the resize-and-crop that `Preprocessing` describes, so
    their entries leave it empty and say where it is."""
    for name, build, size in (("yolox_nano", yolox_nano, "0.91 M parameters, depthwise"),
                              ("yolox_tiny", yolox_tiny, "5.06 M parameters")):
        register(ModelEntry(
            name, build, "object-detection",
            f"YOLOX-{name[6:].capitalize()} ({size}), COCO's 80 classes, 416x416 inputs made "
            "by pyburn.models.yolox.letterbox; the official repository's layout",
            weights_from="Megvii-BaseDetection/YOLOX", labels=COCO_CLASSES))


_register()
