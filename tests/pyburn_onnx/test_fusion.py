"""`pyburn.onnx.fusion`: Conv -> BatchNormalization -> activation chains run as one step,
with onnxruntime's outputs, the unfused run's gradients, exports and parameters; and the
chains it must leave alone."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import pyburn
import pyburn.onnx

RNG = np.random.default_rng(3)
C, OUT = 4, 6


def _f32(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def _conv_inits(bias=True, depthwise=False):
    w = RNG.standard_normal((C, 1, 3, 3) if depthwise else (OUT, C, 3, 3)) * 0.5
    inits = [_init("w", w)]
    if bias:
        inits.append(_init("b", RNG.standard_normal(w.shape[0])))
    return inits


def _norm_inits(channels=OUT):
    return [_init("scale", RNG.uniform(0.5, 2, channels)),
            _init("shift", RNG.standard_normal(channels)),
            _init("mean", RNG.standard_normal(channels)),
            _init("var", RNG.uniform(0.2, 3, channels))]


def _model(tail, extra_inits=(), opset=17, bias=True, norm=True, depthwise=False,
           outputs=("y",), conv_attrs=None):
    """x -> Conv [-> BatchNormalization] -> the `tail` nodes (reading "c", giving "y")."""
    channels = C if depthwise else OUT
    attrs = conv_attrs or {"pads": [1, 1, 1, 1], "strides": [1, 1],
                           "group": C if depthwise else 1}
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []),
                              ["z" if norm else "c"], **attrs)]
    inits = _conv_inits(bias, depthwise) + list(extra_inits)
    if norm:
        nodes.append(helper.make_node("BatchNormalization", ["z", "scale", "shift", "mean", "var"],
                                      ["c"], epsilon=1e-3))
        inits += _norm_inits(channels)
    nodes += tail
    graph = helper.make_graph(nodes, "g", [_f32("x", "n", C, "h", "w")],
                              [_f32(name, None) for name in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _clip_constants():
    return [helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(
                np.array(0.0, np.float32))),
            helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(
                np.array(6.0, np.float32))),
            helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]


#: name -> (the model, how many FusedConv steps it runs as)
CASES = {
    "relu": (lambda: _model([helper.make_node("Relu", ["c"], ["y"])]), 1),
    "clip inputs": (lambda: _model([helper.make_node("Clip", ["c", "lo", "hi"], ["y"])],
                                   [_init("lo", 0.0), _init("hi", 6.0)]), 1),
    "clip max only": (lambda: _model([helper.make_node("Clip", ["c", "", "hi"], ["y"])],
                                     [_init("hi", 0.5)], norm=False), 1),
    "clip constants": (lambda: _model(_clip_constants(), depthwise=True, bias=False), 1),
    "clip-6 attributes": (lambda: _model([helper.make_node("Clip", ["c"], ["y"], min=-1.0,
                                                           max=1.5)], opset=9), 1),
    "sigmoid": (lambda: _model([helper.make_node("Sigmoid", ["c"], ["y"])], norm=False), 1),
    "silu": (lambda: _model([helper.make_node("Sigmoid", ["c"], ["s"]),
                             helper.make_node("Mul", ["c", "s"], ["y"])], depthwise=True), 1),
    "silu swapped": (lambda: _model([helper.make_node("Sigmoid", ["c"], ["s"]),
                                     helper.make_node("Mul", ["s", "c"], ["y"])]), 1),
    "hardsigmoid": (lambda: _model([helper.make_node("HardSigmoid", ["c"], ["y"],
                                                     alpha=1 / 6)]), 1),
    "hardswish": (lambda: _model([helper.make_node("HardSwish", ["c"], ["y"])],
                                 bias=False), 1),
    "norm alone": (lambda: _model([helper.make_node("Identity", ["c"], ["y"])],
                                  bias=False), 1),
    "strided 1x1": (lambda: _model([helper.make_node("Relu", ["c"], ["y"])], conv_attrs={
        "kernel_shape": [3, 3], "strides": [2, 1], "pads": [0, 1, 1, 0]}), 1),
    # left alone: another slope, an intermediate that is an output, two readers, training
    "hardsigmoid 0.2": (lambda: _model([helper.make_node("HardSigmoid", ["c"], ["y"])],
                                       norm=False), 0),
    "read twice": (lambda: _model([helper.make_node("Relu", ["c"], ["r"]),
                                   helper.make_node("Add", ["r", "c"], ["y"])], norm=False), 0),
    "intermediate output": (lambda: _model([helper.make_node("Relu", ["c"], ["y"])],
                                           norm=False, outputs=("y", "c")), 0),
}


def _run(model, device, fuse=True):
    module = pyburn.onnx.load(model.SerializeToString(), device=device, fuse=fuse)
    return module, [s for s in module._program.steps if s.node.op_type == "FusedConv"]


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_onnxruntime_gives_the_same_outputs(device, case):
    make, count = CASES[case]
    model = make()
    x = (RNG.standard_normal((2, C, 7, 6)) * 2).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})
    for fuse in (True, False):
        module, fused = _run(model, device, fuse)
        assert len(fused) == (count if fuse else 0)
        got = module(pyburn.tensor(x, device=device))
        for g, w in zip(got if isinstance(got, tuple) else (got,), want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "plain"])
def test_each_new_input_shape_is_planned_again(device, fuse):
    """A FusedConv step and a plain Conv step keep their checked geometry per input shape
    (`conv.planned`): with SAME_UPPER's pads, which follow the input's size, inputs of other
    shapes, and the first again, give onnxruntime's outputs."""
    model = _model([helper.make_node("Relu", ["c"], ["y"])], conv_attrs={
        "auto_pad": "SAME_UPPER", "kernel_shape": [3, 3], "strides": [2, 3]})
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    module, _ = _run(model, device, fuse)
    for shape in ((2, C, 7, 6), (1, C, 9, 4), (2, C, 7, 6)):
        x = RNG.standard_normal(shape).astype(np.float32)
        got = module(pyburn.tensor(x, device=device))
        np.testing.assert_allclose(got.numpy(), session.run(None, {"x": x})[0], rtol=1e-4,
                                   atol=1e-5)


def test_parameters_are_the_files_either_way(device):
    model = CASES["clip inputs"][0]()
    fused, _ = _run(model, device)
    plain, _ = _run(model, device, fuse=False)
    assert dict(fused.named_parameters()).keys() == dict(plain.named_parameters()).keys()
    assert fused.state_dict().keys() == plain.state_dict().keys()
    assert {"mean", "var"} <= {n for n, _ in fused.named_buffers()}


def test_gradients_equal_the_unfused_ones():
    """On an autodiff device the fused step runs node by node: the same gradients."""
    model = CASES["silu"][0]()
    dev = pyburn.device("cpu").autodiff()
    x = RNG.standard_normal((2, C, 7, 6)).astype(np.float32)
    grads = []
    for fuse in (True, False):
        module, _ = _run(model, dev, fuse)
        inp = pyburn.tensor(x, device=dev, requires_grad=True)
        module(inp).square().sum().backward()
        grads.append([inp.grad.numpy()] + [p.grad.numpy() for _, p in
                                           sorted(module.named_parameters())])
    for g, w in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_new_weights_are_folded_again():
    """The folded weights follow the module's parameters and buffers when they change."""
    model = CASES["relu"][0]()
    fused, _ = _run(model, "cpu")
    plain, _ = _run(model, "cpu", fuse=False)
    x = pyburn.tensor(RNG.standard_normal((2, C, 7, 6)).astype(np.float32), device="cpu")
    fused(x)
    state = {k: v * 1.5 for k, v in plain.state_dict().items()}
    for module in (fused, plain):
        module.load_state_dict(state)
    np.testing.assert_allclose(fused(x).numpy(), plain(x).numpy(), rtol=1e-5, atol=1e-5)
    with pyburn.no_grad():
        fused.var.add_(1.0)
        plain.var.add_(1.0)
    np.testing.assert_allclose(fused(x).numpy(), plain(x).numpy(), rtol=1e-5, atol=1e-5)


def test_an_export_writes_the_nodes_apart(tmp_path):
    """Exporting a loaded model traces the fused step as the separate ops."""
    model = CASES["silu"][0]()
    module, _ = _run(model, "cpu")
    x = RNG.standard_normal((2, C, 7, 6)).astype(np.float32)
    path = tmp_path / "again.onnx"
    pyburn.onnx.export(module, (pyburn.tensor(x, device="cpu"),), path)
    written = onnx.load(path)
    assert "Conv" in {n.op_type for n in written.graph.node}
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x})[0],
                               module(pyburn.tensor(x, device="cpu")).numpy(),
                               rtol=1e-4, atol=1e-5)
