"""Inference rules of the neural-network operators: products (MatMul, Gemm, pyburn.Linear,
Einsum), sliding windows (Conv, ConvTranspose, pools), normalisations with extra outputs,
recurrent layers, attention, losses, quantisation and signal processing."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import ir
from .core import (
    Context,
    Dim,
    Ins,
    Known,
    Shape,
    add_dims,
    arg,
    axis_of,
    broadcast,
    broadcast_dim,
    dtype_attr,
    given,
    ints_at,
    quotient,
    rule,
)


def matmul_shape(a: Shape | None, b: Shape | None) -> Shape | None:
    """numpy.matmul's result shape (1-d operands gain and then lose a dim)."""
    if a is None or b is None or not a or not b:
        return None
    left = (1,) + a if len(a) == 1 else a
    right = b + (1,) if len(b) == 1 else b
    batch = broadcast(left[:-2], right[:-2])
    if batch is None:
        return None
    return batch + left[-2:-1] * (len(a) > 1) + right[-1:] * (len(b) > 1)


@rule("MatMul", "MatMulInteger", "Linear")
def matmul(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """MatMul (MatMulInteger: int32; pyburn.Linear: x @ W + b)."""
    a, b = ins[0] or Known(), given(ins, 1)
    dtype = "int32" if node.op_type == "MatMulInteger" else a.dtype or b.dtype
    return Known(dtype, matmul_shape(a.shape, b.shape))


@rule("QLinearMatMul")
def qlinear_matmul(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """QLinearMatMul(a, a_scale, a_zero, b, ...): the product's shape, the output zero
    point's dtype."""
    return Known(given(ins, 7).dtype, matmul_shape(given(ins, 0).shape, given(ins, 3).shape))


@rule("Gemm")
def gemm(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Gemm: (M, N) from A (M, K) and B (K, N), either maybe transposed."""
    a, b = ins[0] or Known(), given(ins, 1)
    m = n = None
    if a.shape is not None and len(a.shape) == 2:
        m = a.shape[1] if node.attrs.get("transA", 0) else a.shape[0]
    if b.shape is not None and len(b.shape) == 2:
        n = b.shape[0] if node.attrs.get("transB", 0) else b.shape[1]
    return Known(a.dtype or b.dtype, (m, n))


@rule("Einsum")
def einsum(node: ir.Node, ins: Ins, ctx: Context) -> Known | None:
    """Einsum: each output letter takes its dim from the operands; "..." broadcasts."""
    equation = str(node.attrs["equation"]).replace(" ", "")
    terms, arrow, result = equation.partition("->")
    operands = terms.split(",")
    letters: dict[str, Dim] = {}
    ellipses: list[Shape] = []
    args = [k or Known() for k in ins]
    if len(operands) != len(args):
        return None
    for term, k in zip(operands, args):
        if k.shape is None:
            return Known(args[0].dtype)
        head, dots, tail = term.partition("...")
        middle = len(k.shape) - len(head) - len(tail)
        if middle < 0 or (middle and not dots):
            return Known(args[0].dtype)
        ellipses.append(k.shape[len(head):len(head) + middle])
        for letter, d in zip(head + tail, k.shape[:len(head)] + k.shape[len(head) + middle:]):
            letters[letter] = broadcast_dim(letters.get(letter, 1), d)
    if not arrow:
        counts = {c: terms.count(c) for c in terms if c.isalpha()}
        result = ("..." if "..." in terms else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1))
    head, dots, tail = result.partition("...")
    middle = broadcast(*ellipses) if dots else ()
    if middle is None:
        return Known(args[0].dtype)
    return Known(args[0].dtype, tuple(letters.get(c) for c in head) + middle +
                 tuple(letters.get(c) for c in tail))


def _window(node: ir.Node, x: Shape, kernel: Sequence[Dim], ceil_mode: bool = False
            ) -> list[Dim]:
    """Output sizes of a sliding window over x's spatial dims (pads, strides, dilations,
    auto_pad and ceil_mode as ONNX defines them)."""
    n = len(kernel)
    strides = node.attrs.get("strides") or [1] * n
    dilations = node.attrs.get("dilations") or [1] * n
    auto = node.attrs.get("auto_pad", "NOTSET")
    pads = node.attrs.get("pads") if auto == "NOTSET" else None
    pads = pads or [0] * (2 * n)
    out: list[Dim] = []
    for i, (d, k) in enumerate(zip(x[2:], kernel)):
        s = strides[i]
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-d // s) if isinstance(d, int) else d if s == 1 else None)
            continue
        if not isinstance(k, int):
            out.append(None)
            continue
        span = (k - 1) * dilations[i] + 1
        pad = pads[i] + pads[i + n]
        if not isinstance(d, int):
            out.append(d if s == 1 and pad == span - 1 else None)
            continue
        if ceil_mode:
            size = -(-(d + pad - span) // s) + 1
            if (size - 1) * s >= d + pads[i]:
                size -= 1  # the last window would start in the end padding
        else:
            size = (d + pad - span) // s + 1
        out.append(size)
    return out


def _kernel(node: ir.Node, w: Known, rank: int) -> list[Dim]:
    if "kernel_shape" in node.attrs:
        return list(node.attrs["kernel_shape"])
    if w.shape is not None and len(w.shape) == rank:
        return list(w.shape[2:])
    return [None] * (rank - 2)


@rule("Conv", "ConvInteger", "QLinearConv", "DeformConv")
def conv(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Convolution: (N, M, *window sizes), M the weight's first dim."""
    x, w = (given(ins, 0), given(ins, 3)) if node.op_type == "QLinearConv" else \
        (given(ins, 0), given(ins, 1))
    dtype = {"ConvInteger": "int32", "QLinearConv": given(ins, 7).dtype}.get(
        node.op_type, x.dtype)
    if x.shape is None:
        return Known(dtype)
    channels = w.shape[0] if w.shape is not None and w.shape else None
    spatial = _window(node, x.shape, _kernel(node, w, len(x.shape)))
    return Known(dtype, (x.shape[0], channels, *spatial))


@rule("ConvTranspose")
def conv_transpose(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Transposed convolution: `output_shape` when given, else
    stride·(d - 1) + output_padding + dilated kernel - pads (d·stride with auto_pad SAME)."""
    x, w = ins[0] or Known(), given(ins, 1)
    if x.shape is None:
        return Known(x.dtype)
    rank = len(x.shape)
    n = rank - 2
    group = node.attrs.get("group", 1)
    channels = w.shape[1] * group if w.shape is not None and len(w.shape) == rank and \
        isinstance(w.shape[1], int) else None
    if node.attrs.get("output_shape"):
        return Known(x.dtype, (x.shape[0], channels, *list(node.attrs["output_shape"])[-n:]))
    kernel = _kernel(node, w, rank)
    strides = node.attrs.get("strides") or [1] * n
    dilations = node.attrs.get("dilations") or [1] * n
    extra = node.attrs.get("output_padding") or [0] * n
    auto = node.attrs.get("auto_pad", "NOTSET")
    pads = (node.attrs.get("pads") if auto == "NOTSET" else None) or [0] * (2 * n)
    spatial: list[Dim] = []
    for i, (d, k) in enumerate(zip(x.shape[2:], kernel)):
        if not isinstance(d, int) or not isinstance(k, int):
            spatial.append(None)
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            spatial.append(d * strides[i])
        else:
            spatial.append(strides[i] * (d - 1) + extra[i] + (k - 1) * dilations[i] + 1
                           - pads[i] - pads[i + n])
    return Known(x.dtype, (x.shape[0], channels, *spatial))


@rule("MaxPool", "AveragePool", "LpPool")
def pool(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Pooling: (N, C, *window sizes) (MaxPool's indices alike, int64)."""
    x = ins[0] or Known()
    if x.shape is None:
        return [Known(x.dtype), Known("int64")]
    kernel = list(node.attrs["kernel_shape"])
    shape = (*x.shape[:2], *_window(node, x.shape, kernel, bool(node.attrs.get("ceil_mode"))))
    return [Known(x.dtype, shape), Known("int64", shape)]


@rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Global pooling: spatial dims become 1."""
    x = ins[0] or Known()
    return Known(x.dtype, None if x.shape is None else x.shape[:2] + (1,) * (len(x.shape) - 2))


@rule("MaxUnpool")
def max_unpool(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """MaxUnpool: `output_shape` when given, else the pooling's input size."""
    x, target = ins[0] or Known(), given(ins, 2)
    if target.value is not None:
        return Known(x.dtype, tuple(target.value))
    if x.shape is None or arg(ins, 2) is not None:
        return Known(x.dtype, None if x.shape is None else (None,) * len(x.shape))
    kernel = node.attrs["kernel_shape"]
    n = len(kernel)
    strides = node.attrs.get("strides") or [1] * n
    pads = node.attrs.get("pads") or [0] * (2 * n)
    spatial = [(d - 1) * s + k - pads[i] - pads[i + n] if isinstance(d, int) else None
               for i, (d, k, s) in enumerate(zip(x.shape[2:], kernel, strides))]
    return Known(x.dtype, (*x.shape[:2], *spatial))


@rule("Col2Im")
def col2im(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Col2Im: (N, C / prod(block), *image_shape)."""
    x, image, block = ins[0] or Known(), given(ins, 1), given(ins, 2)
    if x.shape is None or image.value is None or block.ints() is None:
        return Known(x.dtype)
    channels = quotient((x.shape[1],), [math.prod(block.ints() or [])])
    return Known(x.dtype, (x.shape[0], channels, *image.value))


@rule("RoiAlign")
def roi_align(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """RoiAlign: (rois, C, output_height, output_width)."""
    x, rois = ins[0] or Known(), given(ins, 1)
    count = rois.shape[0] if rois.shape else None
    channels = x.shape[1] if x.shape is not None and len(x.shape) > 1 else None
    return Known(x.dtype, (count, channels, node.attrs.get("output_height", 1),
                           node.attrs.get("output_width", 1)))


@rule("GridSample")
def grid_sample(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """GridSample: (N, C, *the grid's spatial dims)."""
    x, grid = ins[0] or Known(), given(ins, 1)
    if x.shape is None or grid.shape is None:
        return Known(x.dtype)
    return Known(x.dtype, (x.shape[0], x.shape[1], *grid.shape[1:-1]))


@rule("AffineGrid")
def affine_grid(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """AffineGrid: (N, *spatial size, spatial rank) from theta and size (N, C, ...)."""
    theta, size = ins[0] or Known(), given(ins, 1)
    if size.value is None:
        return Known(theta.dtype)
    n, _, *spatial = size.value
    return Known(theta.dtype, (n, *spatial, len(spatial)))


@rule("BatchNormalization")
def batch_norm(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """BatchNormalization: like the input; the statistics outputs (training) like the
    running mean and variance."""
    x, mean, var = ins[0] or Known(), given(ins, 3), given(ins, 4)
    return [Known(x.dtype, x.shape), mean, var, mean, var]


@rule("LayerNormalization")
def layer_norm(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """LayerNormalization: like the input; Mean and InvStdDev keep the dims before `axis`
    (1 after), in the `stash_type` dtype."""
    x = ins[0] or Known()
    stash = dtype_attr(node, "stash_type", "float32")
    if x.shape is None:
        return [Known(x.dtype), Known(stash), Known(stash)]
    axis = axis_of(node.attrs.get("axis", -1), len(x.shape))
    stats = Known(stash, x.shape[:axis] + (1,) * (len(x.shape) - axis))
    return [Known(x.dtype, x.shape), stats, stats]


@rule("Dropout")
def dropout(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Dropout: like the input, and a bool mask of its shape."""
    x = ins[0] or Known()
    return [Known(x.dtype, x.shape, x.value), Known("bool", x.shape)]


@rule("LSTM", "GRU", "RNN")
def recurrent(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Recurrent layers: Y (seq, directions, batch, hidden) and the last states
    (directions, batch, hidden); batch first with layout=1."""
    x, r = ins[0] or Known(), given(ins, 2)
    hidden = node.attrs.get("hidden_size")
    if hidden is None and r.shape is not None and len(r.shape) == 3:
        hidden = r.shape[2]
    directions = 2 if node.attrs.get("direction", "forward") == "bidirectional" else 1
    seq = batch = None
    if x.shape is not None and len(x.shape) == 3:
        seq, batch = x.shape[:2]
    if node.attrs.get("layout", 0):
        seq, batch = batch, seq
        y, state = (batch, seq, directions, hidden), (batch, directions, hidden)
    else:
        y, state = (seq, directions, batch, hidden), (directions, batch, hidden)
    return [Known(x.dtype, y), Known(x.dtype, state), Known(x.dtype, state)]


@rule("Attention")
def attention(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Attention: Y, present key and value (the past prepended), and Q·Kᵀ; for 4-d
    (B, H, S, d) or 3-d (B, S, H·d) inputs."""
    q, k, v, past = (given(ins, i) for i in (0, 1, 2, 4))
    dtype = q.dtype
    if q.shape is None or k.shape is None or v.shape is None:
        return [Known(dtype)] * 4
    if len(q.shape) == 4:
        batch, heads, q_len, _ = q.shape
        kv_heads, kv_len, d_k, d_v = k.shape[1], k.shape[2], k.shape[3], v.shape[3]
        y: Shape = (batch, heads, q_len, d_v)
    else:
        heads, kv_heads = node.attrs["q_num_heads"], node.attrs["kv_num_heads"]
        batch, q_len, kv_len = q.shape[0], q.shape[1], k.shape[1]
        d_k, d_v = quotient((k.shape[2],), [kv_heads]), quotient((v.shape[2],), [kv_heads])
        y = (batch, q_len, None if d_v is None else _product(heads, d_v))
    past_len: Dim = 0
    if arg(ins, 4) is not None:
        past_len = past.shape[2] if past.shape is not None and len(past.shape) == 4 else None
    total = add_dims(past_len, kv_len)
    return [Known(dtype, y), Known(dtype, (batch, kv_heads, total, d_k)),
            Known(dtype, (batch, kv_heads, total, d_v)),
            Known(dtype, (batch, heads, q_len, total))]


@rule("LinearAttention")
def linear_attention(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """LinearAttention on packed (B, T, H·d) inputs: the output (B, T, H_q·d_v) and the
    state (B, H_kv, d_k, d_v)."""
    q, k, v, past = (given(ins, i) for i in range(4))
    heads, kv_heads = node.attrs["q_num_heads"], node.attrs["kv_num_heads"]
    if q.shape is None or k.shape is None or v.shape is None:
        return [Known(q.dtype), Known(past.dtype or q.dtype)]
    d_k, d_v = quotient((k.shape[2],), [kv_heads]), quotient((v.shape[2],), [kv_heads])
    return [Known(q.dtype, (*q.shape[:2], None if d_v is None else _product(heads, d_v))),
            Known(past.dtype or q.dtype, (q.shape[0], kv_heads, d_k, d_v))]


@rule("CausalConvWithState")
def causal_conv(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """CausalConvWithState: like the input (B, C, L), and the state (B, C, k - 1)."""
    x, w = ins[0] or Known(), given(ins, 1)
    k = w.shape[2] if w.shape is not None and len(w.shape) == 3 else None
    state = None if x.shape is None or len(x.shape) != 3 else \
        (*x.shape[:2], k - 1 if isinstance(k, int) else None)
    return [Known(x.dtype, x.shape), Known(x.dtype, state)]


def _product(a: int, b: Dim) -> Dim:
    return a * b if isinstance(b, int) else b if a == 1 else None


@rule("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")
def loss(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Losses: a scalar (per-element with reduction "none": the target's shape); the
    log-probabilities output like the scores."""
    scores, target = ins[0] or Known(), given(ins, 1)
    shape = target.shape if node.attrs.get("reduction", "mean") == "none" else ()
    return [Known(scores.dtype, shape), Known(scores.dtype, scores.shape)]


@rule("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
def quantize(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Quantisation: the input's shape; the zero point's dtype (else output_dtype, else
    uint8) when quantising, the scale's when dequantising."""
    x = ins[0] or Known()
    if node.op_type == "DynamicQuantizeLinear":
        return [Known("uint8", x.shape), Known("float32", ()), Known("uint8", ())]
    if node.op_type == "DequantizeLinear":
        return [Known(dtype_attr(node, "output_dtype", None) or given(ins, 1).dtype, x.shape)]
    zero = arg(ins, 2)
    dtype = zero.dtype if zero is not None else dtype_attr(node, "output_dtype", "uint8")
    return [Known(dtype, x.shape)]


@rule("Det")
def det(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Det: the batch dims."""
    x = ins[0] or Known()
    return Known(x.dtype, None if x.shape is None else x.shape[:-2])


@rule("HannWindow", "HammingWindow", "BlackmanWindow")
def window(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Window functions: (size,) of `output_datatype` (float32 by default)."""
    size = given(ins, 0).ints()
    return Known(dtype_attr(node, "output_datatype", "float32"),
                 (size[0] if size and len(size) == 1 else None,))


@rule("MelWeightMatrix")
def mel_weight_matrix(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """MelWeightMatrix: (dft_length // 2 + 1, num_mel_bins)."""
    bins, length = given(ins, 0).ints(), given(ins, 1).ints()
    return Known(dtype_attr(node, "output_datatype", "float32"),
                 (length[0] // 2 + 1 if length else None, bins[0] if bins else None))


@rule("DFT")
def dft(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """DFT: the transformed axis becomes dft_length (halved plus one when onesided), the
    last dim 2 (real, imaginary); an inverse onesided DFT gives 2·(n - 1) real values."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known(x.dtype)
    rank = len(x.shape)
    axes = ints_at(node, ins, "axis", 2) if ctx.opset >= 20 else [node.attrs.get("axis", 1)]
    if axes is None and arg(ins, 2) is None:
        axes = [-2]
    length = given(ins, 1).ints() if arg(ins, 1) is not None else None
    if axes is None or (arg(ins, 1) is not None and length is None):
        return Known(x.dtype, (None,) * rank)
    axis = axis_of(axes[0], rank)
    n: Dim = length[0] if length else x.shape[axis]
    last = 2
    if node.attrs.get("onesided", 0) and node.attrs.get("inverse", 0):
        n = n if length else 2 * (n - 1) if isinstance(n, int) else None
        last = 1
    elif node.attrs.get("onesided", 0):
        n = n // 2 + 1 if isinstance(n, int) else None
    return Known(x.dtype, (*x.shape[:axis], n, *x.shape[axis + 1:-1], last))


@rule("STFT")
def stft(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """STFT: (batch, frames, bins, 2), bins halved plus one when onesided."""
    signal, step, win, length = (given(ins, i) for i in range(4))
    steps, lengths = step.ints(), length.ints()
    frame: Dim = lengths[0] if lengths else win.shape[0] if win.shape else None
    if signal.shape is None or len(signal.shape) != 3:
        return Known(signal.dtype, (None,) * 4)
    batch, total = signal.shape[:2]
    frames = (total - frame) // steps[0] + 1 if isinstance(total, int) and \
        isinstance(frame, int) and steps else None
    bins = frame // 2 + 1 if isinstance(frame, int) and node.attrs.get("onesided", 1) \
        else frame
    return Known(signal.dtype, (batch, frames, bins, 2))


@rule("RandomNormal", "RandomUniform")
def random(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Random tensors: `shape` of `dtype` (float32 by default)."""
    return Known(dtype_attr(node, "dtype", "float32"), tuple(node.attrs["shape"]))


@rule("Multinomial")
def multinomial(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Multinomial: (batch, sample_size) of `dtype` (int32 by default)."""
    x = ins[0] or Known()
    batch = x.shape[0] if x.shape else None
    return Known(dtype_attr(node, "dtype", "int32"), (batch, node.attrs.get("sample_size", 1)))


@rule("NonMaxSuppression")
def non_max_suppression(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """NonMaxSuppression: (selected, 3) int64 triples."""
    return Known("int64", (None, 3))
