"""`pyburn.vision.roi` on every device against onnxruntime's RoiAlign and MaxRoiPool
(half-pixel alignment or not, fixed and adaptive sampling, boxes as (K, 5) rows or a list per
image), and roi_align's gradient for the features against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision.roi import roi_align, roi_pool

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

FEATURES = np.random.default_rng(0).random((2, 3, 10, 12)).astype(np.float32)
ROWS = np.array([[0, 1.0, 1.5, 7.0, 6.0], [1, 0.0, 0.0, 11.0, 9.0], [1, 3.2, 2.1, 5.0, 8.7],
                 [0, -2.0, 4.0, 4.0, 14.0]], np.float32)


def onnxruntime(node: str, inputs: dict[str, np.ndarray], **attributes) -> np.ndarray:
    names = list(inputs)
    graph = helper.make_graph(
        [helper.make_node(node, names, ["y"], **attributes)], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT64 if v.dtype == np.int64
                                       else TensorProto.FLOAT, v.shape)
         for n, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [2, 0])
def test_roi_align_matches_onnxruntime(device, aligned, sampling_ratio):
    got = roi_align(pyburn.tensor(FEATURES, device=device), pyburn.tensor(ROWS, device=device),
                    (3, 4), spatial_scale=0.8, sampling_ratio=sampling_ratio, aligned=aligned)
    want = onnxruntime("RoiAlign", {"x": FEATURES, "rois": ROWS[:, 1:].copy(),
                                    "batch": ROWS[:, 0].astype(np.int64)},
                       output_height=3, output_width=4, spatial_scale=0.8,
                       sampling_ratio=sampling_ratio,
                       coordinate_transformation_mode="half_pixel" if aligned
                       else "output_half_pixel")
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    per_image = [pyburn.tensor(ROWS[ROWS[:, 0] == k, 1:], device=device) for k in (0, 1)]
    listed = roi_align(pyburn.tensor(FEATURES, device=device), per_image, (3, 4), 0.8,
                       sampling_ratio, aligned)
    order = np.argsort(ROWS[:, 0], kind="stable")
    np.testing.assert_allclose(listed.numpy(), want[order], atol=1e-5)


def test_roi_pool_matches_onnxruntime(device):
    got = roi_pool(pyburn.tensor(FEATURES, device=device), pyburn.tensor(ROWS, device=device),
                   (2, 3), spatial_scale=0.9)
    want = onnxruntime("MaxRoiPool", {"x": FEATURES, "rois": ROWS}, pooled_shape=[2, 3],
                       spatial_scale=0.9)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_roi_aligns_gradient_matches_finite_differences():
    device = pyburn.device("cpu").autodiff()
    features = FEATURES[:1, :1].astype(np.float64)
    rows = ROWS[:1]

    def value(f: np.ndarray) -> float:
        out = roi_align(pyburn.tensor(f.astype(np.float32), device="cpu"),
                        pyburn.tensor(rows, device="cpu"), 2, 1.0, 2, True)
        return float((out.numpy() * np.arange(4).reshape(1, 1, 2, 2)).sum())
    x = pyburn.tensor(features.astype(np.float32), device=device, requires_grad=True)
    out = roi_align(x, pyburn.tensor(rows, device=device), 2, 1.0, 2, True)
    (out * pyburn.tensor(np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2),
                         device=device)).sum().backward()
    numeric = np.zeros_like(features)
    for index in np.ndindex(features.shape):
        step = np.zeros_like(features)
        step[index] = 1e-2
        numeric[index] = (value(features + step) - value(features - step)) / 2e-2
    np.testing.assert_allclose(x.grad.numpy(), numeric, atol=1e-3)


def test_bad_boxes_are_refused():
    features = pyburn.zeros(1, 1, 4, 4, device="flex")
    with pytest.raises(pyburn.PyburnError, match=r"\(K, 5\)"):
        roi_align(features, pyburn.zeros(2, 4, device="flex"), 2)
    with pytest.raises(pyburn.PyburnError, match="out of range"):
        roi_align(features, pyburn.tensor([[3.0, 0, 0, 2, 2]], device="flex"), 2)
