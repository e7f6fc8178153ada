"""Mutated models (bytes flipped, nodes dropped or rewired, attributes of the wrong type,
operators swapped) given to `pyburn.onnx.load` and run: only `PyburnError`s may escape."""

from __future__ import annotations

import copy
import os
import random

import pytest

import pyburn
import pyburn.onnx
from pyburn.onnx import ir

from . import node_cases

SEEDS = range(300)
#: small official cases covering common operators, subgraphs and multiple outputs
CASES = ["test_add_bcast", "test_conv_with_strides_padding", "test_maxpool_2d_pads",
         "test_reshape_reordered_all_dims", "test_slice", "test_gather_0", "test_loop11",
         "test_if", "test_split_variable_parts_2d_opset18", "test_top_k",
         "test_gemm_default_matrix_bias",
         "test_softmax_axis_1", "test_lstm_defaults", "test_resize_upsample_scales_linear",
         "test_scatter_elements_with_axis", "test_cumsum_1d", "test_einsum_batch_matmul"]
ODD_VALUES = [-1, 0, 2**40, -(2**63), 1e30, float("nan"), "NOTSET", "bogus", [], [0] * 9,
              [-5, 99], b"\xff"]


def _load_case(name):
    folder = os.path.join(node_cases.SUITE, name)
    if not os.path.isdir(folder):
        pytest.skip(f"{name} is not in this onnx wheel")
    with open(os.path.join(folder, "model.onnx"), "rb") as f:
        return f.read(), folder


def _mutate_graph(model: ir.Model, rng: random.Random) -> ir.Model:
    graph = model.graph
    names = [n for node in graph.nodes for n in node.inputs + node.outputs] + ["", "ghost"]
    node = rng.choice(graph.nodes)
    action = rng.randrange(6)
    if action == 0:
        graph.nodes.remove(node)
    elif action == 1 and node.inputs:
        node.inputs[rng.randrange(len(node.inputs))] = rng.choice(names)
    elif action == 2:
        key = rng.choice(list(node.attrs) or ["axis"])
        node.attrs[key] = rng.choice(ODD_VALUES)
    elif action == 3:
        node.op_type = rng.choice(["Relu", "Concat", "Reshape", "Loop", "TopK", "Conv", "If"])
    elif action == 4:
        node.inputs.append(rng.choice(names))
    else:
        twin = copy.copy(node)
        twin.inputs, twin.outputs = list(node.inputs), list(node.outputs)
        graph.nodes.append(twin)
    return model


def _run(model_or_bytes, folder):
    module = pyburn.onnx.load(model_or_bytes, device="cpu")
    feed = {}
    data = os.path.join(folder, "test_data_set_0")
    real = [v for v in module.model.graph.inputs if v.name not in module.model.graph.initializers]
    for i, info in enumerate(real):
        path = os.path.join(data, f"input_{i}.pb")
        if os.path.exists(path) and info.kind == "tensor":
            feed[info.name] = node_cases.read_input(path, "tensor", module_device)
    module.run(feed)


module_device = pyburn.device("cpu")


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_models_raise_only_pyburn_errors(seed):
    rng = random.Random(seed)
    data, folder = _load_case(CASES[seed % len(CASES)])
    if seed % 2:
        raw = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        source = bytes(raw)
    else:
        source = _mutate_graph(pyburn.onnx.read(data), rng)
    try:
        _run(source, folder)
    except pyburn.PyburnError:
        pass
