"""Linear algebra: matmul (batched, broadcasting), dot, outer, einsum."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor, check_dtype_on, install, result
from ..dtypes import default_float, promote
from ..errors import ArgumentError, DeviceError, DTypeError, ShapeError
from ..precision import autocast_inputs
from ..shape import broadcast_shapes, numel
from .creation import DeviceLike, arange, creator, target
from .math_ops import binary, constant, where
from .movement import broadcast_checked, broadcast_to, permute, reshape, reshape_checked
from .reduction import sum as reduce_sum


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-d operands are vectors, leading dims are
    batch dims that broadcast."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise DTypeError("matmul needs two tensors")
    if a.device is not b.device:
        raise DeviceError(f"matmul: tensors are on different devices, {a.device.name} and "
                          f"{b.device.name}")
    a, b = autocast_inputs("matmul", a, b)
    a_rank, b_rank = len(a.shape), len(b.shape)
    if a_rank == 0 or b_rank == 0:
        raise ShapeError(f"matmul needs tensors of rank >= 1, got shapes {a.shape} and {b.shape}")
    dtype = promote(a.dtype, b.dtype)
    if dtype.is_bool:
        raise DTypeError("matmul is not defined for bool tensors")
    check_dtype_on(dtype, a.device)
    if a_rank > 2 and b_rank == 2 and a.shape[-1] == b.shape[0]:
        # (..., M, K) @ (K, N) is one (B*M, K) @ (K, N) product: no broadcast of b (whose
        # gradient would then be summed back over the batch), one large GEMM
        rows = reshape_checked(a, (numel(a.shape[:-1]), a.shape[-1]))
        return reshape_checked(matmul(rows, b), a.shape[:-1] + (b.shape[1],))
    a2 = reshape_checked(a, (1,) + a.shape) if a_rank == 1 else a
    b2 = reshape_checked(b, b.shape + (1,)) if b_rank == 1 else b
    a_shape, b_shape = a2.shape, b2.shape
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not fit "
                         f"({a_shape[-1]} != {b_shape[-2]})")
    batch = a_shape[:-2]
    if b_shape[:-2] != batch:
        try:
            batch = broadcast_shapes(batch, b_shape[:-2])
        except ShapeError:
            raise ShapeError(f"matmul: the batch dims of shapes {a.shape} and {b.shape} do "
                             "not broadcast") from None
    # the operands' own matrix dims after the broadcast batch: a shape each one fits
    a3 = broadcast_checked(a2.cast(dtype), batch + a_shape[-2:])
    b3 = broadcast_checked(b2.cast(dtype), batch + b_shape[-2:])
    shape = batch + (a_shape[-2], b_shape[-1])
    out = result(a.device.backend.matmul(a3._h, b3._h), shape, dtype, "matmul", (a3, b3))
    if a_rank == 1:
        out = reshape_checked(out, shape[:-2] + shape[-1:])
    if b_rank == 1:
        out = reshape_checked(out, out.shape[:-1])
    return out


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Inner product of two 1-d tensors of one length."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot needs two 1-d tensors, got shapes {a.shape} and {b.shape}")
    return matmul(a, b)


def outer(a: Tensor, b: Tensor) -> Tensor:
    """Outer product of two 1-d tensors: ``out[i, j] = a[i] * b[j]``."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer needs two 1-d tensors, got shapes {a.shape} and {b.shape}")
    return binary("mul", a.unsqueeze(1), b.unsqueeze(0))


def _parse_einsum(equation: str, operands: Sequence[Tensor]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    inputs_text, arrow, output = eq.partition("->")
    inputs = inputs_text.split(",")
    if len(inputs) != len(operands):
        raise ArgumentError(f"einsum {equation!r} names {len(inputs)} operands, got "
                            f"{len(operands)}")
    spare = iter(c for c in string.ascii_letters if c not in eq)
    ellipsis_letters = ""
    expanded = []
    for term, x in zip(inputs, operands):
        if "..." in term:
            n = x.ndim - (len(term) - 3)
            while len(ellipsis_letters) < n:
                ellipsis_letters = next(spare) + ellipsis_letters
            term = term.replace("...", ellipsis_letters[len(ellipsis_letters) - n:])
        if len(term) != x.ndim or (term and not term.isalpha()):
            raise ArgumentError(f"einsum term {term!r} does not fit an operand of shape "
                                f"{x.shape}")
        expanded.append(term)
    if arrow:
        output = output.replace("...", ellipsis_letters)
    else:
        counts = {c: "".join(expanded).count(c) for c in "".join(expanded)}
        output = ellipsis_letters + "".join(sorted(c for c, k in counts.items()
                                                   if k == 1 and c not in ellipsis_letters))
    if not output.isalpha() and output:
        raise ArgumentError(f"bad einsum output {output!r}")
    return expanded, output


def _diagonal(x: Tensor, term: str) -> tuple[Tensor, str]:
    """Take the diagonal over every letter repeated within one term."""
    while len(set(term)) != len(term):
        c = next(ch for ch in term if term.count(ch) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        if x.shape[i] != x.shape[j]:
            raise ShapeError(f"einsum: repeated index {c!r} has sizes {x.shape[i]} and "
                             f"{x.shape[j]}")
        n = x.shape[i]
        order = [i, j] + [k for k in range(x.ndim) if k not in (i, j)]
        flat = reshape(permute(x, order), (n * n,) + tuple(x.shape[k] for k in order[2:]))
        x = flat.index_select(0, binary("mul", arange(n, device=x.device), n + 1))
        term = c + "".join(term[k] for k in order[2:])
    return x, term


def _sum_private(x: Tensor, term: str, keep: str) -> tuple[Tensor, str]:
    """Sum out letters of `term` that appear nowhere in `keep`."""
    gone = [k for k, c in enumerate(term) if c not in keep]
    if gone:
        x = reduce_sum(x, tuple(gone))
        term = "".join(c for c in term if c not in "".join(term[k] for k in gone))
    return x, term


def _contract(a: Tensor, ta: str, b: Tensor, tb: str, keep: str) -> tuple[Tensor, str]:
    """Contract two operands into one as a batched matmul: batch letters are shared and
    kept, summed letters shared and dropped, the rest free."""
    sizes = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    for c in set(ta) & set(tb):
        sa, sb = a.shape[ta.index(c)], b.shape[tb.index(c)]
        if sa != sb and 1 not in (sa, sb):
            raise ShapeError(f"einsum: index {c!r} has sizes {sa} and {sb}")
        sizes[c] = max(sa, sb)
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    a_shape = tuple(sizes[c] for c in batch + free_a + summed)
    b_shape = tuple(sizes[c] for c in batch + summed + free_b)
    a_mat = broadcast_to(permute(a, [ta.index(c) for c in batch + free_a + summed]), a_shape)
    b_mat = broadcast_to(permute(b, [tb.index(c) for c in batch + summed + free_b]), b_shape)
    nb = tuple(sizes[c] for c in batch)
    m, k, n = (numel(sizes[c] for c in group) for group in (free_a, summed, free_b))
    product = matmul(reshape(a_mat, nb + (m, k)), reshape(b_mat, nb + (k, n)))
    out = reshape(product, nb + tuple(sizes[c] for c in free_a + free_b))
    return out, "".join(batch + free_a + free_b)


def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)``; supports repeated
    indices (diagonals), implicit outputs and ``...``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ArgumentError("einsum needs at least one operand")
    terms, output = _parse_einsum(equation, operands)
    if len(set(output)) != len(output) or any(c not in "".join(terms) for c in output):
        raise ArgumentError(f"einsum output {output!r} repeats a letter or names one that no "
                            "input has")
    items = []
    for x, term in zip(operands, terms):
        x, term = _diagonal(x, term)
        items.append((x, term))
    for i, (x, term) in enumerate(items):
        others = output + "".join(t for j, (_, t) in enumerate(items) if j != i)
        items[i] = _sum_private(x, term, others)
    x, term = items[0]
    for i, (y, ty) in enumerate(items[1:], start=1):
        keep = output + "".join(t for _, t in items[i + 1:])
        x, term = _contract(x, term, y, ty, keep)
    x, term = _sum_private(x, term, output)
    return permute(x, [term.index(c) for c in output]) if term != output else x


def _triangle(x: Tensor, diagonal: int, lower: bool) -> Tensor:
    if x.ndim < 2:
        raise ShapeError(f"tril/triu need a tensor of rank >= 2, got shape {x.shape}")
    rows, cols = x.shape[-2:]
    offset = binary("sub", arange(cols, device=x.device),
                    arange(rows, device=x.device).reshape(rows, 1))
    keep = binary("le" if lower else "ge", offset, diagonal)
    return where(keep, x, constant(0, x.dtype, (), x.device))


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """Lower triangle of the last two dims (elements above `diagonal` set to 0)."""
    return _triangle(x, diagonal, lower=True)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """Upper triangle of the last two dims (elements below `diagonal` set to 0)."""
    return _triangle(x, diagonal, lower=False)


LINALG = {"matmul": matmul, "__matmul__": matmul,
          "__rmatmul__": lambda self, other: matmul(other, self), "dot": dot, "outer": outer,
          "mm": matmul, "bmm": matmul, "mv": matmul, "tril": tril, "triu": triu}
install(LINALG)


@creator
def eye(n: int, m: int | None = None, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """The n×m identity matrix (m defaults to n)."""
    m = n if m is None else m
    dev, dt = target(device, dtype, default_float)
    rows = arange(n, device=dev).reshape(n, 1)
    return binary("eq", rows, arange(m, device=dev)).cast(dt)
