"""The quantized layers on every device: each equals its float operator on the dequantized
weight (float64 references: numpy, PyTorch's conv), stays within the bound the weight's
rounding allows of the float layer, and with dynamic activations equals onnxruntime's
quantize_dynamic model (DynamicQuantizeLinear + MatMulInteger: the integer pipeline) of the
same weights; buffers, state dicts, devices and bad arguments."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic

import pyburn
from pyburn import nn
from pyburn.errors import ArgumentError
from pyburn.quant import (
    INT4_BLOCK32,
    INT8_SYMMETRIC_PER_CHANNEL,
    QTensor,
    QuantizedConv1d,
    QuantizedConv2d,
    QuantizedLinear,
    QuantScheme,
    quantize,
)

from .references import matmul_model, ort_quantized

SCHEMES = [INT8_SYMMETRIC_PER_CHANNEL, QuantScheme("uint8", False, "tensor"),
           QuantScheme("uint4", False, "block", 16)]


def _numpy(t: pyburn.Tensor) -> np.ndarray:
    return np.array(t.tolist(), np.float64)


@pytest.mark.parametrize("scheme", SCHEMES, ids=QuantScheme.describe)
def test_linear_is_the_float_product_with_the_dequantized_weight(device, scheme):
    pyburn.manual_seed(1)
    layer = nn.Linear(40, 6, device=device)
    q = QuantizedLinear.from_float(layer, scheme)
    assert q.bias is layer.bias and q.weight.scheme == scheme
    x = pyburn.randn(3, 2, 40, device=device)
    got = _numpy(q(x))
    weight = _numpy(q.weight.dequantize())
    want = _numpy(x) @ weight.T + _numpy(layer.bias)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # against the float layer: each weight moved by at most half its step
    steps = np.array(q.weight.scale.tolist(), np.float64)
    per_weight = (np.repeat(steps, 16, axis=1)[:, :40] if scheme.granularity == "block"
                  else np.broadcast_to(steps.reshape(-1, 1), (6, 40)))
    bound = np.abs(_numpy(x)) @ per_weight.T / 2
    assert np.all(np.abs(got - _numpy(layer(x))) <= bound * 1.001 + 1e-5)


def test_dynamic_activations_equal_the_integer_pipeline_of_onnxruntime(tmp_path):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((6, 20)).astype(np.float32)
    # the odd inputs' weights quantize to -1..1: onnxruntime's AVX2 kernel adds uint8 x int8
    # products in pairs along the inputs in int16 and saturates where a pair passes 32767
    weight[:, 1::2] *= 0.002
    x = (rng.standard_normal((4, 20)) + 0.5).astype(np.float32)
    layer = nn.Linear(20, 6, bias=False, device="cpu")
    layer.load_state_dict({"weight": weight})
    q = QuantizedLinear.from_float(layer, INT8_SYMMETRIC_PER_CHANNEL, "dynamic")
    found = ort_quantized(weight, "int8", True, True)  # the same weights, bit for bit
    np.testing.assert_array_equal(np.array(q.weight.scale.tolist(), np.float32),
                                  found["w_scale"])
    onnx.save(matmul_model(weight, 4), tmp_path / "m.onnx")  # quantized by onnxruntime
    quantize_dynamic(tmp_path / "m.onnx", tmp_path / "q.onnx", per_channel=True,
                     weight_type=QuantType.QInt8)
    session = ort.InferenceSession(tmp_path / "q.onnx", providers=["CPUExecutionProvider"])
    assert "MatMulInteger" in {n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node}
    want = session.run(None, {"x": x})[0]
    got = q(pyburn.from_numpy(x, device="cpu")).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect"])
def test_conv2d_is_the_float_convolution_with_the_dequantized_weight(device, padding_mode):
    pyburn.manual_seed(2)
    conv = nn.Conv2d(4, 6, 3, stride=(1, 2), padding=1, dilation=(2, 1), groups=2,
                     padding_mode=padding_mode, device=device)
    q = QuantizedConv2d.from_float(conv, INT4_BLOCK32, "dynamic")
    x = pyburn.randn(2, 4, 7, 9, device=device)
    got = _numpy(q(x))
    seen = torch.from_numpy(_numpy(q.quantize_input(x)))  # the input as the layer sees it
    if padding_mode == "reflect":
        seen = torch.nn.functional.pad(seen, (1, 1, 1, 1), mode="reflect")
    want = torch.nn.functional.conv2d(
        seen, torch.from_numpy(_numpy(q.weight.dequantize())),
        torch.from_numpy(_numpy(conv.bias)), (1, 2), 0 if padding_mode == "reflect" else 1,
        (2, 1), 2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv1d_and_unbatched_input():
    conv = nn.Conv1d(3, 5, 3, padding="same", bias=False, device="cpu")
    q = QuantizedConv1d.from_float(conv)
    x = pyburn.randn(3, 11, device="cpu")
    np.testing.assert_allclose(q(x).numpy(), nn.functional.conv1d(
        x, q.weight.dequantize(), None, 1, "same").numpy(), rtol=1e-6, atol=1e-6)
    assert q(x).shape == (5, 11)


def test_static_activations_use_the_calibrated_scale():
    layer = nn.Linear(4, 2, device="flex")
    q = QuantizedLinear.from_float(layer, INT8_SYMMETRIC_PER_CHANNEL, "static", (-1.0, 1.55))
    assert q.input_scale.item() == pytest.approx(2.55 / 255)
    assert q.input_zero_point.item() == 100
    x = pyburn.tensor([[0.5, -2.0, 3.0, 0.013]], device="flex")
    seen = q.quantize_input(x).tolist()[0]
    step = q.input_scale.item()
    assert seen == pytest.approx([round(0.5 / step) * step, -100 * step, 155 * step,
                                  round(0.013 / step) * step], abs=1e-6)


def test_buffers_state_dict_devices_and_repr(device):
    layer = nn.Linear(10, 3, device="flex")
    q = QuantizedLinear.from_float(layer, QuantScheme("uint4", False, "block", 8), "static",
                                   (0.0, 1.0))
    assert list(q.state_dict()) == ["bias", "weight_data", "weight_scale", "weight_zero_point",
                                    "input_scale", "input_zero_point"]
    assert q.weight_data.shape == (3, 2) and q.weight_scale.shape == (3, 2)
    x = pyburn.rand(2, 10, device="flex")
    before = q(x).tolist()
    q.to(device)
    assert q.weight.device is device and q.input_scale.device is device
    np.testing.assert_allclose(q(x.to(device)).tolist(), before, rtol=1e-5, atol=1e-6)
    assert "scheme=uint4 asymmetric block 8, activations=static" in repr(q)
    symmetric = QuantizedLinear(10, 3, bias=False, device="flex")
    assert symmetric.weight_zero_point is None and symmetric.bias is None
    assert "weight_zero_point" not in symmetric.state_dict()


def test_bad_arguments_are_refused():
    layer = nn.Linear(4, 2, device="flex")
    with pytest.raises(ArgumentError, match="from_float takes a Linear, got Conv2d"):
        QuantizedLinear.from_float(nn.Conv2d(1, 1, 1, device="flex"))
    with pytest.raises(ArgumentError, match="input_range is given exactly when"):
        QuantizedLinear.from_float(layer, INT8_SYMMETRIC_PER_CHANNEL, "static")
    with pytest.raises(ArgumentError, match="activations must be None"):
        QuantizedLinear(4, 2, activations="always", device="flex")
    with pytest.raises(ArgumentError, match="scheme must be a QuantScheme"):
        QuantizedLinear(4, 2, scheme="int8", device="flex")
    q = QuantizedLinear.from_float(layer)
    with pytest.raises(ArgumentError, match=r"holds a weight of shape \(2, 4\)"):
        q.set_weight(QTensor.quantize(pyburn.ones(3, 4, device="flex"),
                                      INT8_SYMMETRIC_PER_CHANNEL))
    with pytest.raises(ArgumentError, match="only a layer with static activations"):
        q.set_input_range(0.0, 1.0)
    with pytest.raises(ArgumentError, match="divisible by groups"):
        QuantizedConv2d(3, 4, 3, groups=2, device="flex")
    with pytest.raises(ArgumentError, match="padding_mode"):
        QuantizedConv2d(3, 4, 3, padding_mode="mirror", device="flex")


def test_qlora_trains_adapters_on_a_frozen_int4_base_and_merges_into_it():
    """QLoRA: LoRA on int4 block-wise layers; the packed words never change while the adapters
    learn, and merging requantizes W + scale B A within half a step of the float sum."""
    from pyburn.nn import lora
    from pyburn.optim import Adam

    dev = pyburn.device("cpu").autodiff()
    pyburn.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32, device=dev), nn.ReLU(), nn.Linear(32, 4, device=dev))
    quantize(model, INT4_BLOCK32)
    model = lora.apply(model, rank=4, alpha=8, targets=QuantizedLinear)
    before = {k: v.numpy().copy() for k, v in model.state_dict().items() if "weight_" in k}
    x = pyburn.randn(64, 16, device=dev)
    target = pyburn.randn(64, 4, device=dev)
    optimizer = Adam(lora.parameters(model), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = ((model(x) - target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]
    after = {k: v.numpy() for k, v in model.state_dict().items() if "weight_" in k}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k])
                                                 for k in before)
    wanted = {name: layer.base.weight.dequantize().numpy().astype(np.float64)
              + layer.scaling * (layer.lora_B.numpy().astype(np.float64)
                                 @ layer.lora_A.numpy().astype(np.float64))
              for name, layer in model.named_modules() if isinstance(layer, lora.LoRALinear)}
    merged = lora.merge(model)
    for name, want in wanted.items():
        layer = dict(merged.named_modules())[name]
        assert isinstance(layer, QuantizedLinear) and layer.scheme == INT4_BLOCK32
        step = np.repeat(layer.weight.scale.numpy().astype(np.float64), 32, axis=1)
        got = layer.weight.dequantize().numpy()
        assert np.all(np.abs(got - want) <= 0.5 * step[:, :want.shape[1]] * (1 + 1e-5)), name
