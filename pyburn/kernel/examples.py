"""Kernels written with `pyburn.kernel`, each with the function that launches it: a fused
GELU, a row softmax with workgroup reductions, an RMSNorm with subgroup reductions, a tiled
matmul with shared memory (its kernel and block size picked by `autotune`), a histogram
with atomics, and a custom op with its own backward (`smooth_abs`). They run on every
device (the tests run each on flex, cpu and wgpu) and read as templates for your own.

>>> import pyburn
>>> from pyburn.kernel import examples
>>> x = pyburn.tensor([[1.0, 2.0, 3.0]], device="flex")
>>> [round(p, 4) for p in examples.softmax(x)[0].tolist()]
[0.09, 0.2447, 0.6652]
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..dtypes import int32
from ..ops.creation import zeros
from . import (
    Const,
    atomic_add,
    barrier,
    exp,
    f32,
    global_id,
    group_id,
    i32,
    kernel,
    local_array,
    local_id,
    shared,
    sqrt,
    static_range,
    subgroup_add,
    subgroup_id,
    subgroup_lane,
    subgroup_size,
    tanh,
)
from . import Tensor as T
from .op import op
from .tune import autotune

#: invocations per workgroup of the elementwise examples
GROUP = 64
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _groups(n: int, size: int = GROUP) -> int:
    return max(1, (n + size - 1) // size)


@kernel
def gelu_kernel(out: T[f32], x: T[f32], n: i32):
    """GELU (tanh form) of each element: one pass, no intermediate tensors."""
    i = global_id(0)
    if i < n:
        v = x[i]
        out[i] = 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)))


@kernel
def scaled_gelu_kernel(out: T[f32], x: T[f32], n: i32, scale: Const):
    """GELU of x * scale, a constant: each new scale is a new kernel (what ``pyburn bench
    kernel`` compiles to time a cold launch)."""
    i = global_id(0)
    if i < n:
        v = x[i] * scale
        out[i] = 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)))


def gelu(x: Tensor) -> Tensor:
    """GELU, tanh approximation (PyTorch's ``approximate="tanh"``)."""
    flat = x.contiguous().reshape(-1)
    n = flat.numel()
    return gelu_kernel[_groups(n), GROUP]((n,), flat, n).reshape(x.shape)


#: invocations per row of `softmax` (a power of two: the reductions halve it LEVELS times)
ROW_GROUP = 64
LEVELS = ROW_GROUP.bit_length() - 1


@kernel
def softmax_kernel(out: T[f32, 2], x: T[f32, 2], width: Const):
    """Softmax of each row, one workgroup a row: each invocation folds a strided share of
    the row, then the workgroup reduces the shares in shared memory (max, then sum)."""
    part = shared(f32, ROW_GROUP)
    row = group_id(0)
    lane = local_id(0)
    best = -3.4e38
    for j in range(lane, width, ROW_GROUP):
        best = max(best, x[row, j])
    part[lane] = best
    barrier()
    for level in static_range(LEVELS):
        half = ROW_GROUP >> (level + 1)
        if lane < half:
            part[lane] = max(part[lane], part[lane + half])
        barrier()
    top = part[0]
    barrier()
    total = 0.0
    for j in range(lane, width, ROW_GROUP):
        total += exp(x[row, j] - top)
    part[lane] = total
    barrier()
    for level in static_range(LEVELS):
        half = ROW_GROUP >> (level + 1)
        if lane < half:
            part[lane] = part[lane] + part[lane + half]
        barrier()
    total = part[0]
    for j in range(lane, width, ROW_GROUP):
        out[row, j] = exp(x[row, j] - top) / total


def softmax(x: Tensor) -> Tensor:
    """Softmax over the last dim of a 2-d tensor."""
    rows, width = x.shape
    return softmax_kernel[rows, ROW_GROUP](x.shape, x.contiguous(), width)


@kernel
def rms_norm_kernel(out: T[f32, 2], x: T[f32, 2], weight: T[f32], width: Const, eps: f32):
    """RMSNorm of each row, one workgroup a row: each invocation sums the squares of a
    strided share of the row, each subgroup adds up its invocations' sums (subgroup_add),
    its first invocation keeps the result in shared memory, and every invocation adds up
    the subgroups' sums. Whatever the adapter's subgroup size, the result is the same."""
    sums = shared(f32, ROW_GROUP)  # one per subgroup: at most one per invocation
    row = group_id(0)
    lane = local_id(0)
    total = 0.0
    for j in range(lane, width, ROW_GROUP):
        v = x[row, j]
        total += v * v
    total = subgroup_add(total)
    if subgroup_lane() == 0:
        sums[subgroup_id()] = total
    barrier()
    total = 0.0
    for k in range((ROW_GROUP + subgroup_size() - 1) // subgroup_size()):
        total += sums[k]
    scale = 1.0 / sqrt(total / f32(width) + eps)
    for j in range(lane, width, ROW_GROUP):
        out[row, j] = x[row, j] * scale * weight[j]


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dim of a 2-d tensor, times `weight` (PyTorch's
    ``F.rms_norm(x, (width,), weight, eps)``)."""
    rows, width = x.shape
    return rms_norm_kernel[rows, ROW_GROUP](x.shape, x.contiguous(), weight.contiguous(),
                                            width, eps)


@kernel
def matmul_kernel(c: T[f32, 2], a: T[f32, 2], b: T[f32, 2], block: Const, reg: Const,
                  depth: Const):
    """C = A @ B, a block x block block of C a workgroup, reg x reg of it an invocation
    (kept in its own arrays: registers, on a GPU). Per step of `depth` along K the
    workgroup stages a block of A and one of B in shared memory, each invocation loading
    its share, and each invocation reads from them a column of A's and a row of B's."""
    a_tile = shared(f32, block * depth)
    b_tile = shared(f32, depth * block)
    acc = local_array(f32, reg * reg)
    a_reg = local_array(f32, reg)
    b_reg = local_array(f32, reg)
    lane = local_id(1) * (block // reg) + local_id(0)
    row0 = group_id(1) * block + local_id(1) * reg
    col0 = group_id(0) * block + local_id(0) * reg
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    for t in range(0, k, depth):
        for e in static_range(depth * reg * reg // block):  # this invocation's share
            at = lane + e * (block // reg) * (block // reg)
            row = group_id(1) * block + at // depth
            a_tile[at] = 0.0
            if row < m and t + at % depth < k:
                a_tile[at] = a[row, t + at % depth]
            col = group_id(0) * block + at % block
            b_tile[at] = 0.0
            if t + at // block < k and col < n:
                b_tile[at] = b[t + at // block, col]
        barrier()
        for s in range(depth):  # a loop: unrolled, its body grows past a CPU's caches
            for i in static_range(reg):
                a_reg[i] = a_tile[(local_id(1) * reg + i) * depth + s]
                b_reg[i] = b_tile[s * block + local_id(0) * reg + i]
            for i in static_range(reg):
                for j in static_range(reg):
                    acc[i * reg + j] += a_reg[i] * b_reg[j]
        barrier()
    for i in static_range(reg):
        for j in static_range(reg):
            if row0 + i < m and col0 + j < n:
                c[row0 + i, col0 + j] = acc[i * reg + j]


@kernel
def matmul_registers_kernel(c: T[f32, 2], a: T[f32, 2], b: T[f32, 2], reg: Const):
    """C = A @ B as `matmul_kernel` computes it, without shared memory: each invocation
    reads its rows of A and columns of B straight from the tensors (clamped at the edges;
    what lies past them is not stored). On a CPU driver, where a barrier costs more than
    the loads it saves, this is the faster of the two."""
    acc = local_array(f32, reg * reg)
    a_reg = local_array(f32, reg)
    b_reg = local_array(f32, reg)
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    row0 = global_id(1) * reg
    col0 = global_id(0) * reg
    for t in range(k):
        for i in static_range(reg):
            a_reg[i] = a[min(row0 + i, m - 1), t]
            b_reg[i] = b[t, min(col0 + i, n - 1)]
        for i in static_range(reg):
            for j in static_range(reg):
                acc[i * reg + j] += a_reg[i] * b_reg[j]
    for i in static_range(reg):
        for j in static_range(reg):
            if row0 + i < m and col0 + j < n:
                c[row0 + i, col0 + j] = acc[i * reg + j]


@autotune(staged=[True, False], block=[32, 64], reg=[4, 8], depth=[8])
def matmul(a: Tensor, b: Tensor, staged: bool, block: int, reg: int, depth: int) -> Tensor:
    """A @ B of two 2-d float32 tensors, block x block of C a workgroup, with the kernel
    and block sizes that run fastest here (timed on the first call for each shape and
    device, `autotune`): staged through shared memory (`matmul_kernel`: GPUs) or read
    straight from the tensors (`matmul_registers_kernel`: CPU drivers)."""
    (m, _), (_, n) = a.shape, b.shape
    grid, group = (_groups(n, block), _groups(m, block)), (block // reg, block // reg)
    if not staged:
        return matmul_registers_kernel[grid, group]((m, n), a.contiguous(), b.contiguous(),
                                                    reg)
    return matmul_kernel[grid, group]((m, n), a.contiguous(), b.contiguous(), block, reg,
                                      depth)


@kernel
def histogram_kernel(counts: T[i32], x: T[i32], n: i32, bins: i32):
    """Count each value of `x` in [0, bins) with an atomic add; others are skipped."""
    i = global_id(0)
    if i < n:
        v = x[i]
        if v >= 0 and v < bins:
            atomic_add(counts, v, 1)


def histogram(x: Tensor, bins: int) -> Tensor:
    """How many times each of 0 .. bins - 1 occurs in the int32 tensor `x`."""
    flat = x.contiguous().reshape(-1)
    n = flat.numel()
    return histogram_kernel[_groups(n), GROUP](zeros(bins, dtype=int32, device=x.device),
                                               flat, n, bins)


@kernel
def smooth_abs_kernel(out: T[f32], x: T[f32], n: i32, eps: f32):
    """sqrt(x^2 + eps): a smooth |x|."""
    i = global_id(0)
    if i < n:
        out[i] = (x[i] * x[i] + eps) ** 0.5


@kernel
def smooth_abs_grad_kernel(out: T[f32], g: T[f32], x: T[f32], n: i32, eps: f32):
    """Its derivative times the output gradient: g * x / sqrt(x^2 + eps)."""
    i = global_id(0)
    if i < n:
        out[i] = g[i] * x[i] / (x[i] * x[i] + eps) ** 0.5


EPS = 1e-3


def _smooth_abs(x: Tensor) -> Tensor:
    flat = x.contiguous().reshape(-1)
    n = flat.numel()
    return smooth_abs_kernel[_groups(n), GROUP]((n,), flat, n, EPS).reshape(x.shape)


def _smooth_abs_backward(g: Tensor, x: Tensor) -> tuple[Tensor]:
    flat, grads = x.contiguous().reshape(-1), g.contiguous().reshape(-1)
    n = flat.numel()
    return (smooth_abs_grad_kernel[_groups(n), GROUP]((n,), grads, flat, n, EPS)
            .reshape(x.shape),)


#: sqrt(x^2 + 1e-3) elementwise, differentiable: a custom op whose forward and backward are
#: both kernels
smooth_abs = op(_smooth_abs, backward=_smooth_abs_backward)
