"""`pyburn.onnx.export` checked against the `onnx` package and onnxruntime: every exported file
passes ``onnx.checker.check_model(full_check=True)`` and onnxruntime's outputs match pyburn's
within 1e-4, on the example inputs and, where axes are dynamic, on inputs of other sizes; the
code `pyburn onnx convert` writes for it gives the runner's results on every device."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import pyburn
import pyburn.nn.functional as F
import pyburn.onnx
from pyburn import nn
from pyburn.models.mnist import MnistCNN, MnistMLP
from pyburn.onnx.exporter import export
from pyburn.onnx.exporter.trace import flatten

from .. import parity

DEV = "cpu"
TOL = 1e-4


def _outputs(model: nn.Module, inputs: tuple) -> list[np.ndarray]:
    with pyburn.no_grad():
        result = model(*inputs)
    return [t.numpy() for t in flatten(result, "model") if t is not None]


def check(model: nn.Module, inputs, tmp_path, others=(), **options) -> onnx.ModelProto:
    """Export `model` on `inputs`, validate the file and compare onnxruntime with pyburn on
    `inputs` and on each tuple in `others`; return the loaded model."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    path = tmp_path / "model.onnx"
    export(model, inputs, path, **options)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    reloaded = pyburn.onnx.load(str(path), device="cpu")  # and back into pyburn
    model.eval()
    for case in (inputs, *others):
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), case)}
        got = session.run(None, feeds)
        want = _outputs(model, case)
        again = _outputs(reloaded, tuple(pyburn.from_numpy(t.numpy(), device="cpu")
                                         for t in case))
        assert len(got) == len(want) == len(again)
        for g, w, a in zip(got, want, again):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL)
            np.testing.assert_allclose(a, w, rtol=TOL, atol=TOL)
    parity.assert_same(str(path), list(inputs), tmp_path / "generated")
    return proto


def ops(proto: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in proto.graph.node}


def dims(info: onnx.ValueInfoProto) -> list:
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


# ---- the models of the issue ---------------------------------------------------------------------
def test_mnist_mlp_with_a_dynamic_batch(tmp_path):
    pyburn.manual_seed(0)
    model = MnistMLP(device=DEV)
    proto = check(model, pyburn.rand(2, 1, 28, 28, device=DEV), tmp_path,
                  [(pyburn.rand(5, 1, 28, 28, device=DEV),)],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    assert dims(proto.graph.input[0]) == ["batch", 1, 28, 28]
    assert dims(proto.graph.output[0]) == ["batch", 10]
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert "Gemm" in ops(proto)
    assert {i.name for i in proto.graph.initializer} >= {"fc1.weight", "fc1.bias", "fc2.weight"}


@pytest.mark.parametrize("dev", ["flex", "cpu"])
def test_mnist_cnn_with_a_dynamic_batch(tmp_path, dev):
    # flex pools with the composite of slices and a max, cpu with its backend capability
    pyburn.manual_seed(1)
    model = MnistCNN(device=dev)
    with pyburn.no_grad():  # running statistics that are not the initial ones
        for bn in (model.bn1, model.bn2):
            bn.running_mean.copy_(pyburn.randn(bn.num_features, device=dev) * 0.1)
            bn.running_var.copy_(pyburn.rand(bn.num_features, device=dev) + 0.5)
    proto = check(model, pyburn.rand(2, 1, 28, 28, device=dev), tmp_path,
                  [(pyburn.rand(3, 1, 28, 28, device=dev),)],
                  dynamic_axes={"input": {0: "batch"}})
    assert {"Conv", "BatchNormalization", "Gemm"} <= ops(proto)


def test_a_conv_with_its_bias_exports_as_one_conv(tmp_path):
    # cpu adds the bias inside the convolution ("conv_bias"): one recorded conv with three
    # inputs, which is ONNX's Conv with its B input
    pyburn.manual_seed(4)
    model = nn.Conv2d(3, 5, 3, stride=2, padding=1, device=DEV)
    proto = check(model, pyburn.randn(2, 3, 9, 8, device=DEV), tmp_path)
    (node,) = proto.graph.node
    assert node.op_type == "Conv" and len(node.input) == 3
    assert node.input[2] == "bias"


def test_two_layer_lstm_with_dynamic_length_and_batch(tmp_path):
    pyburn.manual_seed(2)
    model = nn.LSTM(5, 7, num_layers=2, device=DEV)
    proto = check(model, pyburn.randn(4, 3, 5, device=DEV), tmp_path,
                  [(pyburn.randn(6, 2, 5, device=DEV),)],
                  dynamic_axes={"input": {0: "seq", 1: "batch"}},
                  output_names=["output", "h_n", "c_n"])
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2
    assert dims(proto.graph.output[0]) == ["seq", "batch", 7]


def test_bidirectional_batch_first_lstm_with_initial_state(tmp_path):
    pyburn.manual_seed(3)
    model = nn.LSTM(5, 6, num_layers=2, batch_first=True, bidirectional=True, device=DEV)
    x, h0, c0 = (pyburn.randn(*s, device=DEV) for s in ((3, 4, 5), (4, 3, 6), (4, 3, 6)))

    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = model

        def forward(self, x, h0, c0):
            return self.lstm(x, (h0, c0))

    others = [tuple(pyburn.randn(*s, device=DEV) for s in ((2, 6, 5), (4, 2, 6), (4, 2, 6)))]
    check(WithState(), (x, h0, c0), tmp_path, others,
          dynamic_axes={"input_0": {0: "batch", 1: "seq"}, "input_1": {1: "batch"},
                        "input_2": {1: "batch"}})


@pytest.mark.parametrize("bidirectional", [False, True])
def test_gru(tmp_path, bidirectional):
    pyburn.manual_seed(4)
    model = nn.GRU(5, 7, num_layers=2, bidirectional=bidirectional, device=DEV)
    proto = check(model, pyburn.randn(4, 3, 5, device=DEV), tmp_path,
                  [(pyburn.randn(4, 6, 5, device=DEV),)], dynamic_axes={"input": {1: "batch"}})
    assert "GRU" in ops(proto)


def test_rnn_relu_unbatched(tmp_path):
    pyburn.manual_seed(5)
    model = nn.RNN(5, 7, nonlinearity="relu", device=DEV)
    proto = check(model, pyburn.randn(4, 5, device=DEV), tmp_path,
                  [(pyburn.randn(9, 5, device=DEV),)], dynamic_axes={"input": {0: "seq"}})
    assert "RNN" in ops(proto)


@pytest.mark.parametrize("axes", [{0: "batch"}, {0: "batch", 1: "seq"}])
def test_transformer_encoder(tmp_path, axes):
    pyburn.manual_seed(6)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True, device=DEV)
    model = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16, device=DEV))
    other = pyburn.randn(3, 7 if 1 in axes else 5, 16, device=DEV)
    proto = check(model, pyburn.randn(2, 5, 16, device=DEV), tmp_path, [(other,)],
                  dynamic_axes={"input": axes})
    assert {"LayerNormalization", "MatMul", "Softmax"} & ops(proto)


class Primitives(nn.Module):
    """Tensor ops in forward: a residual add, reshapes, a softmax, a mean, a slice."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8, device=DEV)
        self.scale = nn.Parameter(pyburn.rand(8, device=DEV))

    def forward(self, x):
        h = (self.fc(x) + x) * self.scale
        b, length, _ = h.shape
        heads = F.softmax(h.reshape(b, length, 2, 4).permute(0, 2, 1, 3), dim=-1)
        pooled = heads.mean(dim=2).reshape(b, -1)
        last = h[:, -1, :].sum(-1, keepdim=True)
        return pooled.exp() - last.tanh() + pyburn.zeros(b, 1, device=DEV), heads.amax(-1)


def test_primitive_ops_in_forward(tmp_path):
    pyburn.manual_seed(7)
    proto = check(Primitives(), pyburn.randn(2, 5, 8, device=DEV), tmp_path,
                  [(pyburn.randn(3, 7, 8, device=DEV),)],
                  dynamic_axes={"input": {0: "batch", 1: "seq"}})
    assert {"Reshape", "Transpose", "ReduceSum", "Exp", "Slice"} <= ops(proto)


def test_static_shapes_without_dynamic_axes(tmp_path):
    pyburn.manual_seed(8)
    proto = check(Primitives(), pyburn.randn(2, 5, 8, device=DEV), tmp_path)
    assert dims(proto.graph.input[0]) == [2, 5, 8]
    assert "Shape" not in ops(proto)  # every size is a constant


# ---- layer exporters -----------------------------------------------------------------------------
def _feature_stack() -> nn.Module:
    model = nn.Sequential(
        nn.Conv1d(3, 8, 3, padding="same", device=DEV), nn.BatchNorm1d(8, device=DEV), nn.GELU(),
        nn.Conv1d(8, 8, 3, stride=2, padding=1, groups=2, bias=False, device=DEV),
        nn.GroupNorm(2, 8, device=DEV), nn.SiLU(), nn.MaxPool1d(2, ceil_mode=True),
        nn.AvgPool1d(2, padding=1, count_include_pad=False),
        nn.ConvTranspose1d(8, 4, 3, stride=2, padding=1, output_padding=1, device=DEV),
        nn.LeakyReLU(0.2), nn.Hardtanh(-0.5, 0.5), nn.Dropout(0.3), nn.AdaptiveAvgPool1d(1),
        nn.Flatten(), nn.LayerNorm(4, device=DEV), nn.Linear(4, 3, device=DEV), nn.ELU(),
        nn.LogSoftmax(-1))
    with pyburn.no_grad():
        model[1].running_mean.copy_(pyburn.randn(8, device=DEV))
        model[1].running_var.copy_(pyburn.rand(8, device=DEV) + 0.5)
    return model


@pytest.mark.parametrize("opset", [13, 17, 20])
def test_layers_at_each_opset(tmp_path, opset):
    pyburn.manual_seed(9)
    proto = check(_feature_stack().train(), pyburn.randn(2, 3, 11, device=DEV), tmp_path,
                  [(pyburn.randn(5, 3, 11, device=DEV),)], dynamic_axes={"input": [0]},
                  opset=opset)
    assert {"Conv", "BatchNormalization", "InstanceNormalization", "MaxPool", "AveragePool",
            "ConvTranspose", "GlobalAveragePool", "Flatten", "Gemm", "LogSoftmax"} <= ops(proto)
    assert ("LayerNormalization" in ops(proto)) == (opset >= 17)  # traced below 17
    assert ("Gelu" in ops(proto)) == (opset >= 20)
    assert "Dropout" not in ops(proto)
    assert proto.opset_import[0].version == opset


def test_export_restores_training_mode(tmp_path):
    model = _feature_stack().train()
    model[2].eval()
    export(model, pyburn.randn(2, 3, 11, device=DEV), tmp_path / "m.onnx")
    assert model.training and not model[2].training and model[1].training


def test_embedding_circular_conv_prelu_adaptive_pool(tmp_path):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6, device=DEV)
            self.conv = nn.Conv2d(1, 2, 3, padding=1, padding_mode="circular", device=DEV)
            self.act = nn.PReLU(2, device=DEV)
            self.pool = nn.AdaptiveAvgPool2d((2, 3))

        def forward(self, ids):
            x = self.act(self.conv(self.emb(ids).unsqueeze(1)))
            return self.pool(x[:, :, :4, :])

    pyburn.manual_seed(10)
    ids = pyburn.tensor([[1, 2, 3, 4, 5], [9, 8, 7, 6, 0]], device=DEV)
    proto = check(Model(), ids, tmp_path, [(pyburn.tensor([[3, 1, 4, 1, 5]], device=DEV),)],
                  dynamic_axes={"input": {0: "batch"}})
    assert {"Gather", "Conv", "PRelu", "AveragePool"} <= ops(proto)


def test_elementwise_and_reduction_primitives(tmp_path):
    class Model(nn.Module):
        def forward(self, x, n):
            y = x.abs().sqrt().rsqrt().log1p().expm1().trunc() + x.exp2().log2()
            z = (x // 0.7) + (x % 0.5) + x.fmod(0.3) + x.clamp(-1, 1).asin() + x.erf()
            k = (n // 3) + (n % 4) + (n * n).fmod(5)
            mask = (x > 0) & ~(x <= -1) | x.isfinite().logical_not()
            return (y * z).cumsum(1), k.sum(0), mask.any(1), mask.all(0), \
                pyburn.where(mask, x, -x).prod(1), x.flip(1), (x.max(1).values - x.min()) / 3

    pyburn.manual_seed(11)
    x = pyburn.randn(3, 4, device=DEV)
    n = pyburn.tensor([[7, -8, 9], [-10, 11, 12]], device=DEV)
    check(Model(), (x, n), tmp_path, [(pyburn.randn(5, 4, device=DEV),
                                       pyburn.tensor([[1, 2, 3], [4, 5, -6]], device=DEV))],
          dynamic_axes={"input_0": {0: "rows"}})


def test_indexing_primitives(tmp_path):
    class Model(nn.Module):
        def forward(self, x, index):
            picked = x.gather(1, index)
            spread = pyburn.zeros(x.shape, device=DEV).scatter_add(1, index, picked)
            rows = x.index_select(0, pyburn.tensor([2, 0], device=DEV))
            padded = F.pad(x, (1, 2), value=-3.5)
            return picked, spread, rows, padded, pyburn.cat([x, x * 2], 1).float()

    x = pyburn.randn(3, 4, device=DEV)
    index = pyburn.tensor([[0, 3], [1, 1], [2, 0]], device=DEV)
    check(Model(), (x, index), tmp_path)


# ---- what cannot be exported ---------------------------------------------------------------------
def test_unsupported_primitive_is_named_and_nothing_is_written(tmp_path):
    class Model(nn.Module):
        def forward(self, x):
            return x.cumprod(1) + (x.int() << 1).float()

    path = tmp_path / "model.onnx"
    with pytest.raises(pyburn.ArgumentError, match=r"binary:left_shift.*scan:prod"):
        export(Model(), pyburn.randn(2, 3, device=DEV), path)
    assert not path.exists()


def test_untraced_values_are_refused(tmp_path):
    class Model(nn.Module):
        def forward(self, x):
            return x * x.argmax(1, keepdim=True).float()

    # caught by comparing traces on flipped inputs: these values' argmaxes differ
    x = pyburn.tensor([[0.0, 5.0, 1.0], [3.0, 2.0, 1.0]], device=DEV)
    with pytest.raises(pyburn.ArgumentError, match="cannot trace"):
        export(Model(), x, tmp_path / "model.onnx")


def test_control_flow_on_a_dynamic_size_is_refused(tmp_path):
    class Model(nn.Module):
        def forward(self, x):
            for _ in range(x.shape[0]):
                x = x * 2.0
            return x

    with pytest.raises(pyburn.ArgumentError, match="control flow"):
        export(Model(), pyburn.randn(2, 3, device=DEV), tmp_path / "m.onnx",
               dynamic_axes={"input": [0]})
    # with the axis static, the unrolled loop is exactly what the model does
    check(Model(), pyburn.randn(2, 3, device=DEV), tmp_path)


def test_data_made_in_forward_that_follows_a_dynamic_axis(tmp_path):
    class Model(nn.Module):
        def forward(self, x):
            return x + pyburn.arange(x.shape[1], device=DEV).float()

    with pytest.raises(pyburn.ArgumentError, match="arange"):
        export(Model(), pyburn.randn(2, 3, device=DEV), tmp_path / "m.onnx",
               dynamic_axes={"input": {1: "n"}})
    check(Model(), pyburn.randn(2, 3, device=DEV), tmp_path, [(pyburn.randn(4, 3, device=DEV),)],
          dynamic_axes={"input": {0: "batch"}})


@pytest.mark.parametrize("options, message", [
    ({"opset": 12}, "opset"),
    ({"input_names": ["a", "b"]}, "input_names"),
    ({"output_names": ["input"]}, "both an input and an output"),
    ({"dynamic_axes": {"nope": [0]}}, "neither an input"),
    ({"dynamic_axes": {"input": [5]}}, "out of range"),
])
def test_bad_arguments(tmp_path, options, message):
    with pytest.raises(pyburn.ArgumentError, match=message):
        export(nn.ReLU(), pyburn.randn(2, 3, device=DEV), tmp_path / "m.onnx", **options)


def test_the_tracer_is_removed_after_a_failed_export(tmp_path):
    import pyburn._tensor as tensor_layer
    import pyburn.nn.module as module_layer

    with pytest.raises(pyburn.ArgumentError):
        export(nn.ReLU(), pyburn.randn(2, 3, device=DEV), tmp_path / "m.onnx",
               output_names=["a", "b"])
    assert tensor_layer._tracer is None and module_layer._tracer is None
    assert math.isclose(nn.ReLU()(pyburn.tensor([2.0], device=DEV)).item(), 2.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3), (4,)])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_loss_in_forward_exports(tmp_path, reduction, shape, weighted):
    # the cpu backend computes cross_entropy's negative log-likelihood as one op
    class Model(nn.Module):
        def forward(self, x, t):
            w = pyburn.tensor([0.5, 1.0, 2.0, 1.5], device=DEV) if weighted else None
            return F.cross_entropy(x, t, w, ignore_index=2, reduction=reduction)

    pyburn.manual_seed(6)
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else shape[:1] + shape[2:]
    target = pyburn.randint(0, classes, target_shape, device=DEV)
    proto = check(Model(), (pyburn.randn(*shape, device=DEV), target), tmp_path)
    assert "NegativeLogLikelihoodLoss" in ops(proto)


class FunctionalLinear(nn.Module):
    """F.linear in forward (one "linear" op on cpu, not a layer the exporter knows), with a
    parameter weight, a weight computed from the input and an optional bias."""

    def __init__(self, bias: bool):
        super().__init__()
        self.w = nn.Parameter(pyburn.randn(3, 4, device=DEV))
        self.b = nn.Parameter(pyburn.randn(3, device=DEV)) if bias else None

    def forward(self, x):
        return F.linear(x, self.w, self.b), F.linear(x, self.w * x.mean(), self.b)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape, want", [((2, 4), "Gemm"), ((2, 5, 4), "MatMul"),
                                         ((4,), "MatMul")])
def test_functional_linear_exports(tmp_path, bias, shape, want):
    # a matrix of rows is one Gemm (transB=1), anything else MatMul by the transposed weight
    pyburn.manual_seed(12)
    others = [] if len(shape) == 1 else [(pyburn.randn(7, *shape[1:], device=DEV),)]
    proto = check(FunctionalLinear(bias), pyburn.randn(*shape, device=DEV), tmp_path, others,
                  dynamic_axes={} if len(shape) == 1 else {"input": {0: "batch"}})
    assert want in ops(proto) and ("Gemm" in ops(proto)) == (len(shape) == 2)
    if want == "MatMul":  # the parameter is stored transposed, the computed weight is not
        assert "w_t" in {i.name for i in proto.graph.initializer}
        assert "Transpose" in ops(proto)


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("affine", [(True, True), (False, False), (False, True)])
def test_functional_layer_norm_exports(tmp_path, opset, affine):
    # F.layer_norm is one "layer_norm" op on cpu: LayerNormalization from opset 17 where it
    # has a weight, the composite's operators otherwise
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(pyburn.rand(3, 4, device=DEV) + 0.5) if affine[0] else None
            self.b = nn.Parameter(pyburn.randn(3, 4, device=DEV)) if affine[1] else None

        def forward(self, x):
            return F.layer_norm(x * 3.0, (3, 4), self.w, self.b, eps=1e-3)

    pyburn.manual_seed(13)
    proto = check(Model(), pyburn.randn(2, 3, 4, device=DEV), tmp_path,
                  [(pyburn.randn(5, 3, 4, device=DEV),)], dynamic_axes={"input": [0]},
                  opset=opset)
    assert ("LayerNormalization" in ops(proto)) == (opset >= 17 and affine[0])


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("affine", [(True, True), (False, False), (False, True)])
def test_functional_batch_norm_with_batch_statistics_exports(tmp_path, opset, shape, affine):
    # F.batch_norm with batch statistics is one "batch_norm" op on cpu: the composite's
    # operators over every dim but the channels (an nn.BatchNorm in eval mode exports as
    # BatchNormalization with its running statistics instead)
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(pyburn.rand(3, device=DEV) + 0.5) if affine[0] else None
            self.b = nn.Parameter(pyburn.randn(3, device=DEV)) if affine[1] else None

        def forward(self, x):
            return F.batch_norm(x * 3.0, None, None, self.w, self.b, training=True, eps=1e-3)

    pyburn.manual_seed(14)
    proto = check(Model(), pyburn.randn(*shape, device=DEV), tmp_path,
                  [(pyburn.randn(7, *shape[1:], device=DEV),)], dynamic_axes={"input": [0]},
                  opset=opset)
    assert "ReduceMean" in ops(proto) and "BatchNormalization" not in ops(proto)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("affine", [(True, True), (False, False), (True, False)])
def test_functional_batch_norm_in_evaluation_exports(tmp_path, shape, affine):
    # F.batch_norm with given statistics is one "batch_norm_eval" op on cpu: the composite's
    # per-channel scale and shift, then x * scale + shift
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(pyburn.rand(3, device=DEV) + 0.5) if affine[0] else None
            self.b = nn.Parameter(pyburn.randn(3, device=DEV)) if affine[1] else None
            self.register_buffer("mean", pyburn.randn(3, device=DEV))
            self.register_buffer("var", pyburn.rand(3, device=DEV) + 0.5)

        def forward(self, x):
            return F.batch_norm(x * 3.0, self.mean, self.var, self.w, self.b, eps=1e-3)

    pyburn.manual_seed(15)
    proto = check(Model(), pyburn.randn(*shape, device=DEV), tmp_path,
                  [(pyburn.randn(7, *shape[1:], device=DEV),)], dynamic_axes={"input": [0]})
    assert "Reciprocal" in ops(proto) and "BatchNormalization" not in ops(proto)


@pytest.mark.skipif(pyburn.backends.wgpu.unavailable_reason() is not None, reason="no wgpu")
def test_fused_wgpu_softmax_and_layer_norm_export(tmp_path):
    # on wgpu F.layer_norm and F.log_softmax run as fused kernels, traced as such
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(pyburn.randn(8, device="wgpu"))

        def forward(self, x):
            return F.log_softmax(F.layer_norm(x, (8,), self.w), dim=-1)

    pyburn.manual_seed(4)
    proto = check(Model(), pyburn.randn(3, 8, device="wgpu"), tmp_path)
    assert ops(proto) == {"LayerNormalization", "LogSoftmax"}


@pytest.mark.skipif(pyburn.backends.wgpu.unavailable_reason() is not None, reason="no wgpu")
def test_wgpu_avg_pool_export(tmp_path):
    # on wgpu average pooling (sliding or adaptive) is one kernel, traced as one "avg_pool"
    # op: exported as a MatMul by each pooled dim's averaging matrix
    class Model(nn.Module):
        def forward(self, x):
            y = F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, divisor_override=4)
            return F.adaptive_avg_pool2d(y, (2, 3)) + F.avg_pool2d(
                x, 2, padding=1, count_include_pad=False)[..., :2, :3]

    pyburn.manual_seed(5)
    proto = check(Model(), pyburn.randn(2, 3, 7, 8, device="wgpu"), tmp_path,
                  others=[(pyburn.randn(4, 3, 7, 8, device="wgpu"),)],
                  dynamic_axes={"input": [0]})
    assert "MatMul" in ops(proto) and "AveragePool" not in ops(proto)
