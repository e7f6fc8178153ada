"""YOLOX-Nano and -Tiny in the zoo: their sizes are the YOLOX README's, their keys the official
repository's, and weights saved from a PyTorch network of that layout
(`pyburn.bench.torch_detector`: the repository's code is not installed) load through
`pyburn.models.create` from ``.pth`` (as the repository saves them, under "model") and
``.safetensors`` and give that network's decoded predictions on cpu and wgpu; `detect` keeps
the boxes that OpenCV's batched NMS keeps from the network's predictions; `letterbox` makes
YOLOX's inputs as its OpenCV preprocessing does; one ONNX round trip agrees with
onnxruntime."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import models
from pyburn.errors import ArgumentError, ShapeError
from pyburn.models.yolox import COCO_CLASSES, letterbox

from . import zoo_checks
from .zoo_checks import (
    DEVICES,
    assert_close,
    assert_files_give_outputs,
    assert_onnx_round_trip,
    published_weights,
    require,
)

torch, np, cv2, _, _ = require("torch", "numpy", "cv2", "onnxruntime", "safetensors.torch")

# the PyTorch network of the official layout (the YOLOX repository is not installed)
from pyburn.bench.torch_detector import TorchYOLOX  # noqa: E402

#: the YOLOX README's sizes (0.91 M and 5.06 M), counted exactly
PUBLISHED_PARAMS = {"yolox_nano": 912_159, "yolox_tiny": 5_055_855}
DEPTHWISE = {"yolox_nano": True, "yolox_tiny": False}
#: keys every official checkpoint of the model has, spelled out
KNOWN_KEYS = {
    "yolox_nano": ["backbone.backbone.stem.conv.conv.weight",
                   "backbone.backbone.dark2.0.dconv.conv.weight",
                   "backbone.backbone.dark2.1.m.0.conv2.pconv.bn.running_var",
                   "backbone.backbone.dark5.1.conv2.bn.num_batches_tracked",
                   "backbone.lateral_conv0.conv.weight", "backbone.bu_conv1.dconv.bn.bias",
                   "head.stems.2.conv.weight", "head.cls_convs.0.1.pconv.conv.weight",
                   "head.cls_preds.0.weight", "head.obj_preds.2.bias"],
    "yolox_tiny": ["backbone.backbone.dark3.1.m.2.conv1.conv.weight",
                   "backbone.C3_n4.conv3.bn.running_mean", "head.reg_convs.1.0.conv.weight",
                   "head.reg_preds.1.bias"],
}
#: the small configuration the models are tested in: 8 stem channels, 4 classes, 64x64
WIDTH, CLASSES, SIZE = 0.125, 4, 64


def reference(name: str):
    """The PyTorch network of `name` in the test configuration, seeded, in eval mode, its
    batch norms' statistics those of a batch of random images (so that the images' own
    features reach the head: with statistics unrelated to the features they fade to
    constants layer after layer) and their affine parameters random."""
    torch.manual_seed(sum(map(ord, name)))
    net = TorchYOLOX(0.33, WIDTH, CLASSES, DEPTHWISE[name])
    for norm in (m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)):
        norm.weight.data.uniform_(0.5, 1.5)
        norm.bias.data.uniform_(-0.2, 0.2)
        norm.momentum = 1.0
    with torch.no_grad():
        net.train()(images(seed=2, count=32)[0])
        for preds in (net.head.cls_preds, net.head.reg_preds, net.head.obj_preds):
            for pred in preds:  # wider spreads of scores and box sizes
                pred.weight.mul_(4)
    return net.eval()


def images(seed: int = 0, count: int = 2):
    """`count` SIZE x SIZE images, in torch and as numpy."""
    return zoo_checks.images(seed, count, SIZE)


def create(name, weights, on):
    return models.create(name, weights=weights, device=on, num_classes=CLASSES, width=WIDTH)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """name -> (.pth path, .safetensors path, reference outputs): each model's weights saved
    once as the YOLOX repository saves them (the .pth's state dict under "model"), with the
    reference network's outputs on two `images()`."""
    return published_weights(tmp_path_factory, reference, images()[0], pth_key="model")


@pytest.mark.parametrize("name", PUBLISHED_PARAMS)
def test_sizes_and_keys_are_the_official_ones(name):
    model = models.create(name, device="cpu")
    twin = TorchYOLOX(0.33, {"yolox_nano": 0.25, "yolox_tiny": 0.375}[name], 80,
                      DEPTHWISE[name])
    assert model.num_params() == sum(p.numel() for p in twin.parameters()) == \
        PUBLISHED_PARAMS[name]
    keys = list(model.state_dict())
    assert keys == list(twin.state_dict())
    assert set(KNOWN_KEYS[name]) <= set(keys)


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
@pytest.mark.parametrize("name", PUBLISHED_PARAMS)
def test_official_weights_give_the_official_predictions(name, on, published):
    pth, safetensors, expected = published(name)
    assert_files_give_outputs(name, (pth, safetensors), on, images()[1], expected,
                              num_classes=CLASSES, width=WIDTH)


def opencv_detections(prediction, score_threshold, iou_threshold):
    """YOLOX's postprocess of one image's decoded predictions (anchors, 5 + classes), numpy,
    with OpenCV's batched NMS: (boxes, scores, labels) of the kept anchors, best first. OpenCV
    keeps scores above the threshold, YOLOX those at least at it: no score here is on it."""
    centre, size = prediction[:, :2], prediction[:, 2:4]
    labels = prediction[:, 5:].argmax(1)
    scores = prediction[:, 4] * prediction[:, 5:].max(1)
    corners = np.concatenate([centre - size / 2, centre + size / 2], 1)
    kept = cv2.dnn.NMSBoxesBatched(np.concatenate([centre - size / 2, size], 1).tolist(),
                                   scores.tolist(), labels.tolist(), score_threshold,
                                   iou_threshold)
    kept = np.asarray(kept, dtype=np.int64).reshape(-1)
    return corners[kept], scores[kept], labels[kept]


@pytest.mark.parametrize("on", DEVICES)
def test_detect_keeps_what_opencvs_nms_keeps(on, published):
    _, safetensors, expected = published("yolox_nano")
    model = create("yolox_nano", safetensors, on)
    with pyburn.no_grad():
        found = model.detect(pyburn.tensor(images()[1], device=on), 0.3, 0.2)
    suppressed = 0
    for image, prediction in zip(found, expected):
        boxes, scores, labels = opencv_detections(prediction, 0.3, 0.2)
        assert_close(image["boxes"].tolist(), boxes, f"boxes on {on}")
        assert_close(image["scores"].tolist(), scores, f"scores on {on}")
        assert image["labels"].tolist() == labels.tolist()
        candidates = (prediction[:, 4] * prediction[:, 5:].max(1) >= 0.3).sum()
        assert 0 < len(labels) < candidates
        suppressed += candidates - len(labels)
    assert suppressed > 0


def test_letterbox_is_yoloxs_preprocessing():
    """As the YOLOX repository's ``preproc`` does it on an OpenCV (BGR) image: scaled with
    OpenCV's bilinear resize (which rounds its own way: a grey level apart at most), at the
    top left of a square of grey 114."""
    rgb = np.random.default_rng(0).integers(0, 256, (45, 30, 3), dtype=np.uint8)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    r = min(SIZE / 45, SIZE / 30)
    theirs = np.full((SIZE, SIZE, 3), 114, dtype=np.uint8)
    resized = cv2.resize(bgr, (int(30 * r), int(45 * r)), interpolation=cv2.INTER_LINEAR)
    theirs[:resized.shape[0], :resized.shape[1]] = resized
    ours, ratio = letterbox(pyburn.tensor(rgb.transpose(2, 0, 1).copy(), device="cpu"), SIZE)
    assert ratio == r and ours.shape == (3, SIZE, SIZE)
    np.testing.assert_allclose(np.array(ours.tolist()), theirs.transpose(2, 0, 1), atol=1)


def test_onnx_round_trip(published, tmp_path):
    _, safetensors, _ = published("yolox_nano")
    model = create("yolox_nano", safetensors, "cpu")
    assert_onnx_round_trip(model, images(seed=1)[1], tmp_path / "yolox_nano.onnx")


def test_entries_say_how_to_use_them():
    assert set(PUBLISHED_PARAMS) <= set(models.list_models("object-detection"))
    for name in PUBLISHED_PARAMS:
        found = models.entry(name)
        assert (found.weights_from, found.key_remap, found.labels) == \
            ("Megvii-BaseDetection/YOLOX", (), COCO_CLASSES)
    assert len(COCO_CLASSES) == len(set(COCO_CLASSES)) == 80
    assert (COCO_CLASSES[0], COCO_CLASSES[16], COCO_CLASSES[79]) == \
        ("person", "dog", "toothbrush")


def test_misuse_is_named():
    model = models.create("yolox_nano", device="cpu", num_classes=2, width=WIDTH)
    with pytest.raises(ShapeError, match=r"multiples of 32, got \(1, 3, 48, 64\)"):
        model(pyburn.zeros(1, 3, 48, 64, device="cpu"))
    with pytest.raises(ArgumentError, match="iou_threshold is a probability, got 1.5"):
        model.detect(pyburn.zeros(1, 3, 64, 64, device="cpu"), iou_threshold=1.5)
    with pytest.raises(ShapeError, match=r"letterbox takes one RGB image"):
        letterbox(pyburn.zeros(1, 3, 8, 8, device="cpu"))
