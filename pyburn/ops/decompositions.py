"""Matrix decompositions written once with tensor ops, so they run on every device: the
singular value decomposition (one-sided Jacobi), the symmetric eigendecomposition (through
it), Cholesky, QR (Gram-Schmidt, orthogonalised twice) and Gauss-Jordan elimination with
partial pivoting (`solve`, `inv`, `det`, `slogdet`); `pinv`, `matrix_rank` and
`matrix_power` are computed from them. Every one takes a batch of matrices (``(..., M, N)``).

The loops run in Python over the columns (one batched step of tensor ops each), so they
suit the small and mid-sized matrices of statistics (scikit-learn's estimators on pyburn,
docs/array_api.md): a 100-column SVD is about a thousand steps. Integer inputs are computed
in float32, float16 ones in float32 and given back as float16.

>>> import pyburn
>>> from pyburn.ops import decompositions
>>> a = pyburn.tensor([[3.0, 0.0], [4.0, 5.0]], device="flex")
>>> [round(v, 4) for v in decompositions.svdvals(a).tolist()]
[6.7082, 2.2361]
"""

from __future__ import annotations

from typing import NamedTuple

from .._tensor import Tensor
from ..dtypes import float16, float32, float64
from ..errors import ArgumentError, ShapeError
from ..shape import broadcast_shapes
from .creation import arange, full
from .indexing import gather, index_select
from .linalg import eye, matmul, triu
from .math_ops import where
from .movement import broadcast_to, cat, stack, unsqueeze
from .reduction import amax, prod, sum
from .sorting import argsort

#: the most sweeps of Jacobi rotations before the SVD stops (it converges in 6 to 12)
MAX_SWEEPS = 40


class SVDResult(NamedTuple):
    """`svd`'s result: ``x = U @ diag(S) @ Vh``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class EighResult(NamedTuple):
    """`eigh`'s result: ascending eigenvalues and their eigenvectors as columns."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """`qr`'s result: ``x = Q @ R``."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """`slogdet`'s result: ``det = sign * exp(logabsdet)``."""

    sign: Tensor
    logabsdet: Tensor


def _matrices(x: Tensor, name: str, square: bool = False) -> Tensor:
    """`x` checked to be a batch of (square) matrices, in a float dtype to compute in."""
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        raise ShapeError(f"{name} needs {'square ' if square else ''}matrices (..., M, N), "
                         f"got shape {x.shape}")
    return x.cast(x.dtype if x.dtype in (float32, float64) else float32)


def _as_input(out: Tensor, x: Tensor) -> Tensor:
    """A float16 input's result back in float16."""
    return out.cast(float16) if x.dtype is float16 else out


def _eps(x: Tensor) -> float:
    return 2.0**-52 if x.dtype is float64 else 2.0**-23


def _round_robin(n: int) -> list[tuple[list[int], list[int]]]:
    """The n - 1 rounds of a tournament between n (even) columns: each round pairs every
    column with another, and every pair meets once."""
    players = list(range(n))
    rounds = []
    for _ in range(n - 1):
        half = n // 2
        rounds.append((players[:half], players[half:][::-1]))
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def _rotate(w: Tensor, v: Tensor, p: list[int], q: list[int], tol: float
            ) -> tuple[Tensor, Tensor, Tensor]:
    """One round of Jacobi rotations: the column pairs (p[i], q[i]) of `w` made orthogonal,
    `v` rotated alike; with the largest cosine between a pair before its rotation."""
    order = p + q
    back = [order.index(i) for i in range(len(order))]
    wp, wq = index_select(w, -1, p), index_select(w, -1, q)
    alpha, beta = sum(wp * wp, dim=-2), sum(wq * wq, dim=-2)
    gamma = sum(wp * wq, dim=-2)
    scale = (alpha * beta).sqrt()
    cosine = where(scale > 0, abs(gamma) / where(scale > 0, scale, 1.0), 0.0)
    zeta = (beta - alpha) / where(gamma == 0, 1.0, 2 * gamma)
    z = abs(zeta)
    root = where(z > 1, z * (1 + (1 / where(z > 1, z, 1.0)) ** 2).sqrt(), (1 + z * z).sqrt())
    t = where(zeta >= 0, 1.0, -1.0) / (z + root)
    t = where(cosine > tol, t, 0.0)
    c = (1 + t * t).rsqrt()
    s = c * t
    c, s = unsqueeze(c, -2), unsqueeze(s, -2)

    def turn(a: Tensor) -> Tensor:
        ap, aq = index_select(a, -1, p), index_select(a, -1, q)
        return index_select(cat([c * ap - s * aq, s * ap + c * aq], -1), -1, back)

    return turn(w), turn(v), amax(cosine)


def _jacobi(x: Tensor) -> tuple[Tensor, Tensor]:
    """(W, V) with ``x @ V = W``, V orthogonal and W's columns orthogonal, for a batch of
    matrices with at least as many rows as columns."""
    n = x.shape[-1]
    width = n + n % 2  # an odd count gets a zero column, which no rotation moves
    w = cat([x, full(x.shape[:-1] + (width - n,), 0.0, x.dtype, x.device)], -1)
    v = broadcast_to(eye(width, dtype=x.dtype, device=x.device), x.shape[:-2] + (width, width))
    tol = _eps(x) * x.shape[-2]
    for _ in range(MAX_SWEEPS):
        worst = []
        for p, q in _round_robin(width):
            w, v, cosine = _rotate(w, v, p, q, tol)
            worst.append(cosine)
        if width < 2 or amax(stack(worst)).item() <= tol:
            break
    return w[..., :n], v[..., :n, :n]


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The reduced singular value decomposition ``x = U @ diag(S) @ Vh``, singular values
    descending. Only the reduced form is computed (`full_matrices` must be False for a
    non-square matrix); the columns of U for zero singular values are zero."""
    a = _matrices(x, "svd")
    rows, cols = a.shape[-2:]
    if full_matrices and rows != cols:
        raise ArgumentError("svd computes the reduced decomposition: pass full_matrices=False")
    if rows < cols:
        u, s, vh = svd(a.mT, full_matrices=False)
        return SVDResult(_as_input(vh.mT, x), _as_input(s, x), _as_input(u.mT, x))
    w, v = _jacobi(a)
    norms = sum(w * w, dim=-2).sqrt()
    order = argsort(norms, dim=-1, descending=True)
    s = gather(norms, -1, order)
    columns = broadcast_to(unsqueeze(order, -2), w.shape)
    u = gather(w, -1, columns) / unsqueeze(where(s > 0, s, 1.0), -2)
    vh = gather(v, -1, broadcast_to(unsqueeze(order, -2), v.shape)).mT
    return SVDResult(_as_input(u, x), _as_input(s, x), _as_input(vh, x))


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values, descending."""
    return svd(x, full_matrices=False).S


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices (the lower
    triangle is not read apart: `x` is taken as given), from the SVD of ``x + c I`` with c
    the Frobenius norm, which makes it positive semi-definite: its singular vectors are
    then eigenvectors, and its singular values the eigenvalues plus c."""
    a = _matrices(x, "eigh", square=True)
    n = a.shape[-1]
    shift = unsqueeze(unsqueeze(sum(a * a, dim=(-2, -1)).sqrt(), -1), -1)
    _, v = _jacobi(a + shift * eye(n, dtype=a.dtype, device=a.device))
    values = sum(v * matmul(a, v), dim=-2)  # the Rayleigh quotients, exact for eigenvectors
    order = argsort(values, dim=-1)
    vectors = gather(v, -1, broadcast_to(unsqueeze(order, -2), v.shape))
    return EighResult(_as_input(gather(values, -1, order), x), _as_input(vectors, x))


def eigvalsh(x: Tensor, /) -> Tensor:
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(x).eigenvalues


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The lower (or `upper`) triangular factor L of symmetric positive-definite matrices,
    ``x = L @ L.mT``, column by column; a matrix that is not positive definite gives NaN."""
    a = _matrices(x, "cholesky", square=True)
    n = a.shape[-1]
    rows = arange(n, device=a.device)
    factor = full(a.shape[:-1] + (0,), 0.0, a.dtype, a.device)
    for j in range(n):
        known = unsqueeze(factor[..., j, :], -1)
        column = a[..., :, j] - matmul(factor, known)[..., 0]
        column = where(rows >= j, column / column[..., j:j + 1].sqrt(), 0.0)
        factor = cat([factor, unsqueeze(column, -1)], -1)
    return _as_input(factor.mT if upper else factor, x)


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """The reduced QR decomposition ``x = Q @ R`` by Gram-Schmidt with each column
    orthogonalised twice, R's diagonal non-negative; "complete" only where it is the same
    (at least as many columns as rows)."""
    a = _matrices(x, "qr")
    rows, cols = a.shape[-2:]
    if mode not in ("reduced", "complete") or (mode == "complete" and rows > cols):
        raise ArgumentError(f"qr computes mode='reduced' (and 'complete' for M <= N), got "
                            f"mode={mode!r} for shape {x.shape}")
    q = full(a.shape[:-1] + (0,), 0.0, a.dtype, a.device)
    r_columns = []
    for j in range(cols):
        v = unsqueeze(a[..., :, j], -1)
        h = matmul(q.mT, v)
        if j < rows:
            v = v - matmul(q, h)
            again = matmul(q.mT, v)
            v, h = v - matmul(q, again), h + again
            norm = sum(v * v, dim=-2, keepdim=True).sqrt()
            q = cat([q, v / where(norm > 0, norm, 1.0)], -1)
            h = cat([h, norm], -2)
        r_columns.append(cat([h, full(h.shape[:-2] + (min(rows, cols) - h.shape[-2], 1), 0.0,
                                      h.dtype, h.device)], -2))
    return QRResult(_as_input(q, x), _as_input(triu(cat(r_columns, -1)), x))


def _eliminate(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Gauss-Jordan elimination with partial pivoting of ``[a | b]``: (the solution of
    ``a @ X = b``, the pivots, the number of row swaps), batched."""
    n = a.shape[-1]
    m = cat([a, b], -1)
    rows = arange(n, device=a.device)
    pivots, swaps = [], full(a.shape[:-2], 0, device=a.device)
    for k in range(n):
        below = where(rows >= k, abs(m[..., :, k]), -1.0)
        p = unsqueeze(below.argmax(dim=-1), -1)
        perm = where(rows == k, p, where(rows == p, k, rows))
        m = gather(m, -2, broadcast_to(unsqueeze(perm, -1), m.shape))
        swaps = swaps + (p[..., 0] != k).int()
        pivot = m[..., k:k + 1, k:k + 1]
        pivots.append(pivot[..., 0, 0])
        factors = where(unsqueeze(rows, -1) == k, 0.0, m[..., :, k:k + 1] / pivot)
        m = m - factors * m[..., k:k + 1, :]
    diagonal = stack(pivots, -1)
    return m[..., :, n:] / unsqueeze(diagonal, -1), diagonal, swaps


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution X of ``x1 @ X = x2`` (`x2` a batch of matrices, or one vector), the
    batch dims broadcast."""
    a = _matrices(x1, "solve", square=True)
    vector = x2.ndim == 1
    b = unsqueeze(x2, -1) if vector else x2
    b = b.cast(a.dtype)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    out = _eliminate(a, broadcast_to(b, batch + b.shape[-2:]))[0]
    return _as_input(out[..., 0] if vector else out, x1)


def inv(x: Tensor, /) -> Tensor:
    """The inverses of square matrices."""
    a = _matrices(x, "inv", square=True)
    identity = eye(a.shape[-1], dtype=a.dtype, device=a.device)
    return _as_input(_eliminate(a, broadcast_to(identity, a.shape))[0], x)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the log of the magnitude of each determinant (the pivots of the
    elimination: their product, and the sign of the row swaps)."""
    a = _matrices(x, "slogdet", square=True)
    _, pivots, swaps = _eliminate(a, a[..., :, :0])
    sign = prod(pivots.sign(), dim=-1) * (1 - 2 * (swaps % 2))
    return SlogdetResult(_as_input(sign, x), _as_input(sum(abs(pivots).log(), dim=-1), x))


def det(x: Tensor, /) -> Tensor:
    """The determinants of square matrices."""
    a = _matrices(x, "det", square=True)
    _, pivots, swaps = _eliminate(a, a[..., :, :0])
    return _as_input(prod(pivots, dim=-1) * (1 - 2 * (swaps % 2)), x)


def _cutoff(values: Tensor, shape: tuple[int, ...], rtol: float | Tensor | None) -> Tensor:
    """The singular values below which a matrix of `shape` counts as rank-deficient."""
    tol = max(shape[-2:]) * _eps(values) if rtol is None else rtol
    return unsqueeze(amax(values, dim=-1), -1) * tol


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse: the SVD's, singular values below `rtol` times the
    largest (by default max(M, N) times epsilon) taken as zero."""
    u, s, vh = svd(_matrices(x, "pinv"), full_matrices=False)
    inverse = where(s > _cutoff(s, x.shape, rtol), 1 / where(s > 0, s, 1.0), 0.0)
    return _as_input(matmul(vh.mT * unsqueeze(inverse, -2), u.mT), x)


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """How many singular values exceed `rtol` times the largest (int32)."""
    s = svdvals(_matrices(x, "matrix_rank"))
    return sum(s > _cutoff(s, x.shape, rtol), dim=-1)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """`x` to the integer power `n` by repeated squaring (the inverse's, for n < 0)."""
    _matrices(x, "matrix_power", square=True)
    base = inv(x) if n < 0 else x
    out = broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape)
    for bit in bin(abs(n))[2:]:
        out = matmul(out, out)
        if bit == "1":
            out = matmul(out, base)
    return out
