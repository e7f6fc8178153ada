"""onnxruntime as a second reference, for the cases where onnx's reference evaluator is
wrong or has no implementation: ``check_node(..., expected=ort_outputs(...))``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from onnx import helper, numpy_helper


def ort_outputs(op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any], *,
                opset: int, outputs: int = 1,
                out_types: Sequence[Any] | None = None) -> list[np.ndarray]:
    """The outputs of onnxruntime for one node of `op_type` (skips without onnxruntime);
    `out_types` are the outputs' numpy dtypes (by default, the first input's)."""
    ort = pytest.importorskip("onnxruntime")
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(outputs)]
    attrs = {k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v
             for k, v in attrs.items()}
    node = helper.make_node(op_type, names, out_names, **attrs)
    arrays = [np.asarray(a) for a in inputs if a is not None]
    graph = helper.make_graph(
        [node], "one_node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip([n for n in names if n], arrays)],
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
         for n, t in zip(out_names, out_types or [arrays[0].dtype] * outputs)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {n: a for n, a in zip([n for n in names if n], arrays)})
