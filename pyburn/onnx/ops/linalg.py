"""ONNX linear algebra: MatMul, Gemm, Einsum, Det (MatMulInteger lives with the other
quantized operators in quantize.py)."""

from __future__ import annotations

import pyburn

from ... import Tensor, where
from ...errors import ShapeError
from ...nn import functional as F
from ..registry import check, onnx_op


@onnx_op("MatMul", since=1)
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """MatMul: numpy's matmul (1-d operands are vectors, batch dims broadcast)."""
    return pyburn.matmul(a, b)


@onnx_op("Gemm", since=7)
def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, *, alpha: float = 1.0,
         beta: float = 1.0, transA: int = 0, transB: int = 0) -> Tensor:  # noqa: N803
    """Gemm: alpha * A' @ B' + beta * C, A' and B' the 2-d inputs transposed where transA /
    transB say, C optional and broadcast to the product."""
    check(a.ndim == 2 and b.ndim == 2,
          f"Gemm needs 2-d A and B, got shapes {a.shape} and {b.shape}")
    if (transB and not transA and alpha == 1.0 and (c is None or beta == 1.0)
            and a.dtype.is_floating_point and b.dtype is a.dtype
            and (c is None or (c.dtype is a.dtype and c.shape == b.shape[:1]))):
        # an exported nn.Linear: the product and its bias as one layer (one backend call
        # where the backend offers "linear")
        return F.linear(a, b, c)
    y = pyburn.matmul(a.T if transA else a, b.T if transB else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        y = y + (c if beta == 1.0 else c * beta)
    return y.cast(a.dtype)


@onnx_op("Einsum", since=12)
def einsum(*inputs: Tensor, equation: str) -> Tensor:
    """Einsum: Einstein summation over the inputs as `equation` says."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    check(len(terms) == len(inputs),
          f"Einsum equation {equation!r} names {len(terms)} operands, got {len(inputs)}")
    # pyburn.einsum wants a letter per dim, so 0-d operands (empty terms) are multiplied in
    # afterwards: a scalar factor commutes with any summation
    kept = [(term, x) for term, x in zip(terms, inputs) if term]
    scalars = [x for term, x in zip(terms, inputs) if not term]
    out = pyburn.einsum(",".join(t for t, _ in kept) + arrow + rhs, *(x for _, x in kept)) \
        if kept else scalars.pop(0)
    for factor in scalars:
        out = out * factor
    return out


@onnx_op("Det", since=11)
def det(x: Tensor) -> Tensor:
    """Det: the determinant of each square matrix in the last two dims.

    pyburn has no determinant primitive, so this is Gaussian elimination with partial
    pivoting written in tensor ops: one step per column, batched over the leading dims.
    """
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"Det needs square matrices in the last two dims, got {x.shape}")
    n = x.shape[-1]
    batch = x.shape[:-2]
    a = x if x.dtype.is_floating_point else x.cast(pyburn.float32)
    rows = pyburn.arange(n, device=x.device)
    result = pyburn.ones(batch, dtype=a.dtype, device=x.device)
    for k in range(n):
        column = a[..., :, k]
        # the largest magnitude at or below the diagonal becomes the pivot
        candidates = where(rows >= k, column.abs(), -1.0)
        pivot_row = candidates.argmax(-1, keepdim=True)  # (..., 1)
        order = where(rows == k, pivot_row, where(rows == pivot_row, k, rows))
        a = a.gather(-2, order.unsqueeze(-1).expand(*batch, n, n))
        result = where(pivot_row.squeeze(-1) != k, -result, result)
        pivot = a[..., k, k]
        result = result * pivot
        # a zero pivot means a zero determinant; dividing by 1 instead keeps NaN out
        factors = where(rows > k, a[..., :, k] / where(pivot == 0, 1.0, pivot).unsqueeze(-1),
                        0.0)
        a = a - factors.unsqueeze(-1) * a[..., k:k + 1, :]
    return result
