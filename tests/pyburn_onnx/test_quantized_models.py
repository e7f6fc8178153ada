"""Models quantized by onnxruntime's own tool (``onnxruntime.quantization``) run through
`pyburn.onnx.load` against onnxruntime: an MLP and a CNN exported by PyTorch, quantized
dynamically (DynamicQuantizeLinear, MatMulInteger, ConvInteger) and statically in the
QOperator format (QuantizeLinear, QLinearMatMul, QLinearConv, DequantizeLinear) from a
calibration set; every output within one quantization step of onnxruntime's (on an AVX-512
machine they are equal, bit for bit, on cpu and wgpu).

The weights are quantized with ``reduce_range`` (7 bits, as onnxruntime advises for x86
without VNNI): its AVX2 kernels add a uint8 x int8 product pair in int16 (vpmaddubsw), which
saturates where a pair passes 32767, so on an AVX2 machine its outputs with 8-bit weights are
not the integer arithmetic the operators define (0.074 where the exact result is 0.083);
with 7-bit weights no pair can saturate."""

from __future__ import annotations

import io

import numpy as np
import pytest

import pyburn
import pyburn.onnx

from . import parity

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
onnx = pytest.importorskip("onnx")
nn = torch.nn


def _mlp() -> tuple[nn.Module, torch.Tensor]:
    # a batch of sequences: PyTorch writes Linear as MatMul + Add, which both tools quantize
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    return model, torch.randn(2, 3, 12)


def _cnn() -> tuple[nn.Module, torch.Tensor]:
    model = nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(6, 4, 3, stride=2, groups=2), nn.ReLU())
    return model, torch.randn(2, 2, 9, 9)


class _Calibration(quantization.CalibrationDataReader):
    """A few batches like the test input, for quantize_static's ranges."""

    def __init__(self, name: str, shape: tuple[int, ...]):
        rng = np.random.default_rng(1)
        self.batches = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def _quantized(kind: str, how: str, tmp_path) -> tuple[bytes, np.ndarray, float]:
    """The model quantized by onnxruntime, an input, and its coarsest quantization step
    (the largest scale among its initializers)."""
    torch.manual_seed(0)
    model, x = {"mlp": _mlp, "cnn": _cnn}[kind]()
    model.eval()
    source, target = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    buffer = io.BytesIO()
    torch.onnx.export(model, (x,), buffer, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    source.write_bytes(buffer.getvalue())
    if how == "dynamic":
        quantization.quantize_dynamic(str(source), str(target), per_channel=kind == "cnn",
                                      reduce_range=True,
                                      weight_type=quantization.QuantType.QInt8)
    else:
        quantization.quantize_static(
            str(source), str(target), _Calibration("x", tuple(x.shape)),
            quant_format=quantization.QuantFormat.QOperator, per_channel=kind == "cnn",
            reduce_range=True, activation_type=quantization.QuantType.QUInt8,
            weight_type=quantization.QuantType.QInt8,
            # the standard operators only (a quantized Add is com.microsoft.QLinearAdd)
            op_types_to_quantize=["MatMul", "Conv"])
    data = target.read_bytes()
    graph = onnx.load_from_string(data).graph
    ops = {node.op_type for node in graph.node}
    wanted = {("mlp", "dynamic"): {"DynamicQuantizeLinear", "MatMulInteger"},
              ("cnn", "dynamic"): {"DynamicQuantizeLinear", "ConvInteger"},
              ("mlp", "static"): {"QuantizeLinear", "QLinearMatMul", "DequantizeLinear"},
              ("cnn", "static"): {"QuantizeLinear", "QLinearConv", "DequantizeLinear"}}
    assert wanted[kind, how] <= ops, ops
    step = max(float(onnx.numpy_helper.to_array(t).max()) for t in graph.initializer
               if t.data_type == onnx.TensorProto.FLOAT and "scale" in t.name)
    return data, x.numpy(), step


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("dev", parity.DEVICES)
@pytest.mark.parametrize("kind, how", [("mlp", "dynamic"), ("cnn", "dynamic"),
                                       ("mlp", "static"), ("cnn", "static")])
def test_onnxruntime_quantized_models_match(kind, how, dev, tmp_path):
    data, x, step = _quantized(kind, how, tmp_path)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    module = pyburn.onnx.load(data, device=dev)
    got = module(parity.argument(pyburn.from_numpy(x, device="cpu"), dev)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=step * 1.0001)
