"""Llama-architecture decoders (Llama 2 and 3, TinyLlama, ...): `LlamaForCausalLM`, laid out as
Hugging Face ``transformers`` lays it out, so that their ``.safetensors`` and ``.pth`` files
load with no key mapping, and `KVCache`, the keys and values of the positions seen so far,
which make each next token's forward pass cost one position.

The architecture ("LLaMA", Touvron et al. 2023; "Llama 2", 2023; "The Llama 3 herd of models",
2024): token embeddings, then `num_hidden_layers` pre-norm decoder layers, each
``x + attention(rms_norm(x))`` then ``x + mlp(rms_norm(x))``, a final RMSNorm and a linear head
to the vocabulary (or the embedding matrix again, with ``tie_word_embeddings``). Attention is
causal and grouped-query (GQA, Ainslie et al. 2023: `num_key_value_heads` key/value heads,
each shared by a group of query heads), with rotary position embeddings on queries and keys.
The MLP is SwiGLU (Shazeer 2020): ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

The rotary embedding follows transformers' convention for these checkpoints: the two halves of
each head are rotated against each other ("rotate half"; the query and key projections' rows
were permuted to fit when Meta's weights were converted). The frequencies
``rope_theta^(-2i / head_dim)`` are rounded to float32 at each step where transformers computes
them in float32, and the angles ``position * frequency`` are float32 products, so that the
logits agree with transformers' at long positions too, not only at short ones. Llama 3.1 and
3.2's frequency scaling (``"rope_type": "llama3"``) is applied when the configuration has it.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any

from .._tensor import Tensor
from ..dtypes import bool_, float32
from ..errors import ArgumentError, DTypeError, ShapeError
from ..nn import functional as F
from ..nn.containers import ModuleList
from ..nn.embedding import Embedding
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import RMSNorm
from ..ops.creation import arange, ones, tensor
from ..ops.movement import cat
from ..store.lazy import key_predicate
from .registry import ModelEntry, register


def _check_positive(value: Any, name: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ArgumentError(f"{owner}: {name} must be a positive number, got {value!r}")


def _check_count(value: Any, name: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{owner}: {name} must be an int >= 1, got {value!r}")


def _float32(values: list[float]) -> list[float]:
    """Each value rounded to the nearest float32."""
    return array("f", values).tolist()


@dataclass(frozen=True)
class Llama3RopeScaling:
    """Llama 3.1's rotary frequency scaling, which stretches a model pre-trained on
    `original_max_position_embeddings` positions to longer contexts. With the wavelength of a
    frequency ``2 pi / f`` and L the original context: wavelengths shorter than
    ``L / high_freq_factor`` keep their frequency, those longer than ``L / low_freq_factor``
    have it divided by `factor`, and those in between are interpolated smoothly between the
    two, with weight ``s = (L / wavelength - low_freq_factor) / (high_freq_factor -
    low_freq_factor)`` on the unscaled frequency.

    >>> Llama3RopeScaling(factor=8.0).apply([1.0, 1e-4])
    [1.0, 1.25e-05]
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self) -> None:
        owner = "Llama3RopeScaling"
        for name in ("factor", "low_freq_factor", "high_freq_factor"):
            _check_positive(getattr(self, name), name, owner)
        _check_count(self.original_max_position_embeddings, "original_max_position_embeddings",
                     owner)
        if not self.low_freq_factor < self.high_freq_factor:
            raise ArgumentError(f"{owner}: low_freq_factor ({self.low_freq_factor}) must be "
                                f"below high_freq_factor ({self.high_freq_factor})")

    def apply(self, frequencies: list[float]) -> list[float]:
        """The scaled `frequencies`."""
        context = self.original_max_position_embeddings
        low, high = self.low_freq_factor, self.high_freq_factor
        scaled = []
        for f in frequencies:
            wavelength = 2 * math.pi / f
            if wavelength < context / high:
                scaled.append(f)
            elif wavelength > context / low:
                scaled.append(f / self.factor)
            else:
                s = (context / wavelength - low) / (high - low)
                scaled.append((1 - s) * f / self.factor + s * f)
        return scaled


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama model, with the names of transformers' ``config.json``; the
    defaults are transformers' (Llama 2 7B's). `num_key_value_heads` None means one key/value
    head per query head (no grouping); `head_dim` None means ``hidden_size //
    num_attention_heads``.

    >>> config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
    ...                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    >>> config.head_size, config.kv_heads, config.replace(head_dim=32).head_size
    (16, 2, 32)
    """

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: Llama3RopeScaling | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False

    def __post_init__(self) -> None:
        owner = "LlamaConfig"
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "max_position_embeddings"):
            _check_count(getattr(self, name), name, owner)
        for name in ("num_key_value_heads", "head_dim"):
            if getattr(self, name) is not None:
                _check_count(getattr(self, name), name, owner)
        _check_positive(self.rms_norm_eps, "rms_norm_eps", owner)
        _check_positive(self.rope_theta, "rope_theta", owner)
        if self.rope_scaling is not None and not isinstance(self.rope_scaling,
                                                            Llama3RopeScaling):
            raise ArgumentError(f"{owner}: rope_scaling must be a Llama3RopeScaling or None, "
                                f"got {self.rope_scaling!r}")
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ArgumentError(f"{owner}: hidden_size ({self.hidden_size}) must be divisible "
                                f"by num_attention_heads ({self.num_attention_heads}), or "
                                "head_dim given")
        if self.head_size % 2:
            raise ArgumentError(f"{owner}: the head size must be even (rotary embeddings "
                                f"rotate pairs of features), got {self.head_size}")
        if self.num_attention_heads % self.kv_heads:
            raise ArgumentError(f"{owner}: num_attention_heads ({self.num_attention_heads}) "
                                f"must be a multiple of num_key_value_heads ({self.kv_heads})")

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads."""
        return self.num_attention_heads if self.num_key_value_heads is None \
            else self.num_key_value_heads

    @property
    def head_size(self) -> int:
        """The features per attention head."""
        return self.hidden_size // self.num_attention_heads if self.head_dim is None \
            else self.head_dim

    def replace(self, **changes: Any) -> LlamaConfig:
        """This configuration with some fields changed (``create(name, **changes)`` uses it)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ArgumentError(f"LlamaConfig has no field {', '.join(map(repr, unknown))}; "
                                f"its fields: {', '.join(sorted(names))}")
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LlamaConfig:
        """The configuration in a transformers ``config.json``'s contents. Both layouts of
        the rotary settings are read: ``rope_theta`` and ``rope_scaling`` at the top (before
        transformers 5) and ``rope_parameters`` (since). Keys that do not change the
        computation (token ids, dtype, ...) are ignored; an activation other than SiLU or a
        rotary scaling other than Llama 3's raises `ArgumentError`."""
        activation = data.get("hidden_act", "silu")
        if activation != "silu":
            raise ArgumentError(f"LlamaConfig: hidden_act {activation!r} is not supported "
                                "(Llama's MLP uses 'silu')")
        rope = dict(data.get("rope_parameters") or data.get("rope_scaling") or {})
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind not in ("default", "llama3"):
            raise ArgumentError(f"LlamaConfig: rope_type {kind!r} is not supported (only "
                                "'default' and 'llama3')")
        scaling = None if kind == "default" else Llama3RopeScaling(
            **{f.name: rope[f.name] for f in fields(Llama3RopeScaling) if f.name in rope})
        settings = {f.name: data[f.name] for f in fields(cls)
                    if f.name in data and f.name not in ("rope_theta", "rope_scaling")}
        theta = data.get("rope_theta", rope.get("rope_theta", cls.rope_theta))
        return cls(**settings, rope_theta=theta, rope_scaling=scaling)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> LlamaConfig:
        """The configuration in a transformers ``config.json`` file (see `from_dict`)."""
        with open(path, encoding="utf-8") as file:
            return cls.from_dict(json.load(file))


def rope_frequencies(config: LlamaConfig) -> list[float]:
    """The rotary frequencies ``rope_theta^(-2i / head_size)`` for i < head_size / 2, as
    float32 values rounded where transformers rounds them (the exponent, the power, its
    inverse), then scaled by the configuration's `Llama3RopeScaling` if any.

    >>> rope_frequencies(LlamaConfig(hidden_size=8, num_attention_heads=2))
    [1.0, 0.009999999776482582]
    """
    size = config.head_size
    exponents = _float32([i / size for i in range(0, size, 2)])
    powers = _float32([config.rope_theta ** e for e in exponents])
    frequencies = _float32([1.0 / p for p in powers])
    if config.rope_scaling is not None:
        frequencies = _float32(config.rope_scaling.apply(frequencies))
    return frequencies


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (..., L, head_size) with the feature pairs (i, i + head_size / 2) of position t
    rotated by the angle whose cosine and sine are ``cos[t, i]``, ``sin[t, i]`` (L,
    head_size / 2): the "rotate half" convention."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return cat([a * cos - b * sin, b * cos + a * sin], -1)


class KVCache:
    """The keys and values each attention layer computed for the positions seen so far, so
    that the next forward pass computes only its new positions: each layer's grows by the
    positions of every forward pass that is given the cache (a prompt, then one token at a
    time). `length` is the number of positions held; `mask`, which of them are tokens rather
    than padding: bool (N, length), or None while every one is a token (no pass was given an
    ``attention_mask``).

    >>> import pyburn
    >>> config = LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
    ...                      num_hidden_layers=1, num_attention_heads=2)
    >>> model = LlamaForCausalLM(config, device="flex")
    >>> cache = model.new_cache()
    >>> logits = model(pyburn.tensor([[1, 2, 3]], device="flex"), cache=cache)
    >>> cache.length, model(pyburn.tensor([[4]], device="flex"), cache=cache).shape
    (3, (1, 1, 16))
    """

    def __init__(self, num_layers: int):
        _check_count(num_layers, "num_layers", "KVCache")
        self.keys: list[Tensor | None] = [None] * num_layers
        self.values: list[Tensor | None] = [None] * num_layers
        self.mask: Tensor | None = None

    @property
    def num_layers(self) -> int:
        """The number of attention layers it holds keys and values for."""
        return len(self.keys)

    @property
    def length(self) -> int:
        """The number of positions held (those of the first layer)."""
        first = self.keys[0]
        return 0 if first is None else first.shape[-2]

    def extend_mask(self, tokens: Tensor | None, n: int, length: int,
                    device: Any) -> Tensor | None:
        """Add to `mask` the bool `tokens` (n, length) of the next pass's positions (None: all
        tokens); returns the new mask (n, held + length), still None while there is no
        padding. Called once per pass, before the layers add their keys."""
        if tokens is None and self.mask is None:
            return None
        held = self.mask if self.mask is not None else \
            ones(n, self.length, dtype=bool_, device=device)
        new = tokens if tokens is not None else ones(n, length, dtype=bool_, device=device)
        self.mask = cat([held, new], 1)
        return self.mask

    def update(self, layer: int, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Append the keys and values (N, kv_heads, L, head_size) of L new positions to
        `layer`'s; returns all of that layer's keys and values."""
        past_keys, past_values = self.keys[layer], self.values[layer]
        if past_keys is not None and past_values is not None:
            keys, values = cat([past_keys, keys], 2), cat([past_values, values], 2)
        self.keys[layer], self.values[layer] = keys, values
        return keys, values


class LlamaAttention(Module):
    """Causal grouped-query self-attention with rotary embeddings: ``q_proj``, ``k_proj``,
    ``v_proj`` (to `num_attention_heads` query and `num_key_value_heads` key/value heads of
    `head_size` features) and ``o_proj`` back to `hidden_size`."""

    def __init__(self, config: LlamaConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.heads, self.kv_heads, self.head_size = (config.num_attention_heads,
                                                     config.kv_heads, config.head_size)
        hidden, bias = config.hidden_size, config.attention_bias
        self.q_proj = Linear(hidden, self.heads * self.head_size, bias, device, dtype)
        self.k_proj = Linear(hidden, self.kv_heads * self.head_size, bias, device, dtype)
        self.v_proj = Linear(hidden, self.kv_heads * self.head_size, bias, device, dtype)
        self.o_proj = Linear(self.heads * self.head_size, hidden, bias, device, dtype)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: Tensor | None,
                cache: KVCache | None = None, layer: int = 0) -> Tensor:
        """Attention of the positions of x (N, L, hidden_size) to themselves and to the
        `cache`'s (of `layer`), with the rotary `rope` (cos, sin) of their positions and the
        bool `mask` (L, S), or (N, 1, L, S) per row, of allowed pairs (None: every pair)."""
        n, length, _ = x.shape
        q, k, v = ((proj(x).reshape(n, length, heads, self.head_size).transpose(1, 2))
                   for proj, heads in ((self.q_proj, self.heads), (self.k_proj, self.kv_heads),
                                       (self.v_proj, self.kv_heads)))
        q, k = rotate(q, *rope), rotate(k, *rope)
        if cache is not None:
            k, v = cache.update(layer, k, v)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(n, length, self.heads * self.head_size))


class LlamaMLP(Module):
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``, through `intermediate_size`."""

    def __init__(self, config: LlamaConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        hidden, inner, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = Linear(hidden, inner, bias, device, dtype)
        self.up_proj = Linear(hidden, inner, bias, device, dtype)
        self.down_proj = Linear(inner, hidden, bias, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        """The MLP of each position of x (..., hidden_size)."""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(Module):
    """``x + self_attn(input_layernorm(x))``, then ``x + mlp(post_attention_layernorm(x))``."""

    def __init__(self, config: LlamaConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.self_attn = LlamaAttention(config, device, dtype)
        self.mlp = LlamaMLP(config, device, dtype)
        eps, hidden = config.rms_norm_eps, config.hidden_size
        self.input_layernorm = RMSNorm(hidden, eps, device=device, dtype=dtype)
        self.post_attention_layernorm = RMSNorm(hidden, eps, device=device, dtype=dtype)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: Tensor | None,
                cache: KVCache | None = None, layer: int = 0) -> Tensor:
        """The layer on x (N, L, hidden_size) (see `LlamaAttention.forward`)."""
        x = x + self.self_attn(self.input_layernorm(x), rope, mask, cache, layer)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(Module):
    """The decoder without its head: ``embed_tokens``, ``layers``, ``norm``."""

    def __init__(self, config: LlamaConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        self.config = config
        self.frequencies = rope_frequencies(config)
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size, device=device,
                                      dtype=dtype)
        self.layers = ModuleList(LlamaDecoderLayer(config, device, dtype)
                                 for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, device=device, dtype=dtype)

    def _rope(self, positions: Tensor, like: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of `positions`, in like's dtype: (L, head_size / 2) for positions (L,)
        shared by the batch, (N, 1, L, head_size / 2) (one for all heads) for (N, L)."""
        angles = positions.cast(float32).unsqueeze(-1) * tensor(
            self.frequencies, dtype=float32, device=like.device)
        if angles.ndim == 3:
            angles = angles.unsqueeze(1)
        return angles.cos().cast(like.dtype), angles.sin().cast(like.dtype)

    def _check(self, input_ids: Tensor, cache: KVCache | None, attention_mask: Tensor | None,
               position_ids: Tensor | None) -> None:
        """The arguments of `forward`, and that its positions fit the context."""
        if not isinstance(input_ids, Tensor) or input_ids.ndim != 2 or input_ids.shape[1] < 1:
            raise ShapeError(f"LlamaModel takes token ids of shape (N, L) with L >= 1, got "
                             f"{getattr(input_ids, 'shape', type(input_ids).__name__)}")
        for name, given in (("attention_mask", attention_mask), ("position_ids", position_ids)):
            if given is not None and (not isinstance(given, Tensor)
                                      or given.shape != input_ids.shape):
                raise ShapeError(f"LlamaModel: {name} must have the shape of the token ids "
                                 f"{input_ids.shape}, the new positions only (the cache keeps "
                                 f"what it needs of those it holds), got "
                                 f"{getattr(given, 'shape', type(given).__name__)}")
        for name, given, wanted in (("token ids", input_ids, "integer"),
                                    ("position_ids", position_ids, "integer"),
                                    ("attention_mask", attention_mask, "integer or bool")):
            if given is not None and (given.dtype.is_floating_point or
                                      given.dtype.is_bool and wanted == "integer"):
                raise DTypeError(f"LlamaModel takes {wanted} {name}, got {given.dtype.name}")
        if cache is not None and (not isinstance(cache, KVCache)
                                  or cache.num_layers != len(self.layers)):
            raise ArgumentError(f"LlamaModel: cache must be a KVCache of {len(self.layers)} "
                                f"layers (model.new_cache()), got {cache!r}")
        offset = 0 if cache is None else cache.length
        if offset + input_ids.shape[1] > self.config.max_position_embeddings:
            raise ShapeError(f"LlamaModel: positions up to {offset + input_ids.shape[1]} (the "
                             f"cache holds {offset}) exceed max_position_embeddings "
                             f"{self.config.max_position_embeddings}")

    def forward(self, input_ids: Tensor, cache: KVCache | None = None,
                attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """The final hidden states (N, L, hidden_size) of the token ids (N, L), which follow
        the `cache`'s positions (and are added to it) when one is given.

        `attention_mask` (N, L), 1 (or True) for a token and 0 for padding, covers the new
        positions only: the cache keeps the masks of the positions it holds, and a pass
        without one adds tokens. No position attends to padding, and a row's positions
        (`position_ids`, when not given) count its tokens only: the cumulative sum of its mask
        minus 1, so that a left-padded row gives what the prompt alone gives."""
        self._check(input_ids, cache, attention_mask, position_ids)
        offset = 0 if cache is None else cache.length
        n, length = input_ids.shape
        x = self.embed_tokens(input_ids)
        device = x.device
        tokens = None if attention_mask is None else attention_mask.bool()
        if cache is not None:
            tokens = cache.extend_mask(tokens, n, length, device)
        if position_ids is None:
            position_ids = arange(offset, offset + length, dtype=float32, device=device) \
                if tokens is None else tokens.int().cumsum(-1)[:, offset:] - 1
        rope = self._rope(position_ids, x)
        # a position attends to itself and the positions before it that are tokens; one new
        # position with no padding anywhere may attend to every position held, so it needs no
        # mask. Compared rather than tril'd: tril is a `where` on bools, which onnxruntime
        # cannot run in an exported model
        mask = None
        if length > 1 or tokens is not None:
            keys = arange(offset + length, device=device)
            mask = keys <= arange(offset, offset + length, device=device).unsqueeze(1)
            if tokens is not None:
                mask = (mask & tokens.unsqueeze(1)).unsqueeze(1)
        for index, layer in enumerate(self.layers):
            x = layer(x, rope, mask, cache, index)
        return self.norm(x)


#: the keys of transformers' files that hold no weight of the model: the rotary frequencies
#: older versions saved (computed here from the configuration)
_DERIVED_KEY = r"\.rotary_emb\.inv_freq$"


class LlamaForCausalLM(Module):
    """A Llama decoder with its language-model head: token ids (N, L) to next-token logits
    (N, L, vocab_size), transformers' ``LlamaForCausalLM`` keys (``model.embed_tokens``,
    ``model.layers.N.self_attn.q_proj``, ..., ``model.norm``, ``lm_head``). With
    ``tie_word_embeddings`` there is no ``lm_head``: the embedding matrix is the head.

    Pass ``cache=model.new_cache()`` to keep the keys and values of the positions run, then
    give only the next tokens (`pyburn.models.generate.generate` does).

    >>> import pyburn
    >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    >>> model = LlamaForCausalLM(config, device="flex")
    >>> model(pyburn.tensor([[1, 5, 7]], device="flex")).shape
    (1, 3, 32)
    """

    def __init__(self, config: LlamaConfig, device: Any = None, dtype: Any = None):
        super().__init__()
        if not isinstance(config, LlamaConfig):
            raise ArgumentError(f"LlamaForCausalLM takes a LlamaConfig, got "
                                f"{type(config).__name__}")
        self.config = config
        self.model = LlamaModel(config, device, dtype)
        if not config.tie_word_embeddings:
            self.lm_head = Linear(config.hidden_size, config.vocab_size, False, device, dtype)

    def forward(self, input_ids: Tensor, cache: KVCache | None = None,
                attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """Next-token logits (N, L, vocab_size) at each position of `input_ids` (N, L), with
        the optional `attention_mask` and `position_ids` of `LlamaModel.forward`."""
        hidden = self.model(input_ids, cache, attention_mask, position_ids)
        if self.config.tie_word_embeddings:
            return F.linear(hidden, self.model.embed_tokens.weight)
        return self.lm_head(hidden)

    def new_cache(self) -> KVCache:
        """An empty `KVCache` for this model's layers."""
        return KVCache(self.config.num_hidden_layers)

    def load_from(self, store: Any, *, filter: Any = None, **options: Any) -> Any:
        """`Module.load_from`, leaving out the keys of transformers' files that hold no
        weight of this model: the rotary frequencies older versions saved
        (``...rotary_emb.inv_freq``) and, with tied embeddings, the head's copy of the
        embedding matrix (``lm_head.weight``) that ``torch.save`` of a state_dict keeps
        (their safetensors files leave it out)."""
        derived = key_predicate(_DERIVED_KEY if not self.config.tie_word_embeddings
                                else _DERIVED_KEY + r"|^lm_head\.weight$")
        accepts = key_predicate(filter) if filter is not None else None
        return super().load_from(
            store, filter=lambda key: not derived(key) and (accepts is None or accepts(key)),
            **options)


def _build(base: LlamaConfig, device: Any = None, dtype: Any = None,
           **changes: Any) -> LlamaForCausalLM:
    """`base` with `changes` (a smaller configuration for tests, another context length)."""
    return LlamaForCausalLM(base.replace(**changes), device, dtype)


#: TinyLlama 1.1B's configuration (its config.json)
TINYLLAMA_1_1B = LlamaConfig(
    vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
    num_attention_heads=32, num_key_value_heads=4, rms_norm_eps=1e-5, rope_theta=10000.0,
    max_position_embeddings=2048)

#: Llama 3.2 1B's published configuration (its config.json)
LLAMA_3_2_1B = LlamaConfig(
    vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
    num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
    rope_theta=500000.0, rope_scaling=Llama3RopeScaling(32.0, 1.0, 4.0, 8192),
    max_position_embeddings=131072, tie_word_embeddings=True)


def _register() -> None:
    """TinyLlama 1.1B and Llama 3.2 1B in the zoo, for the weights Hugging Face publishes
    (their keys are the model's own)."""
    register(ModelEntry("tinyllama-1.1b", partial(_build, TINYLLAMA_1_1B), "text-generation",
                        "TinyLlama 1.1B: a Llama 2 decoder, 22 layers, hidden 2048, 32 heads "
                        "sharing 4 key/value heads, vocabulary 32,000, context 2,048",
                        weights_from="transformers"))
    register(ModelEntry("llama-3.2-1b", partial(_build, LLAMA_3_2_1B), "text-generation",
                        "Llama 3.2 1B: 16 layers, hidden 2048, 32 heads sharing 8 key/value "
                        "heads, vocabulary 128,256, Llama 3 RoPE scaling, tied embeddings",
                        weights_from="transformers"))


_register()
