"""What onnxruntime's quantization tool makes of a weight (and of calibration batches), read
back from the initializers of the model it writes: the references of pyburn.quant's scales,
zero points and integers."""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

logging.getLogger().setLevel(logging.ERROR)  # the tool's advice to pre-process the model

#: pyburn's type names as onnxruntime's QuantType
QUANT_TYPES = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8, "int4": QuantType.QInt4,
               "uint4": QuantType.QUInt4}
ONNX_TYPES = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int4": TensorProto.INT4,
              "uint4": TensorProto.UINT4}


def matmul_model(weight: np.ndarray, batch: int = 2) -> onnx.ModelProto:
    """``y = x @ weight.T``: a Linear's weight [N, K] as ONNX's MatMul takes it ([K, N])."""
    n, k = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, n])],
        [numpy_helper.from_array(np.ascontiguousarray(weight.T), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


class _Batches(CalibrationDataReader):
    def __init__(self, batches: list[np.ndarray]):
        self._left = iter([{"x": b} for b in batches])

    def get_next(self) -> dict | None:
        return next(self._left, None)


def ort_quantized(weight: np.ndarray, dtype: str, symmetric: bool, per_channel: bool,
                  calibration: list[np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The initializers onnxruntime writes for `weight` [N, K] of a MatMul: "w_quantized"
    ([K, N]), "w_scale", "w_zero_point" (per output column where per_channel), and with
    `calibration` batches (static QDQ, activations uint8 asymmetric) "x_scale",
    "x_zero_point"; without, it runs quantize_dynamic."""
    folder = tempfile.mkdtemp()
    source, target = os.path.join(folder, "model.onnx"), os.path.join(folder, "q.onnx")
    onnx.save(matmul_model(weight, 2 if calibration is None else calibration[0].shape[0]),
              source)
    options = {"WeightSymmetric": symmetric}
    if calibration is None:
        quantize_dynamic(source, target, per_channel=per_channel,
                         weight_type=QUANT_TYPES[dtype], extra_options=options)
    else:
        quantize_static(source, target, _Batches(calibration), quant_format=QuantFormat.QDQ,
                        per_channel=per_channel, weight_type=QUANT_TYPES[dtype],
                        activation_type=QuantType.QUInt8,
                        extra_options={**options, "ActivationSymmetric": False})
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(target).graph.initializer}
