"""The Transformer of "Attention is all you need", with PyTorch's classes, arguments, masks
and parameter names: `TransformerEncoderLayer`, `TransformerDecoderLayer`, the stacks
`TransformerEncoder` and `TransformerDecoder` (``num_layers`` deep copies of a layer, plus an
optional final norm) and the whole encoder-decoder `Transformer`.

Masks are PyTorch's: bool masks mark with True what may NOT be attended to, float masks are
added to the attention scores (see `MultiheadAttention`). Every layer is made of
`MultiheadAttention`, `Linear`, `LayerNorm` and `Dropout`, so a PyTorch state_dict loads
unchanged (``layers.0.self_attn.in_proj_weight``, ``layers.0.linear1.weight``, ...).
Differences: PyTorch's inference fast path and nested tensors are not reproduced
(``enable_nested_tensor`` and ``mask_check`` are accepted and have no effect): the output at a
padded position is what the layers compute there, where PyTorch's nested fast path gives 0.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..ops.creation import full
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

Activation = str | Callable[[Tensor], Tensor]


def _activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    """"relu" and "gelu" by name, or any callable (a function or a module)."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise ArgumentError(f"activation must be 'relu', 'gelu' or a callable, got "
                            f"{activation!r}")
    if not callable(activation):
        raise ArgumentError(f"activation must be 'relu', 'gelu' or a callable, got "
                            f"{type(activation).__name__}")
    return activation


class _FeedForward(Module):
    """What both layer kinds share: the position-wise feed-forward block and the
    post-/pre-norm residual wiring (PyTorch's attribute names, so the state_dicts match)."""

    activation: Callable[[Tensor], Tensor]
    norm_first: bool

    def _init_feed_forward(self, d_model: int, dim_feedforward: int, dropout: float,
                           bias: bool, device: Any, dtype: Any) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)

    def _ff_block(self, x: Tensor, dropout: Dropout) -> Tensor:
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _residual(self, x: Tensor, norm: LayerNorm, block: Callable[[Tensor], Tensor]) -> Tensor:
        """``x + block(norm(x))`` (norm_first) or ``norm(x + block(x))``."""
        return x + block(norm(x)) if self.norm_first else norm(x + block(x))


def _attend(attention: MultiheadAttention, dropout: Dropout, x: Tensor, source: Tensor,
            mask: Tensor | None, padding: Tensor | None, is_causal: bool) -> Tensor:
    out = attention(x, source, source, attn_mask=mask, key_padding_mask=padding,
                    need_weights=False, is_causal=is_causal)[0]
    return dropout(out)


class TransformerEncoderLayer(_FeedForward):
    """Self-attention then a feed-forward block, each with a residual connection and a
    LayerNorm: after the residual (the paper, the default) or, with ``norm_first``, before
    the block.

    src is (S, N, d_model), (N, S, d_model) with ``batch_first``, or unbatched (S, d_model).

    >>> import pyburn
    >>> layer = pyburn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, device="flex")
    >>> layer(pyburn.ones(5, 3, 8, device="flex")).shape
    (5, 3, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self._init_feed_forward(d_model, dim_feedforward, dropout, bias, device, dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                               dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                               dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        # last, as in PyTorch: an activation module with parameters (PReLU) comes last in
        # the state_dict there too
        self.activation = _activation(activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """Encode `src`; `src_mask` (S, S) or (N * nhead, S, S), `src_key_padding_mask`
        (N, S), `is_causal` as in `MultiheadAttention`."""
        x = self._residual(src, self.norm1, lambda y: _attend(
            self.self_attn, self.dropout1, y, y, src_mask, src_key_padding_mask, is_causal))
        return self._residual(x, self.norm2, lambda y: self._ff_block(y, self.dropout2))


class TransformerDecoderLayer(_FeedForward):
    """Self-attention over the target, attention to the encoder's output (`memory`), then a
    feed-forward block; residual connections and LayerNorms as in
    `TransformerEncoderLayer`.

    >>> import pyburn
    >>> layer = pyburn.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True,
    ...                                           device="flex")
    >>> tgt, memory = pyburn.ones(3, 4, 8, device="flex"), pyburn.ones(3, 6, 8, device="flex")
    >>> layer(tgt, memory).shape
    (3, 4, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, device=device,
                                                 dtype=dtype)
        self._init_feed_forward(d_model, dim_feedforward, dropout, bias, device, dtype)
        self.norm_first = norm_first
        for name in ("norm1", "norm2", "norm3"):
            setattr(self, name, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                                          dtype=dtype))
        for name in ("dropout1", "dropout2", "dropout3"):
            setattr(self, name, Dropout(dropout))
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """Decode `tgt` (T, N, d_model) attending to `memory` (S, N, d_model) (batch first:
        N leads); `tgt_mask` (T, T), `memory_mask` (T, S), padding masks (N, T) and (N, S)."""
        x = self._residual(tgt, self.norm1, lambda y: _attend(
            self.self_attn, self.dropout1, y, y, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self._residual(x, self.norm2, lambda y: _attend(
            self.multihead_attn, self.dropout2, y, memory, memory_mask,
            memory_key_padding_mask, memory_is_causal))
        return self._residual(x, self.norm3, lambda y: self._ff_block(y, self.dropout3))


def _clones(layer: Module, num_layers: int, owner: str) -> ModuleList:
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
        raise ArgumentError(f"{owner}: num_layers must be an int >= 1, got {num_layers!r}")
    if not isinstance(layer, Module):
        raise ArgumentError(f"{owner} stacks copies of a Module, got {type(layer).__name__}")
    return ModuleList(copy.deepcopy(layer) for _ in range(num_layers))


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` applied in turn, then `norm` if given.

    >>> import pyburn
    >>> layer = pyburn.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, device="flex")
    >>> encoder = pyburn.nn.TransformerEncoder(layer, num_layers=2)
    >>> list(encoder.state_dict())[0]
    'layers.0.self_attn.in_proj_weight'
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        # PyTorch's fast-path switches: accepted for compatibility, nothing to switch here
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Encode `src` through every layer with the same masks."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer` applied in turn, each attending to the
    same `memory`, then `norm` if given."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Decode `tgt` through every layer with the same masks and memory."""
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """The encoder-decoder Transformer: `TransformerEncoder` and `TransformerDecoder` stacks,
    each ending in a LayerNorm; every weight matrix is re-initialised Glorot-uniform, as in
    PyTorch. ``model(src, tgt)`` returns (T, N, d_model) ((N, T, d_model) batch first).

    >>> import pyburn
    >>> model = pyburn.nn.Transformer(8, 2, 1, 1, dim_feedforward=16, device="flex")
    >>> src, tgt = pyburn.ones(6, 2, 8, device="flex"), pyburn.ones(4, 2, 8, device="flex")
    >>> mask = model.generate_square_subsequent_mask(4, device="flex")
    >>> model(src, tgt, tgt_mask=mask).shape
    (4, 2, 8)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        layer_args = dict(dim_feedforward=dim_feedforward, dropout=dropout,
                          activation=activation, layer_norm_eps=layer_norm_eps,
                          batch_first=batch_first, norm_first=norm_first, bias=bias,
                          device=device, dtype=dtype)
        norm_args = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        if custom_encoder is None:
            custom_encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_args), num_encoder_layers,
                LayerNorm(d_model, **norm_args))
        if custom_decoder is None:
            custom_decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_args), num_decoder_layers,
                LayerNorm(d_model, **norm_args))
        self.encoder = custom_encoder
        self.decoder = custom_decoder
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode `src` (S, N, E), then decode `tgt` (T, N, E) attending to the result
        (batch first: N leads; unbatched: no N)."""
        batch_dim = 0 if self.batch_first else 1
        if src.ndim != tgt.ndim or (src.ndim == 3 and
                                    src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise ShapeError(f"Transformer: src {src.shape} and tgt {tgt.shape} must have the "
                             f"same batch size")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature size of src {src.shape} and tgt "
                             f"{tgt.shape} must be d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The (sz, sz) float causal mask: 0 on and below the diagonal, -inf above."""
        return full((sz, sz), -math.inf, dtype=dtype, device=device).triu(1)
