"""Quantized models exported as QDQ: every file passes ``onnx.checker`` (full check), its
integer weights are int8/uint8 (and int4/uint4 from opset 21) initializers read through
DequantizeLinear, and onnxruntime running the graph as written (graph optimizations off)
and pyburn's own ONNX runner give pyburn's results. onnxruntime's optimizations rewrite QDQ
groups into its integer kernels, which quantize more than the graph says (DequantizeLinear
+ MatMul becomes MatMulNBits with int8 activations; a static Q/DQ pair before a float
convolution also changes the results): there the results are within one activation
quantization step."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import pyburn
import pyburn.onnx
from pyburn import nn, quant
from pyburn.onnx.exporter import export

DEV = "cpu"


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, device=DEV), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, stride=2, bias=False, device=DEV), nn.Flatten(),
                         nn.Linear(16, 40, device=DEV), nn.ReLU(),
                         nn.Linear(40, 5, device=DEV))


def _session(path, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _initializer_types(proto: onnx.ModelProto) -> dict[str, int]:
    return {i.name: i.data_type for i in proto.graph.initializer}


CASES = [(quant.INT8_SYMMETRIC_PER_CHANNEL, None, 17), (quant.UINT8_ASYMMETRIC_PER_TENSOR,
                                                       "dynamic", 17),
         (quant.INT8_ASYMMETRIC_PER_TENSOR, "static", 13), (quant.INT4_BLOCK32, None, 21),
         (quant.UINT4_BLOCK32, "static", 21), (quant.QuantScheme("int4", True, "channel"),
                                               "dynamic", 17)]


@pytest.mark.parametrize("scheme, activations, opset", CASES,
                         ids=[f"{s.describe()}-{a}-{o}" for s, a, o in CASES])
def test_qdq_export_runs_in_onnxruntime_with_pyburns_results(scheme, activations, opset,
                                                             tmp_path):
    pyburn.manual_seed(0)
    model = _cnn().eval()
    x = pyburn.rand(3, 2, 6, 6, device=DEV)
    calibration = quant.calibrate(model, [x]) if activations == "static" else None
    model = quant.quantize(model, scheme, activations, calibration)
    path = tmp_path / "model.onnx"
    export(model, x, path, opset=opset, dynamic_axes={"input": [0]})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    ops = [n.op_type for n in proto.graph.node]
    want = model(x).numpy()
    other = pyburn.rand(5, 2, 6, 6, device=DEV)
    for inputs in (x, other):
        got = _session(path).run(None, {"input": inputs.numpy()})[0]
        np.testing.assert_allclose(got, model(inputs).numpy(), rtol=1e-5, atol=1e-5)
    again = pyburn.onnx.load(str(path), device=DEV)(x).numpy()
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-5)
    kinds = _initializer_types(proto)
    integer = {"int8": onnx.TensorProto.INT8, "uint8": onnx.TensorProto.UINT8,
               "int4": onnx.TensorProto.INT4, "uint4": onnx.TensorProto.UINT4}[scheme.dtype]
    blocked_conv = scheme.granularity == "block"
    expressible = scheme.bits == 8 or opset >= 21
    for name in ("0.weight", "2.weight", "4.weight", "6.weight"):
        conv = name[0] in "02"
        stored = kinds.get(f"{name}_quantized")
        if expressible and not (conv and blocked_conv):
            assert stored == integer, name
        else:  # the dequantized float weight
            assert stored is None and kinds[name] == onnx.TensorProto.FLOAT, name
    assert ops.count("DequantizeLinear") >= (4 if expressible and not blocked_conv else 0)
    if activations == "dynamic":
        assert ops.count("DynamicQuantizeLinear") == 4
    if activations == "static":
        assert ops.count("QuantizeLinear") == 4
        assert kinds["0.input_zero_point"] == onnx.TensorProto.UINT8


def test_a_linear_weight_is_stored_transposed_with_its_scales(tmp_path):
    layer = nn.Linear(40, 3, device=DEV)
    model = quant.quantize(nn.Sequential(layer), quant.UINT4_BLOCK32)
    path = tmp_path / "model.onnx"
    export(model, pyburn.rand(2, 40, device=DEV), path, opset=21)
    proto = onnx.load(str(path))
    arrays = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    np.testing.assert_array_equal(arrays["0.weight_quantized"].astype(np.int32),
                                  np.array(model[0].weight.int_repr().tolist()).T)
    np.testing.assert_array_equal(arrays["0.weight_scale"],
                                  np.array(model[0].weight.scale.tolist(), np.float32).T)
    node = next(n for n in proto.graph.node if n.op_type == "DequantizeLinear")
    assert {a.name: a.i for a in node.attribute} == {"axis": 0, "block_size": 32}


def test_full_optimization_stays_within_an_activation_step(tmp_path):
    pyburn.manual_seed(1)
    model = quant.quantize(nn.Sequential(nn.Linear(64, 16, device=DEV)))
    x = pyburn.randn(4, 64, device=DEV)
    path = tmp_path / "model.onnx"
    export(model, x, path)
    got = _session(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL).run(
        None, {"input": x.numpy()})[0]
    weight = np.abs(model[0].weight.dequantize().numpy())
    step = np.abs(x.numpy()).max() / 127  # int8 activations, symmetric per block at worst
    bound = weight.sum(1) * step
    assert np.all(np.abs(got - model(x).numpy()) <= bound)
