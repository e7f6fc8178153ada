"""`pyburn.onnx.load`: running graphs, the passes' checks, folding, fine-tuning, codegen."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import pyburn
import pyburn.onnx
from pyburn.onnx import UnsupportedOperatorError
from pyburn.onnx.codegen import convert

from . import onnx_reference, parity

RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, initializers=(), opset=17, functions=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("local", 1)],
                              functions=list(functions))
    return model


def _f32(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _mlp():
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["z"]),
             helper.make_node("Relu", ["z"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "layer.b")]
    nodes[1].input[1] = "layer.b"
    return _model(nodes, [_f32("x", "n", 4)], [_f32("y", "n", 3)], inits), w, b


def test_mlp_runs_and_names_its_parameters(device):
    model, w, b = _mlp()
    module = pyburn.onnx.load(model.SerializeToString(), device=device)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    y = module(pyburn.tensor(x.tolist(), device=device))
    np.testing.assert_allclose(np.array(y.tolist()), np.maximum(x @ w + b, 0), rtol=1e-5)
    assert sorted(name for name, _ in module.named_parameters()) == ["layer_b", "w"]
    assert module.onnx_names["layer_b"] == "layer.b"
    assert module.run({"x": pyburn.tensor(x.tolist(), device=device)})["y"].shape == (5, 3)


def test_replayed_runs_follow_new_weights(device, monkeypatch):
    """From the third call the runs are replays (`pyburn.capture`), equal bit for bit to
    the step-by-step run; weights loaded after that are used, and captured again."""
    model, w, b = _mlp()
    module = pyburn.onnx.load(model.SerializeToString(), device=device)
    xs = [RNG.standard_normal((5, 4)).astype(np.float32) for _ in range(7)]
    got = [module(pyburn.tensor(x, device=device)).numpy() for x in xs[:4]]
    (entry,) = module._captured.entries.values()
    assert entry.capture is not None
    monkeypatch.setenv("PYBURN_CAPTURE", "0")
    for x, y in zip(xs, got):
        assert np.array_equal(module(pyburn.tensor(x, device=device)).numpy(), y)
        np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    monkeypatch.delenv("PYBURN_CAPTURE")
    module.load_state_dict({"w": pyburn.tensor(-w, device=device),
                            "layer_b": pyburn.tensor(b * 2, device=device)})
    for x in xs[4:]:
        y = module(pyburn.tensor(x, device=device)).numpy()
        np.testing.assert_allclose(y, np.maximum(x @ -w + 2 * b, 0), rtol=1e-5, atol=1e-6)
    assert entry.capture is not None and entry.state[0] is module.w._h


def test_imported_model_fine_tunes_like_torch():
    torch = pytest.importorskip("torch")
    model, w, b = _mlp()
    dev = pyburn.device("cpu").autodiff()
    module = pyburn.onnx.load(model.SerializeToString(), device=dev)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    module(pyburn.tensor(x, device=dev)).sum().backward()
    tw = torch.tensor(w, requires_grad=True)
    torch.relu(torch.tensor(x) @ tw + torch.tensor(b)).sum().backward()
    np.testing.assert_allclose(module.w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)


def test_shape_arithmetic_is_folded_at_load():
    # Reshape's target computed from a constant tensor's shape: folded to a constant
    nodes = [helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    c = numpy_helper.from_array(np.zeros((3, 2), np.int64), "c")
    module = pyburn.onnx.load(_model(nodes, [_f32("x", 6)], [_f32("y", 3, 2)], [c])
                              .SerializeToString(), device="cpu")
    assert [s.node.op_type for s in module._program.steps] == ["Reshape"]
    assert module(pyburn.arange(6.0, device="cpu")).shape == (3, 2)


def test_unsupported_operators_are_all_named_before_running():
    nodes = [helper.make_node("FancyOp", ["x"], ["a"]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("OtherOp", ["b"], ["y"], domain="vendor")]
    model = _model(nodes, [_f32("x", 2)], [_f32("y", 2)])
    model.opset_import.append(helper.make_opsetid("vendor", 1))
    with pytest.raises(UnsupportedOperatorError, match="FancyOp.*vendor.OtherOp"):
        pyburn.onnx.load(model.SerializeToString(), device="cpu")


def test_unknown_attributes_are_named():
    nodes = [helper.make_node("Relu", ["x"], ["y"], flavour=3)]
    with pytest.raises(UnsupportedOperatorError, match="Relu: flavour"):
        pyburn.onnx.load(_model(nodes, [_f32("x", 2)], [_f32("y", 2)]).SerializeToString())


@pytest.mark.parametrize("nodes, message", [
    ([helper.make_node("Relu", ["nowhere"], ["y"])], "reads 'nowhere'"),
    ([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
      helper.make_node("Relu", ["a"], ["y"])], "cycle"),
    ([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])],
     "already defined"),
])
def test_malformed_graphs_are_format_errors(nodes, message):
    model = _model(nodes, [_f32("x", 2)], [_f32("y", 2)])
    with pytest.raises(pyburn.FormatError, match=message):
        pyburn.onnx.load(onnx_reference.model(model), device="cpu")


def test_unknown_opset_is_refused():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_f32("x", 2)], [_f32("y", 2)],
                   opset=99)
    with pytest.raises(pyburn.FormatError, match="opset 99"):
        pyburn.onnx.load(onnx_reference.model(model), device="cpu")


def test_wrong_inputs_are_argument_errors():
    module = pyburn.onnx.load(_mlp()[0].SerializeToString(), device="cpu")
    with pytest.raises(pyburn.ArgumentError, match="missing model inputs: x"):
        module()
    with pytest.raises(pyburn.ArgumentError, match="no input 'z'"):
        module(z=1)


def test_model_functions_are_inlined():
    fn = helper.make_function(
        "local", "ScaledRelu", ["a"], ["b"],
        [helper.make_node("Constant", [], ["k"], value_float=2.0),
         helper.make_node("Mul", ["a", "k"], ["m"]), helper.make_node("Relu", ["m"], ["b"])],
        [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("ScaledRelu", ["x"], ["t"], domain="local"),
             helper.make_node("ScaledRelu", ["t"], ["y"], domain="local")]
    model = _model(nodes, [_f32("x", 3)], [_f32("y", 3)], functions=[fn])
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu")
    out = module(pyburn.tensor([-1.0, 0.5, 2.0], device="cpu"))
    assert out.tolist() == [0.0, 2.0, 8.0]


def _loop_model():
    # sum of i*x for i in 0..4, with an If inside the body choosing + or -
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["fi", "x"], ["term"]),
         helper.make_node("Greater", ["fi", "two"], ["big"]),
         helper.make_node("If", ["big"], ["next"],
                          then_branch=helper.make_graph(
                              [helper.make_node("Sub", ["acc", "term"], ["r"])], "then", [],
                              [_f32("r", 2)]),
                          else_branch=helper.make_graph(
                              [helper.make_node("Add", ["acc", "term"], ["r2"])], "else", [],
                              [_f32("r2", 2)])),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _f32("acc", 2)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _f32("next", 2),
         _f32("term", 2)])
    nodes = [helper.make_node("Loop", ["n", "", "zero"], ["total", "terms"], body=body)]
    inits = [numpy_helper.from_array(np.array(5, np.int64), "n"),
             numpy_helper.from_array(np.zeros(2, np.float32), "zero"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    return _model(nodes, [_f32("x", 2)], [_f32("total", 2), _f32("terms", 5, 2)], inits)


def _loop_reference(x):
    total = np.zeros(2, np.float32)
    for i in range(5):
        total = total - i * x if i > 2 else total + i * x
    return total, np.stack([i * x for i in range(5)])


def test_loop_with_nested_if_reads_outer_scope(device):
    x = np.array([1.0, -2.0], np.float32)
    total, terms = pyburn.onnx.load(_loop_model().SerializeToString(), device=device)(
        pyburn.tensor(x.tolist(), device=device))
    want_total, want_terms = _loop_reference(x)
    np.testing.assert_allclose(total.tolist(), want_total)
    np.testing.assert_allclose(terms.tolist(), want_terms)


def _int64_model():
    # ONNX's int64 three ways: static shape inputs (Slice, Reshape), an index tensor (Gather)
    # and a constant past int32's range added to an int64 input
    big = np.array([2**40, -(2**40), 7], np.int64)
    nodes = [helper.make_node("Slice", ["x", "one", "end", "one"], ["s"]),
             helper.make_node("Gather", ["s", "idx"], ["g"], axis=1),
             helper.make_node("Reshape", ["g", "flat"], ["y"]),
             helper.make_node("Add", ["n", "big"], ["m"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
             (("one", [1]), ("end", [2**63 - 1]), ("idx", [[2, 0], [1, 1]]), ("flat", [-1]))]
    inputs = [_f32("x", "batch", 6), helper.make_tensor_value_info("n", TensorProto.INT64, [3])]
    outputs = [_f32("y", None), helper.make_tensor_value_info("m", TensorProto.INT64, [3])]
    return _model(nodes, inputs, outputs, inits + [numpy_helper.from_array(big, "big")])


def test_generated_code_holds_int64_as_the_runner_does(tmp_path):
    model = _int64_model().SerializeToString()
    code, _ = convert(model, tmp_path / "source")
    source = open(code).read()
    # static shape inputs are Python ints, the other int64 tensors the device's index dtype
    assert "ops.slicing.slice_(x, [1], [9223372036854775807], [1])" in source
    assert "ops.shape.reshape(gather, [-1])" in source
    assert "index = ops.index_dtype(device)" in source and "pyburn.int64" not in source
    assert "self.flat" not in source and "self.one" not in source
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    parity.assert_same(model, [pyburn.from_numpy(x, device="cpu"),
                               pyburn.tensor([1, 2, 3], dtype=pyburn.int64, device="cpu")],
                       tmp_path / "parity")


def test_generated_code_matches_the_interpreter(tmp_path):
    model = _loop_model()
    path = tmp_path / "loopy.onnx"
    onnx.save(model, path)
    code_path, weights = convert(str(path), tmp_path / "out")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated",
                           "--line-length", "100", code_path], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    namespace: dict = {}
    exec(compile(open(code_path).read(), code_path, "exec"), namespace)
    generated = namespace["Model"].load(weights, device="cpu")
    x = np.array([0.5, 3.0], np.float32)
    total, terms = generated(pyburn.tensor(x.tolist(), device="cpu"))
    want_total, want_terms = _loop_reference(x)
    np.testing.assert_allclose(total.tolist(), want_total)
    np.testing.assert_allclose(terms.tolist(), want_terms)
    parity.assert_same(str(path), [pyburn.from_numpy(x, device="cpu")], tmp_path / "parity")
