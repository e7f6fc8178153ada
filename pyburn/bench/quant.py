"""Products with packed int8/int4 weights (``pyburn.quant.kernels``) on cpu, against float32
and against onnxruntime's int8 kernels on the same matrices, in the same run; and on the
wasm device, against its own float32 product.

For M rows of x (64 and 256) times a 1024 x 1024 weight (ms per call): the weight-only
product (x float32, the weight dequantized a tile at a time) and the dynamic one (x quantized
to uint8 on the fly, the exact integer product, the rescale), each against numpy's float32
``x @ W.T`` (the ratio above 1: the quantized product is faster); the dynamic product
against the same float MatMul quantized by ``onnxruntime.quantization.quantize_dynamic``
(DynamicQuantizeLinear, MatMulInteger, Cast, Mul) in an onnxruntime session; and the
integer product alone against onnxruntime's MatMulInteger on the same integers. The weight is
quantized symmetric per tensor (int8, scale max |W| / 127), as quantize_dynamic does.

On wasm (``quant.wasm``; wasmtime on the desktop, the page's engine in a browser): 1 and 64
rows times a 1024 x 1024 weight, int8 per tensor and int4 block 32 weight-only and int8
dynamic, each against the device's float32 ``x @ W.T`` (what a float Linear runs there), and
the int8 weight-only product against ``x @ Wt`` with the float weight stored transposed.

The matrices (`float_weight`, `float_input`) and the ONNX files (`write_models`) are also
those of ``pyburn bench web``, which runs the int8 products in Chromium against
onnxruntime-web.
"""

from __future__ import annotations

import importlib
import operator
import os
import tempfile
from array import array
from collections.abc import Callable
from functools import partial
from typing import Any

import pyburn

from .. import quant
from ..ops.capability.quantized import quant_matmul_int
from ..quant import kernels as qk
from ..quant.packing import pack
from . import peers
from .inputs import Floats
from .onnx import _quiet_options
from .report import Row
from .suite import Benchmark
from .timing import Settings, measure

ROWS = (64, 256)
SIZE = 1024
QUICK = ((4,), 32)


#: the ONNX files of the product, by name: the float MatMul, it quantize_dynamic'ed, the
#: MatMulInteger alone
MODELS = ("float", "dynamic", "integer")


def float_weight(size: int) -> Floats:
    """The float weight W (`size`, `size`) of every product here: uniform in [-1, 1) divided
    by sqrt(size), the odd columns (the product's odd inputs) by 128 more, rounded to float32
    in plain Python (the same values in a page). Quantized to int8 per tensor, an odd input's
    weight is then -1, 0 or 1: onnxruntime's uint8 x int8 kernels on x86 without VNNI add
    the products of neighbouring inputs in int16 pairs (vpmaddubsw), which saturate past
    32767, and 255 * (127 + 1) stays below, so its MatMulInteger is the exact product the
    check compares with."""
    values = Floats.random((size, size), seed=2).scaled(size ** -0.5).data
    return Floats((size, size), array("f", [v / 128 if i % size % 2 else v
                                            for i, v in enumerate(values)]))


def float_input(m: int, size: int) -> Floats:
    """The float x (`m`, `size`) that multiplies the weight."""
    return Floats.random((m, size), seed=m)


def _float_matmul_model(w: Any, path: str) -> None:
    """An ONNX file with one MatMul of x (M, K) by the initializer w.T (K, N)."""
    from pyburn.onnx import ir, proto  # import time: pyburn.onnx loads for this family only

    k = w.shape[1]
    weight = pyburn.from_numpy(w.T.copy(), device="cpu")
    graph = ir.Graph([ir.Node("MatMul", ["x", "w"], ["y"])],
                     [ir.ValueInfo("x", "float32", ("m", k))],
                     [ir.ValueInfo("y", "float32", ("m", w.shape[0]))],
                     {"w": ir.TensorData("w", "float32", (k, w.shape[0]), weight.to_bytes())})
    proto.save_model(ir.Model(graph, {"": 17}, ir_version=8), path)


def _integer_model(q: Any, path: str) -> None:
    """An ONNX file with one MatMulInteger of uint8 a (M, K) with its zero point az by the
    int8 weight q.T."""
    from onnx import TensorProto, helper, numpy_helper  # optional: onnx, beside onnxruntime

    k, n = q.shape[1], q.shape[0]
    node = helper.make_node("MatMulInteger", ["a", "w", "az"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, ["m", k]),
                      helper.make_tensor_value_info("az", TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["m", n])],
        [numpy_helper.from_array(q.T.astype("int8"), "w")])
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
                .SerializeToString())


def write_models(w: Any, q: Any, folder: str) -> dict[str, str]:
    """The paths of the `MODELS` files, written into `folder` for the float weight w (N, K)
    and its int8 values q (numpy arrays); the dynamic one is the float one quantized by
    ``onnxruntime.quantization.quantize_dynamic`` (int8 weight per tensor)."""
    # optional: onnxruntime (untyped: imported by name, as Any)
    quantization: Any = importlib.import_module("onnxruntime.quantization")
    paths = {name: os.path.join(folder, f"{name}.onnx") for name in MODELS}
    _float_matmul_model(w, paths["float"])
    quantization.quantize_dynamic(paths["float"], paths["dynamic"],
                                  weight_type=quantization.QuantType.QInt8)
    _integer_model(q, paths["integer"])
    return paths


def int8_weight(np: Any, size: int) -> tuple[Any, Any, Any]:
    """(W, its scale, its int8 values as int32) in numpy: W quantized symmetric per tensor
    (scale max |W| / 127), as quantize_dynamic and `pyburn.quant.INT8_SYMMETRIC_PER_TENSOR`
    do."""
    w = float_weight(size).numpy(np)
    scale = np.float32(np.abs(w).max() / 127)
    return w, scale, np.clip(np.rint(w / scale), -127, 127).astype(np.int32)


def _ort_sessions(ort: Any, w: Any, q: Any, folder: str) -> tuple[Any, Any]:
    """(the quantize_dynamic'ed float MatMul, the MatMulInteger alone) as sessions."""
    paths = write_models(w, q, folder)
    dynamic, integer = (ort.InferenceSession(paths[name], _quiet_options(ort),
                                             providers=["CPUExecutionProvider"])
                        for name in ("dynamic", "integer"))
    return dynamic, integer


def measure_cpu(settings: Settings) -> list[Row]:
    """The int8 products against float32 numpy and onnxruntime's int8 kernels."""
    np: Any = peers.load("numpy")  # present: the cpu device needs it
    ort: Any = peers.load("onnxruntime")
    rows_of_x, size = QUICK if settings.quick else (ROWS, SIZE)
    w, scale, q = int8_weight(np, size)
    data = pack(pyburn.from_numpy(q, device="cpu"), 8, True)
    t_scale = pyburn.tensor(float(scale), device="cpu")
    dense = (q * scale).astype(np.float32)
    out = []
    with tempfile.TemporaryDirectory() as folder:
        sessions = _ort_sessions(ort, w, q, folder) if ort is not None else None
        for m in rows_of_x:
            x = float_input(m, size).numpy(np)
            tx = pyburn.from_numpy(x, device="cpu")
            a = np.clip(np.rint(x / np.abs(x).max() * 127) + 128, 0, 255).astype(np.uint8)
            ta = pyburn.from_numpy(a.astype(np.int32), device="cpu")
            ta_zero = pyburn.full((m, 1), 128, dtype=pyburn.int32, device="cpu")
            # (cpu computes at once: the results need no read to be there)
            candidates: dict[str, Callable[[], object]] = {
                "weight_only": partial(qk.linear_weight_only, tx, data, t_scale, None, bits=8,
                                       signed=True, block=0, k=size),
                "dynamic": partial(qk.linear_dynamic, tx, data, t_scale, None, k=size),
                "integer": partial(quant_matmul_int, ta, ta_zero, data, None, 8, True, size),
                "peer_numpy": partial(np.matmul, x, dense.T)}
            if sessions is not None:
                candidates["peer_dynamic"] = partial(sessions[0].run, None, {"x": x})
                candidates["peer_integer"] = partial(sessions[1].run, None, {
                    "a": a, "az": np.array(128, np.uint8)})
            times = measure(candidates, settings)
            shape = f"{m}x{size} @ int8 {size}x{size}"
            numpy_label = peers.label("numpy") + " float32 x @ W.T"
            ort_label = peers.label("onnxruntime")
            for ours, case, peer_key, label in (
                    ("weight_only", f"weight-only {shape}", "peer_numpy", numpy_label),
                    ("dynamic", f"dynamic {shape}", "peer_numpy", numpy_label),
                    ("dynamic", f"dynamic {shape} (vs quantize_dynamic'ed MatMul)",
                     "peer_dynamic", ort_label + " quantize_dynamic"),
                    ("integer", f"integer product {shape}", "peer_integer",
                     ort_label + " MatMulInteger")):
                pair = {"pyburn": times[ours]}
                if peer_key in times:
                    pair["peer"] = times[peer_key]
                out.append(Row.compare("quant.cpu", case, "ms", lambda s: s * 1e3, pair,
                                       "peer", label, None, settings.quick))
    return out


#: the wasm rows: (product, weight scheme), each against float32
WASM_CASES = (("weight-only", quant.INT8_SYMMETRIC_PER_TENSOR),
              ("weight-only", quant.INT4_BLOCK32), ("dynamic", quant.INT8_SYMMETRIC_PER_TENSOR))
#: the wasm device's rows of x: a matrix times a vector, and a batch
WASM_ROWS = (1, 64)


def measure_wasm(settings: Settings) -> list[Row]:
    """The wasm device's SIMD kernels (int8 per tensor and int4 block 32 weight-only, int8
    dynamic) against its own float32 ``x @ W.T`` on the same matrices (wasmtime on the
    desktop); the int8 weight-only product also against ``x @ Wt`` with the weight stored
    transposed (K, N), the float product without its transposing copy."""
    np: Any = peers.load("numpy")  # present: the inputs are made in numpy
    rows_of_x, size = QUICK if settings.quick else (WASM_ROWS, SIZE)
    w = float_weight(size).numpy(np)
    dense = pyburn.from_numpy(w, device="wasm")
    transposed = pyburn.from_numpy(np.ascontiguousarray(w.T), device="wasm")
    weights = [quant.QTensor.quantize(dense, scheme) for _, scheme in WASM_CASES]
    out = []
    for m in rows_of_x:
        x = float_input(m, size).tensor("wasm")
        candidates: dict[str, Callable[[], object]] = {
            "float32": partial(operator.matmul, x, dense.T),
            "float32 (K, N)": partial(operator.matmul, x, transposed)}
        for key, ((product, scheme), weight) in enumerate(zip(WASM_CASES, weights)):
            parts = (x, weight.data, weight.scale, weight.zero_point)
            candidates[str(key)] = (
                partial(qk.linear_weight_only, *parts, **weight.layout, k=size)
                if product == "weight-only" else
                partial(qk.linear_dynamic, *parts, bits=scheme.bits, signed=scheme.signed,
                        k=size))
        times = measure(candidates, settings)
        rows = [(key, product, scheme, "float32", "wasm float32 x @ W.T")
                for key, (product, scheme) in enumerate(WASM_CASES)]
        rows.append((0, *WASM_CASES[0], "float32 (K, N)", "wasm float32 x @ Wt (stored K x N)"))
        for key, product, scheme, peer, label in rows:
            out.append(Row.compare(
                "quant.wasm", f"{product} {m}x{size} @ {scheme.describe()} {size}x{size}", "ms",
                lambda s: s * 1e3, {"pyburn": times[str(key)], "peer": times[peer]}, "peer",
                label, None, settings.quick))
    return out


BENCHMARKS = (
    Benchmark("quant", "cpu", "int8 weight-only / dynamic 1024x1024 products vs float32 numpy "
              "and onnxruntime's int8 kernels", measure_cpu),
    Benchmark("quant", "wasm", "int8 / int4 weight-only and int8 dynamic (1 and 64)x1024 @ "
              "1024x1024 products vs the wasm device's float32 x @ W.T", measure_wasm),
)
