"""Position information for attention models: `PositionalEncoding`, the fixed sinusoidal
table of "Attention is all you need" added to the embeddings, and `RotaryEmbedding`, the
rotary position embedding (RoFormer) applied to queries and keys.

Neither is a PyTorch class. `PositionalEncoding` keeps the layout of the PyTorch tutorial's
module of that name (buffer ``pe`` of shape (max_len, 1, d_model)), so models written after
the tutorial load their state_dicts unchanged.

Both tables are computed in float64 where the device has it (then rounded once to the
model's dtype), so positions in the thousands keep full float32 accuracy; on a device
without float64 they are computed in float32.
"""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ..devices import device as as_device
from ..dtypes import default_float, float32, float64
from ..errors import ArgumentError, ShapeError
from ..ops.creation import arange
from ..ops.movement import cat, stack
from ..shape import norm_dim
from . import functional as F
from .module import Module


def _work_dtype(device: Any) -> Any:
    """float64 where `device` stores it, else float32."""
    return float64 if float64 in device.backend.dtypes else float32


def _angles(positions: Tensor, dim: int, base: float) -> Tensor:
    """``positions[p] * base^(-2i / dim)`` for i < ceil(dim / 2): (len(positions),
    ceil(dim / 2)), the angle table both encodings use."""
    exponents = arange(0, dim, 2, dtype=positions.dtype, device=positions.device) / dim
    return positions.unsqueeze(1) * (exponents * -math.log(base)).exp().unsqueeze(0)


def _check_positive(value: Any, name: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{owner}: {name} must be an int >= 1, got {value!r}")


def _probability(p: Any, owner: str) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{owner}: dropout must be a probability in [0, 1], got {p!r}")
    return float(p)


class PositionalEncoding(Module):
    """Add the sinusoidal position table to x, then apply dropout::

        pe[p, 2i] = sin(p / 10000^(2i / d_model)),  pe[p, 2i + 1] = cos(p / 10000^(2i / d_model))

    x is (L, N, d_model), (N, L, d_model) with ``batch_first``, or unbatched (L, d_model),
    with L <= `max_len`. The table is the buffer ``pe``, (max_len, 1, d_model).

    >>> import pyburn
    >>> enc = pyburn.nn.PositionalEncoding(4, dropout=0.0, device="flex")
    >>> [round(v, 3) for v in enc(pyburn.zeros(2, 1, 4, device="flex"))[1, 0].tolist()]
    [0.841, 0.54, 0.01, 1.0]
    """

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000,
                 batch_first: bool = False, device: Any = None, dtype: Any = None):
        super().__init__()
        _check_positive(d_model, "d_model", "PositionalEncoding")
        _check_positive(max_len, "max_len", "PositionalEncoding")
        self.d_model = d_model
        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = _probability(dropout, "PositionalEncoding")
        dev = as_device(device)
        angles = _angles(arange(max_len, dtype=_work_dtype(dev), device=dev), d_model, 10000.0)
        # interleave sin and cos columns; an odd d_model has one sin column more
        pairs = stack([angles.sin(), angles.cos()], -1).reshape(max_len, -1)[:, :d_model]
        self.register_buffer("pe", pairs.cast(dtype or default_float).unsqueeze(1))

    def forward(self, x: Tensor) -> Tensor:
        """``dropout(x + pe[:L])`` with L the sequence length of x."""
        if not isinstance(x, Tensor) or x.ndim not in (2, 3) or x.shape[-1] != self.d_model:
            raise ShapeError(f"PositionalEncoding: x must be (L, N, {self.d_model}), "
                             f"(N, L, {self.d_model}) with batch_first, or (L, "
                             f"{self.d_model}), got {getattr(x, 'shape', x)}")
        seq_dim = 1 if self.batch_first and x.ndim == 3 else 0
        length = x.shape[seq_dim]
        if length > self.max_len:
            raise ShapeError(f"PositionalEncoding: sequence length {length} (x shape {x.shape}) "
                             f"exceeds max_len {self.max_len}")
        pe = self.pe[:length]
        if x.ndim == 2:
            pe = pe.squeeze(1)
        elif seq_dim == 1:
            pe = pe.transpose(0, 1)
        return F.dropout(x + pe, self.dropout, self.training)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, dropout={self.dropout}, max_len={self.max_len}"
                + (", batch_first=True" if self.batch_first else ""))


class RotaryEmbedding(Module):
    """Rotary position embedding (RoPE, RoFormer): rotate pairs of features of queries and
    keys by angles proportional to their position, so that ``q_m . k_n`` depends on m - n.

    With ``theta_i = base^(-2i / dim)`` for i < dim / 2, the feature pair i of the vector
    at position p is rotated by ``p * theta_i``::

        (a, b) -> (a cos(p theta_i) - b sin(p theta_i),  b cos(p theta_i) + a sin(p theta_i))

    Which features form pair i:

    - ``interleaved=False`` (default; GPT-NeoX, Hugging Face LLaMA checkpoints): the two
      halves, a = x[i], b = x[i + dim / 2] ("rotate half").
    - ``interleaved=True`` (RoFormer, GPT-J, Meta's LLaMA reference code): neighbours,
      a = x[2i], b = x[2i + 1].

    Only the first `dim` features of the last axis are rotated (``dim`` smaller than the head
    size gives "partial rotary"); the rest pass through. Positions run along `seq_dim`
    (default -2: (..., L, head_dim), the layout ``F.scaled_dot_product_attention`` takes),
    starting at `offset` (for decoding with a key/value cache). The module has no parameters
    or buffers; the angle table is computed per call.

    >>> import pyburn
    >>> rope = pyburn.nn.RotaryEmbedding(4)
    >>> q = pyburn.ones(1, 2, 3, 4, device="flex")      # (N, heads, L, head_dim)
    >>> rope(q).shape
    (1, 2, 3, 4)
    """

    def __init__(self, dim: int, base: float = 10000.0, interleaved: bool = False,
                 seq_dim: int = -2):
        super().__init__()
        _check_positive(dim, "dim", "RotaryEmbedding")
        if dim % 2:
            raise ArgumentError(f"RotaryEmbedding: dim must be even, got {dim}")
        if isinstance(base, bool) or not isinstance(base, (int, float)) or base <= 0:
            raise ArgumentError(f"RotaryEmbedding: base must be a positive number, got "
                                f"{base!r}")
        self.dim = dim
        self.base = float(base)
        self.interleaved = interleaved
        self.seq_dim = seq_dim

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x with the features of position ``offset + t`` (t along `seq_dim`) rotated."""
        if not isinstance(x, Tensor) or x.ndim < 2 or x.shape[-1] < self.dim:
            raise ShapeError(f"RotaryEmbedding: x must have at least 2 dims and at least "
                             f"dim={self.dim} features in the last, got "
                             f"{getattr(x, 'shape', x)}")
        seq = norm_dim(self.seq_dim, x.ndim)
        if seq == x.ndim - 1:
            raise ArgumentError("RotaryEmbedding: seq_dim cannot be the feature (last) dim")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ArgumentError(f"RotaryEmbedding: offset must be an int >= 0, got {offset!r}")
        length, half = x.shape[seq], self.dim // 2
        positions = arange(offset, offset + length, dtype=_work_dtype(x.device), device=x.device)
        angles = _angles(positions, self.dim, self.base)
        view = [1] * x.ndim
        view[seq], view[-1] = length, half
        cos, sin = (t.cast(x.dtype).reshape(view) for t in (angles.cos(), angles.sin()))
        rotated, rest = x[..., :self.dim], x[..., self.dim:]
        if self.interleaved:
            pairs = rotated.reshape(x.shape[:-1] + (half, 2))
            a, b = pairs[..., 0], pairs[..., 1]
            out = stack([a * cos - b * sin, b * cos + a * sin], -1).reshape(rotated.shape)
        else:
            a, b = rotated[..., :half], rotated[..., half:]
            out = cat([a * cos - b * sin, b * cos + a * sin], -1)
        return out if rest.shape[-1] == 0 else cat([out, rest], -1)

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, base={self.base}, interleaved={self.interleaved}"
                + (f", seq_dim={self.seq_dim}" if self.seq_dim != -2 else ""))
