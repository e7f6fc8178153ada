"""Why the node-suite cases that do not pass do not pass: the tables `test_node_suite` and
`test_node_suite_generated` hold pyburn to, and docs/onnx.md reports."""

from __future__ import annotations

import re

BOTH = ("cpu", "wgpu")
WGPU = ("wgpu",)

#: (case name regex, devices, regex the message must match, why)
Known = list[tuple[str, tuple[str, ...], str, str]]

#: the runner's failures against the stored outputs
KNOWN_FAILURES: Known = [
    (r"test_bernoulli.*|test_training_dropout(_default)?(_mask)?", BOTH, r"values differ",
     "random draws: the stored outputs come from numpy's generator, pyburn draws from its own "
     "Philox generator (tests/pyburn_onnx/ops check the distributions instead)"),
    (r"test_equal_string.*", BOTH, r"strings", "string tensors: pyburn tensors hold numbers"),
    (r"test_dft_inverse(_opset19)?", BOTH, r"max abs error 1\.9\de-06",
     "float32 rounding: the exact result is 0 where pyburn's float32 DFT leaves 1.9e-6, above "
     "the suite's atol of 1e-7 (numpy computed the reference in float64)"),
    (r".*", WGPU, r"float64",
     "float64: WGSL has no 64-bit floats, so the wgpu device refuses float64 tensors"),
]

#: where the code `pyburn onnx convert` writes does not give the runner's results (none now:
#: a difference found is fixed, or listed here with its reason)
GENERATED_DIFFERENCES: Known = []


def expected(table: Known, case: str, device: str, message: str) -> str | None:
    """Why `table` expects `case` to go wrong on `device` with `message`, or None."""
    for pattern, devices, symptom, reason in table:
        if device in devices and re.fullmatch(pattern, case) and re.search(symptom, message):
            return reason
    return None


def listed(table: Known, case: str, device: str) -> list[str]:
    """The reasons `table` gives for `case` on `device` by its name (catch-alls aside): a
    case that goes right while listed fails its test, so that the table stays true."""
    return [reason for pattern, devices, _, reason in table
            if device in devices and pattern != ".*" and re.fullmatch(pattern, case)]


#: operators pyburn does not implement, and why
UNSUPPORTED_OPERATORS: dict[str, str] = {
    "ImageDecoder": "decoding JPEG/PNG/... needs image codecs, outside a tensor library",
    "StringConcat": "string tensors: pyburn tensors hold numbers only",
    "StringNormalizer": "string tensors: pyburn tensors hold numbers only",
    "StringSplit": "string tensors: pyburn tensors hold numbers only",
    "RegexFullMatch": "string tensors: pyburn tensors hold numbers only",
    "TfIdfVectorizer": "string/n-gram featurizer of the classical-ML profile",
    "BitCast": "reinterprets bits across types pyburn holds in wider dtypes (int8 as int32, "
               "bfloat16 as float32), so the bit patterns are not there to reinterpret",
    "ai.onnx.preview.FlexAttention": "preview-domain operator (score and mask subgraphs); "
                                     "the standard Attention operator is supported",
    "ai.onnx.ml.LabelEncoder": "ai.onnx.ml (classical machine learning) domain",
    "ai.onnx.ml.TreeEnsemble": "ai.onnx.ml (classical machine learning) domain",
    "ai.onnx.ml.Binarizer": "ai.onnx.ml (classical machine learning) domain",
    "ai.onnx.ml.ArrayFeatureExtractor": "ai.onnx.ml (classical machine learning) domain",
    "ai.onnx.preview.training.Adam": "training-preview domain: pyburn.optim trains models",
    "ai.onnx.preview.training.Adagrad": "training-preview domain: pyburn.optim trains models",
    "ai.onnx.preview.training.Momentum": "training-preview domain: pyburn.optim trains models",
}

#: the operators burn-onnx lists as supported (../shared/reference/burn-inventory.md: its
#: Conv1d/2d/3d-style rows folded into the ONNX operator names): the issue's yardstick
BURN_SUPPORTED = frozenset("""
Abs Acos Acosh Add And ArgMax ArgMin Asin Asinh Atan Atanh Attention AveragePool
BatchNormalization Bernoulli BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor Cast Ceil Celu
Clip Col2Im Concat Constant ConstantOfShape Conv ConvTranspose Cos Cosh CumSum DeformConv
DepthToSpace Div Dropout Elu Equal Erf Exp Expand EyeLike Flatten Floor Gather GatherElements
GatherND Gelu Gemm GlobalAveragePool Greater GreaterOrEqual GridSample GroupNormalization GRU
Hardmax HardSigmoid HardSwish Identity If InstanceNormalization IsInf IsNaN LayerNormalization
LeakyRelu Less LessOrEqual Log LogSoftmax Loop LSTM MatMul MatMulInteger Max MaxPool Mean Min
Mish Mod Mul Neg NonZero Not OneHot Or Pad Pow PRelu RNN RandomNormal RandomNormalLike
RandomUniform RandomUniformLike Range Reciprocal ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp
ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize Round
Scan ScatterElements ScatterND Selu Shape Sigmoid Sign Sin Sinh Size Slice Softmax Softplus
Softsign SpaceToDepth Split Sqrt Squeeze Sub Sum Swish Tan Tanh ThresholdedRelu Tile TopK
Transpose Trilu Unsqueeze Where Xor""".split())
