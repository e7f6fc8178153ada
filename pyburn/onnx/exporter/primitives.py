"""How each primitive of the tensor layer is written in ONNX.

A traced "op" event carries the primitive's autodiff rule name (``binary:add``,
``reshape``, ``reduce:sum``, ...) and the arguments it saved; `EMITTERS` maps each name to
a function ``(builder, event, outputs)`` that writes its nodes. Elementwise ops come from
two small tables (one ONNX operator each) plus a few compositions for ops ONNX lacks.
Composites (softmax, layer_norm, gelu, ...) need nothing here: they reach the tracer as the
primitives they are made of.
"""

from __future__ import annotations

import ast
import functools
import math
import struct
from collections.abc import Callable

from ...ops import elementwise
from ...ops.reducers import REDUCTIONS
from .builder import INT64_MAX, INT64_MIN, Builder, onnx_dtype
from .dims import Dim
from .registry import Unsupported
from .trace import Event, key_of

Emit = Callable[[Builder, Event, list[str]], None]

EMITTERS: dict[str, Emit] = {}


def _emitter(*names: str) -> Callable[[Emit], Emit]:
    def register(fn: Emit) -> Emit:
        for name in names:
            EMITTERS[name] = fn
        return fn
    return register


def _dims(b: Builder, ref: int) -> tuple[Dim, ...]:
    return b.trace.values[ref].dims


# ---- elementwise -------------------------------------------------------------------------------
#: the opset each operator an elementwise form may use first appears in, where it is later than
#: the exporter's baseline
_SINCE = {"BitwiseNot": 18, "BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18}


@functools.cache
def _form(text: str, arity: int) -> ast.expr:
    """An op table's ONNX form as a call tree; a bare operator name applies it to the
    operands."""
    if text.isidentifier():
        text = f"{text}(x)" if arity == 1 else f"{text}(a, b)"
    return ast.parse(text, mode="eval").body


def _build(b: Builder, node: ast.expr, operands: dict[str, str], dtype: str,
           out: str | None = None) -> str:
    """The ONNX value of one node of a form: an operand, a number in `dtype`, or an operator
    applied to its arguments (keywords are its attributes), into `out` at the root."""
    if isinstance(node, ast.Name):
        return operands[node.id]
    if isinstance(node, (ast.Constant, ast.UnaryOp)):
        return b.number(ast.literal_eval(node), dtype)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), ast.dump(node)
    operator = node.func.id
    if operator in _SINCE:
        b.require(_SINCE[operator], operator)
    inputs = [_build(b, arg, operands, dtype) for arg in node.args]
    attributes = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    return b.node(operator, inputs, out, **attributes)


def _elementwise(b: Builder, ev: Event, outs: list[str]) -> None:
    kind, name = ev.name.split(":", 1)
    op = (elementwise.UNARY if kind == "unary" else elementwise.BINARY)[name]
    source = b.trace.values[ev.inputs[0]].dtype
    text = op.onnx if source.is_floating_point or op.onnx_int is None else op.onnx_int
    if op.arity == 1:
        operands = {"x": b.value(ev.inputs[0])}
    else:
        operands = dict(zip("ab", b.broadcast_inputs(ev)))
    _build(b, _form(text, op.arity), operands, source.name, outs[0])


@_emitter("where")
def _where(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Where", b.broadcast_inputs(ev), outs[0])


@_emitter("cast")
def _cast(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Cast", [b.value(ev.inputs[0])], outs[0],
           to=onnx_dtype(b.trace.values[ev.outputs[0]].dtype))


# ---- movement ----------------------------------------------------------------------------------
@_emitter("reshape")
def _reshape(b: Builder, ev: Event, outs: list[str]) -> None:
    source, target = _dims(b, ev.inputs[0]), _dims(b, ev.outputs[0])
    x = b.value(ev.inputs[0])
    if any(d == Dim(0) for d in target):  # a literal 0 needs allowzero, and no copies
        b.require(14, "a reshape to an empty shape")
        b.node("Reshape", [x, b.shape(target)], outs[0], allowzero=1)
        return
    # 0 copies the input's size at that position, one -1 is inferred: most dynamic sizes
    # need no run-time arithmetic
    entries: list[int | None] = []
    for j, d in enumerate(target):
        if d.is_static:
            entries.append(d.const)
        elif j < len(source) and source[j] == d:
            entries.append(0)
        else:
            entries.append(None)
    if entries.count(None) <= 1:
        shape = b.ints([-1 if e is None else e for e in entries], "shape")
    else:
        shape = b.shape(target)
    b.node("Reshape", [x, shape], outs[0])


@_emitter("permute")
def _permute(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Transpose", [b.value(ev.inputs[0])], outs[0], perm=list(ev.ctx["axes"]))


@_emitter("expand")
def _expand(b: Builder, ev: Event, outs: list[str]) -> None:
    source, target = _dims(b, ev.inputs[0]), _dims(b, ev.outputs[0])
    lead = len(target) - len(source)
    # Expand broadcasts both ways: a 1 keeps the input's own size
    sizes = [Dim(1) if j >= lead and source[j - lead] == d else d for j, d in enumerate(target)]
    b.node("Expand", [b.value(ev.inputs[0]), b.shape(sizes)], outs[0])


@_emitter("flip")
def _flip(b: Builder, ev: Event, outs: list[str]) -> None:
    axes = list(ev.ctx["axes"])
    k = len(axes)
    b.node("Slice", [b.value(ev.inputs[0]), b.ints([-1] * k), b.ints([INT64_MIN] * k),
                     b.ints(axes, "axes"), b.ints([-1] * k, "steps")], outs[0])


def _position(pos: Dim, size: Dim) -> Dim:
    """A slice bound as ONNX reads it: static, or counted from the end when that is."""
    if pos.is_static:
        return pos
    back = size - pos
    return Dim(-back.const) if back.is_static and back.const > 0 else pos


@_emitter("slice")
def _slice(b: Builder, ev: Event, outs: list[str]) -> None:
    source, target = _dims(b, ev.inputs[0]), _dims(b, ev.outputs[0])
    steps = b.static(ev, "steps")
    axes: list[int] = []
    starts: list[Dim] = []
    ends: list[Dim] = []
    for d, (start, step, size, full) in enumerate(zip(ev.dims["starts"], steps, target,
                                                     source)):
        if start == Dim(0) and step == 1 and size == full:
            continue
        stop = start + (size - 1) * step + 1 if size != Dim(0) else start
        axes.append(d)
        starts.append(_position(start, full))
        ends.append(Dim(INT64_MAX) if stop == full else _position(stop, full))
    b.node("Slice", [b.value(ev.inputs[0]), b.shape(starts), b.shape(ends),
                     b.ints(axes, "axes"), b.ints([steps[a] for a in axes], "steps")],
           outs[0])


@_emitter("cat")
def _cat(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Concat", [b.value(r) for r in ev.inputs], outs[0], axis=ev.ctx["axis"])


@_emitter("pad")
def _pad(b: Builder, ev: Event, outs: list[str]) -> None:
    pads = b.static(ev, "pads")
    out = b.trace.values[ev.outputs[0]]
    # the fill value is not among pad's saved arguments: read it from the result, at the
    # first element (in the padding if any axis is padded before) or at the last element of
    # the first axis padded after
    offset = 0
    if not any(before for before, _ in pads):
        d = next(d for d, (_, after) in enumerate(pads) if after)
        offset = (out.shape[d] - 1) * math.prod(out.shape[d + 1:])
    size = out.dtype.itemsize
    fill = out.tensor.to_bytes()[offset * size:(offset + 1) * size]
    flat = [p[0] for p in pads] + [p[1] for p in pads]
    b.node("Pad", [b.value(ev.inputs[0]), b.ints(flat, "pads"),
                   b.raw(out.dtype.name, (), fill, "fill")], outs[0])


# ---- indexing ----------------------------------------------------------------------------------
@_emitter("gather")
def _gather(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("GatherElements", [b.value(r) for r in ev.inputs], outs[0], axis=ev.ctx["axis"])


@_emitter("index_select")
def _index_select(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Gather", [b.value(r) for r in ev.inputs], outs[0], axis=ev.ctx["axis"])


@_emitter("scatter")
def _scatter(b: Builder, ev: Event, outs: list[str]) -> None:
    attrs = {"axis": ev.ctx["axis"]}
    if ev.ctx["reduce"] == "add":
        b.require(16, "scatter with accumulation")
        attrs["reduction"] = b"add"
    b.node("ScatterElements", [b.value(r) for r in ev.inputs], outs[0], **attrs)


# ---- reductions and scans ----------------------------------------------------------------------
def _reduce(b: Builder, ev: Event, outs: list[str]) -> None:
    reduction = REDUCTIONS[ev.name.split(":", 1)[1]]
    axes = list(ev.ctx["axes"])
    x = b.value(ev.inputs[0])
    if reduction.truth:  # the fold of the truth values, as int32
        if not b.trace.values[ev.inputs[0]].dtype.is_bool:
            x = b.node("Cast", [x], to=onnx_dtype("bool"))
        if axes:
            x = b.node("Cast", [x], to=onnx_dtype("int32"))
            x = b.axes_input(reduction.onnx, x, axes, since=reduction.onnx_axes_input,
                             keepdims=1)
        b.node("Cast", [x], outs[0], to=onnx_dtype("bool"))
    elif axes:
        b.axes_input(reduction.onnx, x, axes, outs[0], since=reduction.onnx_axes_input,
                     keepdims=1)
    else:
        b.node("Identity", [x], outs[0])


def _scan(b: Builder, ev: Event, outs: list[str]) -> None:
    reduction = REDUCTIONS[ev.name.split(":", 1)[1]]
    axis = b.raw("int64", (), ev.ctx["axis"].to_bytes(8, "little", signed=True), "axis")
    b.node(reduction.scan_onnx, [b.value(ev.inputs[0]), axis], outs[0])


# ---- linear algebra, convolution, pooling ------------------------------------------------------
@_emitter("matmul")
def _matmul(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("MatMul", b.broadcast_inputs(ev, batch_only=True), outs[0])


@_emitter("linear")
def _linear(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused x @ w.T + b (cpu; F.linear calls it): Gemm for a matrix of rows,
    # else MatMul by the transposed weight (a parameter is stored transposed) and Add
    x, w, *bias = ev.inputs
    if len(_dims(b, x)) == 2:
        b.node("Gemm", [b.value(r) for r in ev.inputs], outs[0], transB=1)
        return
    weight = b.trace.values[w].tensor
    if weight is not None and key_of(weight) in b.params:
        transposed = b.param(weight, weight.mT, "_t")
    else:
        transposed = b.node("Transpose", [b.value(w)], perm=[1, 0])
    if not bias:
        b.node("MatMul", [b.value(x), transposed], outs[0])
        return
    b.node("Add", [b.node("MatMul", [b.value(x), transposed]), b.value(bias[0])], outs[0])


def _pads(pairs: list) -> list[int]:
    return [p[0] for p in pairs] + [p[1] for p in pairs]


@_emitter("conv")
def _conv(b: Builder, ev: Event, outs: list[str]) -> None:
    kernel = list(b.trace.values[ev.inputs[1]].shape[2:])
    b.node("Conv", [b.value(r) for r in ev.inputs], outs[0], kernel_shape=kernel,
           strides=list(b.static(ev, "stride")), pads=_pads(b.static(ev, "padding")),
           dilations=list(b.static(ev, "dilation")), group=ev.ctx["groups"])


@_emitter("conv_transpose")
def _conv_transpose(b: Builder, ev: Event, outs: list[str]) -> None:
    # saved: the padding of the convolution this is the adjoint of; a negative end means
    # the output reaches past the last window, which ONNX calls output_padding
    pairs = b.static(ev, "padding")
    attrs = {"kernel_shape": list(b.trace.values[ev.inputs[1]].shape[2:]),
             "strides": list(b.static(ev, "stride")),
             "pads": [p for p, _ in pairs] + [max(e, 0) for _, e in pairs],
             "dilations": list(b.static(ev, "dilation")), "group": ev.ctx["groups"]}
    if any(e < 0 for _, e in pairs):
        attrs["output_padding"] = [max(-e, 0) for _, e in pairs]
    b.node("ConvTranspose", [b.value(r) for r in ev.inputs], outs[0], **attrs)


@_emitter("max_pool")
def _max_pool(b: Builder, ev: Event, outs: list[str]) -> None:
    if "kernel" not in ev.ctx:
        raise Unsupported("max_pool (its geometry is not among the saved arguments)")
    b.node("MaxPool", [b.value(ev.inputs[0])], outs[0],
           kernel_shape=list(b.static(ev, "kernel")), strides=list(b.static(ev, "stride")),
           pads=_pads(b.static(ev, "padding")), dilations=list(b.static(ev, "dilation")))


#: struct codes of the float dtypes
_FLOAT_CODES = {"float16": "e", "float32": "f", "float64": "d"}


@_emitter("avg_pool")
def _avg_pool(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' average pooling (wgpu), sliding or adaptive: separable, so one MatMul per
    # pooled dim by its averaging matrix (columns: 1/count over each window), that dim moved
    # last and back; a divisor scales once at the end
    windows, divisor = b.static(ev, "windows"), ev.ctx["divisor"]
    source = b.trace.values[ev.inputs[0]]
    dims = _dims(b, ev.inputs[0])
    dtype = source.dtype.name
    name = b.value(ev.inputs[0])
    rank = len(dims)
    for j, rows in enumerate(windows):
        axis = rank - len(windows) + j
        if not dims[axis].is_static:
            raise Unsupported("average pooling over a dynamic axis")
        n = source.shape[axis]
        weights = [(1.0 if divisor else 1.0 / count) if start <= c < stop else 0.0
                   for c in range(n) for start, stop, count in rows]
        packed = struct.pack(f"<{len(weights)}{_FLOAT_CODES[dtype]}", *weights)
        matrix = b.raw(dtype, (n, len(rows)), packed, "averaging")
        order = [d for d in range(rank) if d != axis] + [axis]
        back = [order.index(d) for d in range(rank)]
        moved = b.node("Transpose", [name], perm=order)
        last = j == len(windows) - 1 and not divisor
        name = b.node("Transpose", [b.node("MatMul", [moved, matrix])],
                      outs[0] if last else None, perm=back)
    if divisor:
        b.node("Div", [name, b.number(divisor, dtype)], outs[0])


for _op in (*elementwise.UNARY.values(), *elementwise.BINARY.values()):
    if _op.onnx:
        EMITTERS[_op.rule] = _elementwise
for _reduction in REDUCTIONS.values():
    EMITTERS[_reduction.rule] = _reduce
    if _reduction.scan_onnx:
        EMITTERS[_reduction.scan_rule] = _scan


@_emitter("softmax")
def _softmax(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused softmax / log_softmax (wgpu)
    b.node("LogSoftmax" if ev.ctx["log"] else "Softmax", [b.value(ev.inputs[0])], outs[0],
           axis=ev.ctx["dim"])


@_emitter("activation")
def _activation(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused activations (cpu): ONNX's own operators; before opset 14, which
    # brought HardSwish, x times HardSigmoid
    [x] = [b.value(r) for r in ev.inputs if r is not None]  # its one input
    name = ev.ctx["name"]
    if name == "sigmoid":
        b.node("Sigmoid", [x], outs[0])
    elif name == "silu":
        b.node("Mul", [x, b.node("Sigmoid", [x])], outs[0])
    elif name == "hardswish" and b.opset >= 14:
        b.node("HardSwish", [x], outs[0])
    else:
        gate = b.node("HardSigmoid", [x], None if name == "hardswish" else outs[0],
                      alpha=1.0 / 6.0, beta=0.5)
        if name == "hardswish":
            b.node("Mul", [x, gate], outs[0])


@_emitter("nll_loss")
def _nll_loss(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused negative log-likelihood (cpu; cross_entropy and nll_loss call it):
    # ONNX's operator has its classes at dim 1, so a lone (C,) row gets a batch of one
    logp, target, *weight = (b.value(r) for r in ev.inputs)
    lone = ev.ctx["axis"] == 0
    if lone:
        logp, target = (b.axes_input("Unsqueeze", v, [0]) for v in (logp, target))
    attrs = {"reduction": ev.ctx["reduction"], "ignore_index": ev.ctx["ignore_index"]}
    if lone and ev.ctx["reduction"] == "none":
        loss = b.node("NegativeLogLikelihoodLoss", [logp, target, *weight], **attrs)
        b.axes_input("Squeeze", loss, [0], outs[0])
    else:
        b.node("NegativeLogLikelihoodLoss", [logp, target, *weight], outs[0], **attrs)


def _standardise(b: Builder, x: str, axes: list[int], eps: float, dtype: str,
                 affine: list[tuple[str, str]], out: str) -> None:
    """The normalisation composites' operators into `out`: x less its mean over `axes`,
    times the reciprocal of ``sqrt(var + eps)``, then each ``(op, operand)`` of `affine`."""
    def mean(v: str) -> str:
        return b.axes_input("ReduceMean", v, axes, since=18, keepdims=1)

    centred = b.node("Sub", [x, mean(x)])
    variance = mean(b.node("Mul", [centred, centred]))
    scale = b.node("Reciprocal", [b.node("Sqrt", [b.node("Add", [variance,
                                                                 b.number(eps, dtype)])])])
    chain = [("Mul", scale)] + affine
    y = centred
    for i, (op, operand) in enumerate(chain):
        y = b.node(op, [y, operand], out if i == len(chain) - 1 else None)


@_emitter("layer_norm")
def _layer_norm(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused layer norm (cpu, wgpu): ONNX's LayerNormalization from opset 17,
    # where it has a weight (the operator requires a scale); else the composite's operators
    x, *affine = (b.value(r) for r in ev.inputs)
    ndims, eps = ev.ctx["ndims"], ev.ctx["eps"]
    if b.opset >= 17 and ev.ctx["weight"]:
        b.node("LayerNormalization", [x, *affine], outs[0], axis=-ndims, epsilon=eps)
        return
    chain = ([("Mul", affine.pop(0))] if ev.ctx["weight"] else []) + (
        [("Add", affine.pop(0))] if ev.ctx["bias"] else [])
    _standardise(b, x, list(range(-ndims, 0)), eps, b.trace.values[ev.inputs[0]].dtype.name,
                 chain, outs[0])


@_emitter("batch_norm")
def _batch_norm(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' fused batch norm with batch statistics (cpu; F.batch_norm in training or
    # without running statistics, which an nn.BatchNorm in eval mode never is): the
    # composite's operators over every dim but the channels, with weight and bias (C,)
    # unsqueezed to (C, 1, ...) so that they broadcast along dim 1
    x, *affine = (b.value(r) for r in ev.inputs)
    rank = len(_dims(b, ev.inputs[0]))

    def per_channel(v: str) -> str:
        return b.axes_input("Unsqueeze", v, list(range(1, rank - 1))) if rank > 2 else v

    chain = ([("Mul", per_channel(affine.pop(0)))] if ev.ctx["weight"] else []) + (
        [("Add", per_channel(affine.pop(0)))] if ev.ctx["bias"] else [])
    _standardise(b, x, [0, *range(2, rank)], ev.ctx["eps"],
                 b.trace.values[ev.inputs[0]].dtype.name, chain, outs[0])


@_emitter("batch_norm_eval")
def _batch_norm_eval(b: Builder, ev: Event, outs: list[str]) -> None:
    # the backends' batch norm with given statistics (cpu; F.batch_norm in evaluation, which
    # an nn.BatchNorm in eval mode exports through its module instead): the composite's
    # operators, a scale and a shift per channel unsqueezed to (C, 1, ...), then x * scale
    # + shift
    refs = [r for r in ev.inputs if r is not None]  # all of them: each input is a tensor
    x, mean, var, *affine = (b.value(r) for r in refs)
    rank = len(_dims(b, refs[0]))
    dtype = b.trace.values[refs[0]].dtype.name
    scale = b.node("Reciprocal", [b.node("Sqrt", [b.node("Add", [var, b.number(
        ev.ctx["eps"], dtype)])])])
    if ev.ctx["weight"]:
        scale = b.node("Mul", [scale, affine.pop(0)])
    product = b.node("Mul", [mean, scale])
    shift = (b.node("Sub", [affine.pop(0), product]) if ev.ctx["bias"]
             else b.node("Neg", [product]))

    def per_channel(v: str) -> str:
        return b.axes_input("Unsqueeze", v, list(range(1, rank - 1))) if rank > 2 else v

    b.node("Add", [b.node("Mul", [x, per_channel(scale)]), per_channel(shift)], outs[0])
