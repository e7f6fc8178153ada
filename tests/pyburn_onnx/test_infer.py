"""Shape and dtype inference (`pyburn.onnx.infer`) against onnx's own shape inference and
the node suite's stored outputs, on torch exports, and where it shows: `prepare`'s
value_info, ``pyburn onnx info --shapes`` and the comments and batch-norm layers of
generated code."""

from __future__ import annotations

import importlib.util
import io
import os
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import pyburn
import pyburn.onnx
from pyburn.cli import main as cli
from pyburn.onnx import ir
from pyburn.onnx.codegen import convert
from pyburn.onnx.infer import annotate, infer
from pyburn.onnx.passes import prepare

from . import parity
from .node_cases import cases

RNG = np.random.default_rng(11)
#: operators whose onnx shape inference is wrong in onnx 1.22 (the stored outputs say so):
#: STFT's onesided defaults to 1, but the inferred bins are the two-sided count
_REFERENCE_WRONG = {"STFT"}


# ---- references ------------------------------------------------------------------------------
def _dims(tt: onnx.TypeProto.Tensor) -> tuple | None:
    if not tt.HasField("shape"):
        return None
    # onnx names the dims it cannot derive unk__N: those are unknown
    return tuple(d.dim_value if d.HasField("dim_value") else
                 d.dim_param if d.dim_param and not d.dim_param.startswith("unk__") else None
                 for d in tt.shape.dim)


def _reference_graphs(g: onnx.GraphProto, out: dict) -> None:
    """Every tensor type onnx inferred, by (graph name, value name), subgraphs too."""
    for v in list(g.value_info) + list(g.output):
        if v.type.HasField("tensor_type"):
            tt = v.type.tensor_type
            out[g.name, v.name] = (ir.DTYPE_NAMES.get(tt.elem_type), _dims(tt))
    for node in g.node:
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _reference_graphs(sub, out)


def _untyped(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its outputs' and intermediates' types removed (so that both inferences
    derive them instead of reading them back), subgraphs too."""
    model = onnx.ModelProto.FromString(model.SerializeToString())

    def strip(g: onnx.GraphProto) -> None:
        for o in g.output:
            o.ClearField("type") if o.type.HasField("tensor_type") else None
        g.ClearField("value_info")
        for node in g.node:
            for a in node.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    strip(sub)

    strip(model.graph)
    return model


def _frozen(folder: str) -> onnx.ModelProto:
    """The case's model with its small numeric inputs made initializers holding the test
    data (axes, shapes, scales, ... become constants both inferences can read)."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    kept = []
    for i, v in enumerate(model.graph.input):
        path = os.path.join(folder, "test_data_set_0", f"input_{i}.pb")
        if v.type.tensor_type.elem_type in (1, 6, 7, 10, 11) and os.path.exists(path):
            t = onnx.TensorProto.FromString(open(path, "rb").read())
            if len(t.dims) <= 1 and (not t.dims or t.dims[0] <= 16):
                t.name = v.name
                model.graph.initializer.append(t)
                continue
        kept.append(v)
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model


def _ours(model: onnx.ModelProto) -> tuple[ir.Model, dict]:
    """pyburn's inference on `model` by (graph name, value name), subgraphs too."""
    read = pyburn.onnx.read(model.SerializeToString())
    out: dict = {}

    def collect(g: ir.Graph) -> None:
        for name, v in g.value_info.items():
            out[g.name, name] = v
        for node in g.nodes:
            for value in node.attrs.values():
                for sub in value if isinstance(value, list) else [value]:
                    if isinstance(sub, ir.Graph):
                        collect(sub)

    collect(annotate(read.graph, read.opsets))
    return read, out


def _compare(model: onnx.ModelProto, label: str) -> tuple[int, int, int, list[str]]:
    """(node outputs, fully known by pyburn, fully known by onnx, disagreements)."""
    model = _untyped(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # onnx cannot infer some valid models (optional types, ...): skip those
        inferred = None
    ref: dict = {}
    if inferred is not None:
        _reference_graphs(inferred.graph, ref)
    read, ours = _ours(model)
    total = known = ref_known = 0
    problems = []
    op_of = {(g, o): n.op_type for g, n in _nodes(read.graph) for o in n.outputs}
    for key, v in ours.items():
        if key not in op_of or v.kind != "tensor":
            continue
        total += 1
        known += v.shape is not None and None not in v.shape
        if key not in ref or op_of[key] in _REFERENCE_WRONG:
            continue
        dtype, shape = ref[key]
        ref_known += shape is not None and None not in shape
        if dtype and v.dtype and dtype != v.dtype:
            problems.append(f"{label} {op_of[key]} {key[1]}: dtype {v.dtype}, onnx {dtype}")
        if shape is not None and v.shape is not None and (
                len(shape) != len(v.shape) or any(
                    isinstance(a, int) and isinstance(b, int) and a != b
                    for a, b in zip(v.shape, shape))):
            problems.append(f"{label} {op_of[key]} {key[1]}: shape {v.shape}, onnx {shape}")
    return total, known, ref_known, problems


def _nodes(g: ir.Graph):
    for node in g.nodes:
        yield g.name, node
        for value in node.attrs.values():
            for sub in value if isinstance(value, list) else [value]:
                if isinstance(sub, ir.Graph):
                    yield from _nodes(sub)


# ---- the node suite --------------------------------------------------------------------------
@pytest.mark.parametrize("inputs", ["declared", "frozen"])
def test_node_suite_agrees_with_onnx_shape_inference(inputs):
    """Wherever both inferences know a dim they agree, and dtypes too; coverage is the
    fraction of node outputs whose shape is fully known (ints or named dims)."""
    totals = np.zeros(3, dtype=int)
    problems = []
    for folder in cases():
        model = _frozen(folder) if inputs == "frozen" else \
            onnx.load(os.path.join(folder, "model.onnx"))
        *counts, found = _compare(model, os.path.basename(folder))
        totals += counts
        problems += found
    total, known, ref_known = totals
    print(f"\nnode suite ({inputs} inputs): {total} node outputs, pyburn knows "
          f"{known / total:.1%} of the shapes fully, onnx {ref_known / total:.1%}")
    assert not problems, "\n".join(problems[:30])
    assert known / total > (0.97 if inputs == "frozen" else 0.9)


def test_node_suite_outputs_have_the_stored_shapes():
    """Every graph output whose shape pyburn infers has the shape of the stored result."""
    wrong, checked = [], 0
    for folder in cases():
        model = _untyped(_frozen(folder))
        read = pyburn.onnx.read(model.SerializeToString())
        types = infer(read.graph, read.opsets)
        for i, out in enumerate(read.graph.outputs):
            path = os.path.join(folder, "test_data_set_0", f"output_{i}.pb")
            v = types.get(out.name)
            if v is None or v.shape is None or v.kind != "tensor" or not os.path.exists(path):
                continue
            try:
                stored = onnx.TensorProto.FromString(open(path, "rb").read())
            except Exception:  # a sequence or optional output
                continue
            checked += 1
            dims, dtype = tuple(stored.dims), ir.DTYPE_NAMES.get(stored.data_type)
            if len(dims) != len(v.shape) or any(isinstance(a, int) and a != b
                                                for a, b in zip(v.shape, dims)) \
                    or (v.dtype and v.dtype != dtype):
                wrong.append(f"{os.path.basename(folder)} {out.name}: {v.dtype} {v.shape}, "
                             f"stored {dtype} {dims}")
    assert checked > 2000
    assert not wrong, "\n".join(wrong)


# ---- torch exports ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-batch"])
def test_torch_exports_are_fully_inferred(dynamic):
    torch = pytest.importorskip("torch")
    from . import test_torch_models as exports

    lines = []
    for name in exports.MODELS:
        torch.manual_seed(0)
        module, inputs = exports._example(name)
        module.eval()
        buffer = io.BytesIO()
        extra = dict(input_names=["x"], dynamic_axes={"x": {0: "batch"}}) if dynamic else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, buffer, dynamo=False, opset_version=17, **extra)
        model = onnx.load_from_string(buffer.getvalue())
        total, known, _, problems = _compare(model, name)
        assert not problems, "\n".join(problems)
        lines.append(f"{name} {known}/{total}")
        read = pyburn.onnx.read(buffer.getvalue())
        types = infer(_untyped_ir(read.graph), read.opsets)
        expected = [tuple(y.shape) for y in exports._outputs(module(*inputs))]
        batch = inputs[0].shape[0]
        for out, shape in zip(read.graph.outputs, expected):
            got = types[out.name].shape
            assert len(got) == len(shape), (name, got, shape)
            assert all(d == s or (dynamic and d == "batch" and s == batch)
                       for d, s in zip(got, shape)), (name, got, shape)
            assert not dynamic or "batch" in got
        if not dynamic:
            assert known == total, name
    print(f"\ntorch exports ({'dynamic' if dynamic else 'static'}): " + ", ".join(lines))


def _untyped_ir(graph: ir.Graph) -> ir.Graph:
    out = ir.Graph(graph.nodes, graph.inputs, [ir.ValueInfo(v.name) for v in graph.outputs],
                   graph.initializers)
    return out


# ---- rules -----------------------------------------------------------------------------------
def _graph(nodes, inputs, outputs=("y",), initializers=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_value_info(o, onnx.TypeProto())
                                               for o in outputs], list(initializers))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return pyburn.onnx.read(model.SerializeToString())


def _types(model: ir.Model) -> dict[str, ir.ValueInfo]:
    return infer(model.graph, model.opsets)


def _f32(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def test_shape_arithmetic_keeps_named_dims():
    model = _graph([helper.make_node("Shape", ["x"], ["s"]),
                    helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
                    helper.make_node("Unsqueeze", ["n", "zero_1d"], ["n1"]),
                    helper.make_node("Concat", ["n1", "minus"], ["target"], axis=0),
                    helper.make_node("Reshape", ["x", "target"], ["flat"]),
                    helper.make_node("Flatten", ["x"], ["flat2"]),
                    helper.make_node("MatMul", ["flat", "w"], ["y"])],
                   [_f32("x", "batch", 8, 7, 7)], ("y", "flat2"),
                   [_ints("zero", 0), _ints("zero_1d", [0]), _ints("minus", [-1]),
                    numpy_helper.from_array(np.zeros((392, 10), np.float32), "w")])
    types = _types(model)
    assert types["target"].shape == (2,)
    assert types["flat"].shape == types["flat2"].shape == ("batch", 392)
    assert (types["y"].dtype, types["y"].shape) == ("float32", ("batch", 10))
    assert (types["n"].dtype, types["n"].shape) == ("int64", ())


@pytest.mark.parametrize("a, b, expected", [
    (("n", 1), (1, 4), ("n", 4)),
    (("n", 3), ("n", 3), ("n", 3)),
    (("n", 3), ("m", 3), (None, 3)),     # two names: either may be 1
    ((None, 3), ("n", 1), (None, 3)),
    ((5, 3), ("n", 3), (5, 3)),          # n must be 1 or 5: the result is 5 either way
    ((2, 3), (3,), (2, 3)),
])
def test_broadcasting_never_guesses(a, b, expected):
    model = _graph([helper.make_node("Add", ["a", "b"], ["y"]),
                    helper.make_node("Less", ["a", "b"], ["c"])],
                   [_f32("a", *a), _f32("b", *b)], ("y", "c"))
    types = _types(model)
    assert types["y"].shape == types["c"].shape == expected
    assert types["c"].dtype == "bool"


def test_unknowns_stay_unknown():
    model = _graph([helper.make_node("Squeeze", ["x"], ["sq"]),
                    helper.make_node("Shape", ["x"], ["s"]),
                    helper.make_node("Mul", ["s", "two"], ["s2"]),
                    helper.make_node("Reshape", ["x", "s2"], ["y"]),
                    helper.make_node("Transpose", ["x"], ["bad"], perm=[0, 5, 1]),
                    helper.make_node("Custom", ["x"], ["c"], domain="mine")],
                   [_f32("x", "n", 1, 3)], ("y", "sq", "bad", "c"), [_ints("two", 2)])
    types = _types(model)
    assert types["sq"].shape is None       # "n" might be 1 as well
    assert types["s2"].shape == (3,)       # n * 2 is beyond equality: unknown values
    assert types["y"].shape == (None, 2, 6)
    assert types["bad"].shape is None and types["c"].shape is None


def test_declared_intermediate_types_fill_in():
    model = _graph([helper.make_node("Custom", ["x"], ["c"], domain="mine"),
                    helper.make_node("Relu", ["c"], ["y"])], [_f32("x", 2, 3)])
    model.graph.value_info["c"] = ir.ValueInfo("c", "float32", (2, None))
    types = _types(model)
    assert (types["y"].dtype, types["y"].shape) == ("float32", (2, None))


def test_windows_convolutions_and_pools():
    w = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "w")
    model = _graph([helper.make_node("Conv", ["x", "w"], ["same"], pads=[1, 1, 1, 1]),
                    helper.make_node("Conv", ["x", "w"], ["strided"], strides=[2, 2],
                                     auto_pad="SAME_UPPER"),
                    helper.make_node("MaxPool", ["x"], ["pool"], kernel_shape=[2, 2],
                                     strides=[2, 2], ceil_mode=1),
                    helper.make_node("ConvTranspose", ["same", "wt"], ["up"], strides=[2, 2]),
                    helper.make_node("GlobalAveragePool", ["x"], ["y"])],
                   [_f32("x", "n", 3, "h", 9)], ("y", "strided", "pool", "up"),
                   [w, numpy_helper.from_array(np.zeros((8, 4, 2, 2), np.float32), "wt")])
    types = _types(model)
    assert types["same"].shape == ("n", 8, "h", 9)   # a "same" convolution keeps h
    assert types["strided"].shape == ("n", 8, None, 5)
    assert types["pool"].shape == ("n", 3, None, 5)
    assert types["up"].shape == ("n", 4, None, 18)
    assert types["y"].shape == ("n", 3, 1, 1)


def _body(nodes, inputs, outputs):
    return helper.make_graph(nodes, "body", inputs, outputs)


def test_loops_keep_only_what_every_iteration_shares():
    grow = _body([helper.make_node("Identity", ["cond"], ["cond_out"]),
                  helper.make_node("Concat", ["acc", "acc"], ["acc_out"], axis=0),
                  helper.make_node("Relu", ["fixed"], ["fixed_out"]),
                  helper.make_node("Identity", ["fixed"], ["scan"])],
                 [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                  helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                  helper.make_value_info("acc", onnx.TypeProto()),
                  helper.make_value_info("fixed", onnx.TypeProto())],
                 [helper.make_value_info(n, onnx.TypeProto())
                  for n in ("cond_out", "acc_out", "fixed_out", "scan")])
    model = _graph([helper.make_node("Loop", ["trips", "", "a", "f"], ["a_end", "f_end", "y"],
                                     body=grow)],
                   [_f32("a", 2, 3), _f32("f", 4, "k")], ("a_end", "f_end", "y"),
                   [_ints("trips", 5)])
    types = _types(model)
    assert types["a_end"].shape == (None, 3)
    assert types["f_end"].shape == (4, "k")
    assert types["y"].shape == (5, 4, "k")
    prepared = prepare(model)
    body = prepared.graph.nodes[0].attrs["body"]
    assert body.value_info["acc_out"].shape == (None, 3)


@pytest.mark.parametrize("cond, expected", [(None, (2, None)), (True, (2, 3)),
                                            (False, (2, 4))])
def test_if_takes_a_known_branch_or_what_both_share(cond, expected):
    def branch(name, cols):
        value = numpy_helper.from_array(np.zeros((2, cols), np.float32), name)
        return helper.make_graph([helper.make_node("Constant", [], [name], value=value)],
                                 name, [], [helper.make_value_info(name, onnx.TypeProto())])

    inits = [] if cond is None else [numpy_helper.from_array(np.array(cond), "c")]
    inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, [])] if cond is None else []
    model = _graph([helper.make_node("If", ["c"], ["y"], then_branch=branch("t", 3),
                                     else_branch=branch("e", 4))], inputs, ("y",), inits)
    assert _types(model)["y"].shape == expected


# ---- where the types show --------------------------------------------------------------------
def _batch_norm_model(batch: int | str = 2, declared: bool = True) -> onnx.ModelProto:
    c = 3

    def stats(prefix):
        return [numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32),
                                        f"{prefix}.weight"),
                numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32),
                                        f"{prefix}.bias"),
                numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32),
                                        f"{prefix}.running_mean"),
                numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32),
                                        f"{prefix}.running_var")]

    def bn(x, prefix, y, **attrs):
        names = [f"{prefix}.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
        return helper.make_node("BatchNormalization", [x, *names], [y], **attrs)

    nodes = [bn("x", "bn2", "y2", epsilon=1e-3, momentum=0.8),
             helper.make_node("ReduceMean", ["y2", "hw"], ["pooled"], keepdims=0),
             bn("pooled", "bn1", "y")]
    x = _f32("x", batch, c, 4, 5) if declared else helper.make_value_info("x", onnx.TypeProto(
        tensor_type=onnx.TypeProto.Tensor(elem_type=TensorProto.FLOAT)))
    graph = helper.make_graph(nodes, "g", [x], [_f32("y", batch, c)],
                              stats("bn2") + stats("bn1") + [_ints("hw", [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_prepare_stores_the_types():
    model = prepare(pyburn.onnx.read(_batch_norm_model("batch").SerializeToString()))
    info = model.graph.value_info
    assert (info["y2"].dtype, info["y2"].shape) == ("float32", ("batch", 3, 4, 5))
    assert info["pooled"].shape == ("batch", 3)


def test_info_prints_shapes(tmp_path, capsys):
    path = tmp_path / "bn.onnx"
    path.write_bytes(_batch_norm_model("batch").SerializeToString())
    assert cli(["onnx", "info", str(path), "--shapes"]) == 0
    out = capsys.readouterr().out
    assert "shapes:" in out
    assert "ReduceMean -> pooled: float32 batchx3" in out
    assert "BatchNormalization -> y2: float32 batchx3x4x5" in out


def _generated(model: onnx.ModelProto, tmp_path) -> tuple[str, object]:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    code, weights = convert(str(path), tmp_path / "out")
    spec = importlib.util.spec_from_file_location(f"generated_{tmp_path.name}", code)
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    return open(code).read(), generated.Model.load(weights, device="cpu")


def test_generated_code_raises_batch_norm_by_rank_and_comments_shapes(tmp_path):
    model = _batch_norm_model("batch")
    source, generated = _generated(model, tmp_path)
    assert "self.bn2 = nn.BatchNorm2d(\n            3,\n            eps=0.00100000" in source
    assert "momentum=0.19999998" in source  # ONNX's 0.8 (as a float32) the other way round
    assert "self.bn1 = nn.BatchNorm1d(3, device=device)" in source
    assert "self.eval()" in source and not generated.training
    assert " = self.bn2(x)  # (batch, 3, 4, 5)" in source
    assert all(len(line) <= 100 for line in source.splitlines() if "  # (" in line)
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    ort = pytest.importorskip("onnxruntime")
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = generated(pyburn.from_numpy(x, device="cpu")).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("declared", [True, False])
def test_generated_batch_norm_code_gives_the_runners_results(tmp_path, declared):
    model = _batch_norm_model("batch", declared=declared)
    source, _ = _generated(model, tmp_path)
    assert ("nn.BatchNorm" in source) == ("self.eval()" in source) == declared
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    parity.assert_same(model.SerializeToString(), [pyburn.from_numpy(x, device="cpu")],
                       tmp_path / "parity")
