"""Softmax, log_softmax and layer_norm for wgpu, the "softmax" and "layer_norm" capabilities
(``pyburn.ops.capability``): ``rows.wgsl``, one kernel per call, the row's
statistic gathered in one read and combined across invocations in workgroup memory.

- softmax keeps (max, sum of exp(x - max)) and rescales the sum when the max grows (the
  "online" softmax), so the row is read once for the statistic and once to write.
  The shift follows the composite (``nn/functional/activation.py``): a row whose max is not
  finite is shifted by 0, so a NaN row gives NaN, an all -inf row 0/0 = NaN.
- layer_norm keeps (count, shift, sum and sum of squares of x - shift), the shift being an
  invocation's first element, so one read gives the biased variance without the
  cancellation of E[x^2] - E[x]^2 (and without a division per element, as Welford's update
  would need); invocations merge theirs with Chan's formula. The weight and bias are
  applied as each element is written.

The kernel binds a row whole and each of the row's invocations (`threads_for`) walks a
share of it: a row longer than that allows (the binding limit, or the loop budget of 256
invocations) is computed with the backend's own reductions and elementwise kernels instead.
"""

from __future__ import annotations

import math
import struct

from ...dtypes import bool_
from ...shape import contiguous_strides
from ..strided import coalesce
from .creation import full
from .elementwise import binary, contiguous, unary, where
from .handle import GpuTensor
from .launch import Gpu, Operand, loop_budget
from .movement import expand
from .reduce import reduce
from .templates import render

WORKGROUP = 256

#: rows.wgsl's `shared` and `pool` where a row's invocations pool their statistics: a tree
#: in workgroup memory
_TREE = ("var<workgroup> partial: array<Stat, {workgroup}>;", """    partial[lid] = stat;
    workgroupBarrier();
    for (var s = {threads} / 2; s > 0; s /= 2) {{
        if (lane < s) {{
            partial[lid] = combine(partial[lid], partial[lid + u32(s)]);
        }}
        workgroupBarrier();
    }}
    let total = partial[lid - u32(lane)];""")
#: ... and where a row has one invocation: nothing to pool, and no barrier, which costs
#: SwiftShader most of a kernel's compile (softmax's: 540 ms with it, 56 without)
_ALONE = ("", "    let total = stat;")

_SHIFT = """fn shift(m: f32) -> f32 {
    return select(0.0, m, pb_isfinite(m));
}

// s.b * exp(shift(s.a) - to), where a zero sum stays zero (its shift may be far from `to`)
fn rescaled(s: Stat, to: f32) -> f32 {
    return select(s.b * pb_exp(shift(s.a) - to), 0.0, s.b == 0.0);
}"""

_SOFTMAX = {
    "identity": "Stat(-pb_inf(), 0.0, 0.0, 0.0)",
    "fold": """    if (pb_isfinite(v) && pb_isfinite(s.a)) {  // the common case: one exp
        if (v > s.a) {
            return Stat(v, s.b * exp(s.a - v) + 1.0, 0.0, 0.0);
        }
        return Stat(s.a, s.b + exp(v - s.a), 0.0, 0.0);
    }
    return combine(s, Stat(v, pb_exp(v - shift(v)), 0.0, 0.0));""",
    "combine": """    let m = pb_maximum_f32(a.a, b.a);
    return Stat(m, rescaled(a, shift(m)) + rescaled(b, shift(m)), 0.0, 0.0);""",
    "functions": _SHIFT,
}

_FINISH = {False: "    return pb_exp(v - shift(s.a)) / s.b;",
           True: "    return (v - shift(s.a)) - pb_log(s.b);"}

_LAYER_NORM = {
    "identity": "Stat(0.0, 0.0, 0.0, 0.0)",
    "fold": """    let shift = select(s.b, v, s.a == 0.0);
    let d = v - shift;
    return Stat(s.a + 1.0, shift, s.c + d, s.d + d * d);""",
    "combine": """    if (b.a == 0.0) {
        return a;
    }
    if (a.a == 0.0) {
        return b;
    }
    let n = a.a + b.a;
    let delta = mean(b) - mean(a);
    return Stat(n, mean(a) + delta * (b.a / n), 0.0,
                squares(a) + squares(b) + delta * delta * (a.a * b.a / n));""",
    "functions": """fn mean(s: Stat) -> f32 {
    return s.b + s.c / s.a;
}

// the sum of squared deviations from the mean
fn squares(s: Stat) -> f32 {
    return s.d - s.c * s.c / s.a;
}""",
}


def _layer_norm_finish(weight: bool, bias: bool) -> str:
    """layer_norm's finish: the normalised element, then times weight[r] and plus bias[r]
    where the call has them."""
    lines = ["    let variance = max(squares(s) / s.a, 0.0);",
             "    var y = (v - mean(s)) * (1.0 / sqrt(variance + bitcast<f32>(info[PARAMETER])));"]
    if weight:
        lines.append("    y *= pb_load_weight(info[WEIGHT] + r);")
    if bias:
        lines.append("    y += pb_load_bias(info[BIAS] + r);")
    return "\n".join([*lines, "    return y;"])


def threads_for(length: int) -> int:
    """Invocations per row: about sixteen elements each (a power of two, at most a
    workgroup). Fewer elements each would make the tree's barriers dominate on CPU drivers
    (measured on llvmpipe, 4096 rows of 1024: 64 invocations per row 2.4x faster than 256),
    and this is still a few hundred thousand invocations for a GPU's typical softmax."""
    return min(WORKGROUP, 1 << max(0, (length - 1).bit_length() - 4))


def _fits(gpu: Gpu, x: GpuTensor, axes: tuple[int, ...]) -> bool:
    """Whether one workgroup can walk a row of x over `axes` (bound whole in x and in the
    contiguous output, within the loop budget: two passes, each element's offset a loop over
    the row's dims)."""
    limits = gpu.runtime.limits
    reach = x.kind.itemsize * (1 + max(
        sum((x.shape[d] - 1) * abs(strides[d]) for d in axes)
        for strides in (x.strides, contiguous_strides(x.shape))))
    length = math.prod(x.shape[d] for d in axes)
    return (reach + limits.min_storage_buffer_offset_alignment
            <= limits.max_storage_buffer_binding_size
            and -(-length // gpu.group_threads(threads_for(length)))
            <= loop_budget(2 * (len(axes) + 2)))


def _rows(gpu: Gpu, x: GpuTensor, axes: tuple[int, ...], parts: dict[str, str],
          parameter: float = 0.0, weight: GpuTensor | None = None,
          bias: GpuTensor | None = None) -> GpuTensor:
    """Run rows.wgsl over the rows of x along `axes` with the op's WGSL `parts` (and
    layer_norm's `weight` and `bias`, of the rows' shape)."""
    out = gpu.empty(x.shape, x.dtype)
    if out.numel == 0:
        return out
    kept = [d for d in range(len(x.shape)) if d not in axes]
    kshape, (kx, ko) = coalesce(tuple(x.shape[d] for d in kept),
                                [tuple(x.strides[d] for d in kept),
                                 tuple(out.strides[d] for d in kept)])
    rshape, (rx, ro) = coalesce(tuple(x.shape[d] for d in axes),
                                [tuple(x.strides[d] for d in axes),
                                 tuple(out.strides[d] for d in axes)])
    length = math.prod(rshape)
    threads = gpu.group_threads(threads_for(length))
    kind = x.kind
    shared, pool = (part.format(workgroup=WORKGROUP, threads=threads)
                    for part in (_TREE if threads > 1 else _ALONE))
    source = render("rows", workgroup=WORKGROUP, threads=threads, element=kind.storage,
                    store=kind.store("s"), shared=shared, pool=pool, **parts)
    nk, nr = len(kshape), len(rshape)
    itemsize = kind.itemsize
    operands = {1: Operand(out.storage, out.offset, ko + ro, itemsize),
                2: Operand(x.storage, x.offset, kx + rx, itemsize)}
    for k, t in ((3, weight), (4, bias)):
        if t is not None:  # read at row-major positions: contiguous, bound for whole rows
            t = contiguous(gpu, t)
            operands[k] = Operand(t.storage, t.offset, (0,) * nk + contiguous_strides(rshape),
                                  itemsize)
    bits = struct.unpack("<i", struct.pack("<f", parameter))[0]

    def info(box) -> list[int]:
        o, i = box.operands[1], box.operands[2]
        affine = [box.operands[k].offset if k in box.operands else 0 for k in (3, 4)]
        return [math.prod(box.extents[:nk]), length, nk, nr, bits, *affine, *box.extents,
                i.offset, *i.strides, o.offset, *o.strides]

    gpu.run(source, kshape + rshape, operands, info,
            lambda box: -(-math.prod(box.extents[:nk]) // (WORKGROUP // threads)), range(nk))
    return out


def softmax(gpu: Gpu, x: GpuTensor, axis: int, log: bool) -> GpuTensor:
    """softmax (or, with `log`, log_softmax) of float x along `axis`."""
    if not _fits(gpu, x, (axis,)):
        return _softmax_by_kernels(gpu, x, axis, log)
    return _rows(gpu, x, (axis,), {**_SOFTMAX, "finish": _FINISH[log]})


def layer_norm(gpu: Gpu, x: GpuTensor, weight: GpuTensor | None, bias: GpuTensor | None,
               ndims: int, eps: float) -> GpuTensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing `ndims` dims of
    float x (the biased variance); `weight` and `bias` (of those dims' shape) may be None."""
    axes = tuple(range(len(x.shape) - ndims, len(x.shape)))
    if not _fits(gpu, x, axes):
        return _layer_norm_by_kernels(gpu, x, weight, bias, axes, eps)
    finish = _layer_norm_finish(weight is not None, bias is not None)
    return _rows(gpu, x, axes, {**_LAYER_NORM, "finish": finish}, eps, weight, bias)


def _softmax_by_kernels(gpu: Gpu, x: GpuTensor, axis: int, log: bool) -> GpuTensor:
    """softmax of rows too long for one workgroup, as the composite computes it."""
    dtype = x.dtype
    top = reduce(gpu, "max", x, (axis,))
    finite = unary(gpu, "isfinite", top, bool_)
    shift = where(gpu, finite, top, full(gpu, top.shape, 0, dtype))
    shifted = binary(gpu, "sub", x, expand(shift, x.shape), dtype)
    e = unary(gpu, "exp", shifted, dtype)
    total = expand(reduce(gpu, "sum", e, (axis,)), x.shape)
    if log:
        return binary(gpu, "sub", shifted, unary(gpu, "log", total, dtype), dtype)
    return binary(gpu, "div", e, total, dtype)


def _layer_norm_by_kernels(gpu: Gpu, x: GpuTensor, weight: GpuTensor | None,
                           bias: GpuTensor | None, axes: tuple[int, ...],
                           eps: float) -> GpuTensor:
    """layer_norm of rows too long for one workgroup: mean, then the mean squared
    deviation, then the normalisation and the affine part."""
    dtype = x.dtype
    count = math.prod(x.shape[d] for d in axes)

    def mean(t: GpuTensor) -> GpuTensor:
        total = reduce(gpu, "sum", t, axes)
        return expand(binary(gpu, "div", total, full(gpu, total.shape, count, dtype), dtype),
                       x.shape)

    centred = binary(gpu, "sub", x, mean(x), dtype)
    var = mean(binary(gpu, "mul", centred, centred, dtype))
    scale = unary(gpu, "rsqrt", binary(gpu, "add", var, full(gpu, x.shape, eps, dtype), dtype),
                  dtype)
    y = binary(gpu, "mul", centred, scale, dtype)
    lead = (0,) * (len(x.shape) - len(axes))
    for op, t in (("mul", weight), ("add", bias)):
        if t is not None:  # broadcast over the lead dims
            y = binary(gpu, op, y, t.view(x.shape, lead + t.strides, t.offset), dtype)
    return y
