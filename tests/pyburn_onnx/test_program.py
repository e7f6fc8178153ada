"""How `pyburn.onnx.load` runs a graph: the compiled program (values freed after their last
reader, subgraphs reading the enclosing scope), shape specialization and its fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import pyburn
import pyburn.onnx
from pyburn.onnx.registry import ints

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, initializers=(), value_info=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers),
                              value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _f32(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _flatten_by_shape(*shape):
    # x (a, b, c) -> (a, b * c), the target computed as exporters write it:
    # Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]), then a MatMul by w (b * c, 5)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["a"], axis=0),
             helper.make_node("Unsqueeze", ["a", "axes"], ["a1"]),
             helper.make_node("Concat", ["a1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"]),
             helper.make_node("MatMul", ["flat", "w"], ["y"])]
    w = RNG.standard_normal((12, 5)).astype(np.float32)
    inits = [_i64("zero", 0), _i64("axes", [0]), _i64("minus_one", [-1]),
             numpy_helper.from_array(w, "w")]
    return _model(nodes, [_f32("x", *shape)], [_f32("y", shape[0], 5)], inits), w


@pytest.mark.parametrize("dev", ["cpu", "flex"])
def test_shape_arithmetic_of_declared_shapes_is_folded(dev):
    model, w = _flatten_by_shape(2, 3, 4)
    module = pyburn.onnx.load(model.SerializeToString(), device=dev)
    special = module._special.program
    # the Shape node stays as a check; Gather, Unsqueeze and Concat are computed at load
    assert [s.node.op_type for s in special.steps] == ["Shape", "Reshape", "MatMul"]
    assert len(module._program.steps) == 6
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = module(pyburn.tensor(x.tolist(), device=dev))
    np.testing.assert_allclose(np.array(y.tolist()), x.reshape(2, 12) @ w, rtol=1e-5)


def test_inputs_of_other_shapes_run_the_general_program():
    model, w = _flatten_by_shape(2, 3, 4)
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu")
    x = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    y = module(pyburn.from_numpy(x, device="cpu"))
    np.testing.assert_allclose(y.numpy(), x.reshape(5, 12) @ w, rtol=1e-5)
    assert module._special is not None  # still used for inputs of the declared shape


def test_a_specialized_program_moves_with_the_module():
    model, w = _flatten_by_shape(2, 3, 4)
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu").to("flex")
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = module(pyburn.tensor(x.tolist(), device="flex"))
    assert y.device is pyburn.device("flex")
    np.testing.assert_allclose(np.array(y.tolist()), x.reshape(2, 12) @ w, rtol=1e-5)


def test_a_wrong_declared_shape_falls_back_to_the_general_program():
    # the file claims r is (2, 12); inference takes the claim for the batch dim, so the
    # specialized program folds Shape(r) to (2, 12), and its check catches the lie
    nodes = [helper.make_node("Reshape", ["x", "cols"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = _model(nodes, [_f32("x", "n", 3, 4)], [_f32("y", "n", 12)], [_i64("cols", [-1, 12])],
                   value_info=[_f32("r", 2, 12)])
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu")
    assert module._special is not None
    x = RNG.standard_normal((3, 3, 4)).astype(np.float32)
    y = module(pyburn.from_numpy(x, device="cpu"))
    np.testing.assert_array_equal(y.numpy(), x.reshape(3, 12))
    assert module._special is None  # inference proved wrong: no more specializing


def test_fine_tuning_through_a_specialized_program():
    torch = pytest.importorskip("torch")
    model, w = _flatten_by_shape(2, 3, 4)
    dev = pyburn.device("cpu").autodiff()
    module = pyburn.onnx.load(model.SerializeToString(), device=dev)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    (module(pyburn.tensor(x, device=dev)) ** 2).sum().backward()
    tw = torch.tensor(w, requires_grad=True)
    ((torch.tensor(x).reshape(2, 12) @ tw) ** 2).sum().backward()
    np.testing.assert_allclose(module.w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("dev", ["cpu", "flex"])
def test_values_live_until_their_last_reader_even_inside_a_subgraph(dev):
    # `early` is read only by the If's branch, several steps after it was computed; Split's
    # first output is read by nobody
    branch = helper.make_graph([helper.make_node("Add", ["early", "late"], ["r"])], "then",
                               [], [_f32("r", 4)])
    other = helper.make_graph([helper.make_node("Sub", ["early", "late"], ["r2"])], "else",
                              [], [_f32("r2", 4)])
    nodes = [helper.make_node("Relu", ["x"], ["early"]),
             helper.make_node("Split", ["x2"], ["unused", "half"], axis=0, num_outputs=2),
             helper.make_node("Neg", ["half"], ["late"]),
             helper.make_node("ReduceSum", ["late"], ["total"], keepdims=0),
             helper.make_node("Less", ["total", "zero"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=other)]
    graph = helper.make_graph(nodes, "g", [_f32("x", 4), _f32("x2", 8)], [_f32("y", 4)],
                              [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    module = pyburn.onnx.load(model.SerializeToString(), device=dev)
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    x2 = np.arange(8, dtype=np.float32)
    y = module(pyburn.tensor(x.tolist(), device=dev), pyburn.tensor(x2.tolist(), device=dev))
    # the half [4, 5, 6, 7] negated sums below zero: the then branch, early + late
    np.testing.assert_allclose(y.tolist(), np.maximum(x, 0) - x2[4:])
    # and running again gives the same (nothing the program keeps was dropped)
    y = module(pyburn.tensor(x.tolist(), device=dev), pyburn.tensor(x2.tolist(), device=dev))
    np.testing.assert_allclose(y.tolist(), np.maximum(x, 0) - x2[4:])


def test_operator_errors_name_the_node():
    nodes = [helper.make_node("Reshape", ["x", "target"], ["y"], name="the_reshape")]
    model = _model(nodes, [_f32("x", "n")], [_f32("y", "n")], [_i64("target", [5, 5])])
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu")
    with pytest.raises(pyburn.PyburnError, match="the_reshape"):
        module(pyburn.arange(6.0, device="cpu"))


def test_ints_reads_a_constant_once_and_hands_out_fresh_lists():
    t = pyburn.tensor([2, 3, -1], device="cpu")
    first = ints(t)
    first[0] = 99  # Reshape fills in zeros in the list it gets
    assert ints(t) == [2, 3, -1]
    assert ints(pyburn.tensor(7, device="cpu")) == [7]
    assert ints(None) == [] and ints([1.0, 2]) == [1, 2]
