"""Text generation with a causal language model: `generate` runs the prompt once, filling the
model's key/value cache, then one position per new token, each chosen from the logits of the
last position by a `Sampler`: the most likely token (greedy), or a draw from the softmax at a
temperature, over all tokens or only the `top_k` most likely, or only the smallest set of most
likely tokens whose probabilities add up to `top_p` (nucleus sampling, Holtzman et al. 2020).

Draws take their random numbers from a `pyburn.Generator`, so a seeded generator gives the same
tokens on every device.

Prompts of different lengths run as one batch padded on the left, with an attention mask that
keeps the padding out of every row's attention and positions, so that each row gets the tokens
its prompt alone would get.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._tensor import Tensor
from ..dtypes import int32
from ..errors import ArgumentError, DTypeError, ShapeError
from ..nn import functional as F
from ..ops.creation import arange, tensor
from ..ops.math_ops import where
from ..ops.movement import cat
from ..ops.random_tensors import rand
from ..random import Generator
from ..tape import no_grad

#: the ways `Sampler` chooses a token
STRATEGIES = ("greedy", "temperature", "top-k", "top-p")


class CausalLM(Protocol):
    """What `generate` needs of a model: logits (N, L, vocab) of token ids (N, L) that follow
    the positions of a cache it makes, with an optional attention mask (N, L) of those ids (1
    for a token, 0 for padding) that the cache keeps for the later passes, and its parameters,
    on the device that prompts given as lists go to
    (`pyburn.models.llama.LlamaForCausalLM`)."""

    def __call__(self, input_ids: Tensor, cache: Any = None,
                 attention_mask: Tensor | None = None) -> Tensor: ...

    def new_cache(self) -> Any: ...

    def parameters(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class Sampler:
    """How the next token is chosen from logits (N, vocab):

    - ``"greedy"``: the most likely token;
    - ``"temperature"``: a draw from ``softmax(logits / temperature)``;
    - ``"top-k"``: the same, over the `top_k` most likely tokens only (every token when
      `top_k` is at least the vocabulary);
    - ``"top-p"``: the same, over the smallest set of most likely tokens whose probabilities
      (after the temperature) add up to at least `top_p`.

    A parameter that the strategy does not use must keep its default, so that a mistaken call
    (``top_k=`` with the default strategy) raises `ArgumentError` instead of quietly doing
    something else.

    >>> import pyburn
    >>> logits = pyburn.tensor([[0.0, 3.0, 1.0]], device="flex")
    >>> Sampler()(logits).tolist(), Sampler("top-k", top_k=1)(logits).tolist()
    ([1], [1])
    """

    strategy: str = "greedy"
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ArgumentError(f"Sampler: strategy must be one of {', '.join(STRATEGIES)}, "
                                f"got {self.strategy!r}")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < math.inf:
            raise ArgumentError(f"Sampler: temperature must be a positive finite number, got "
                                f"{t!r}")
        if self.strategy == "greedy" and t != 1.0:
            raise ArgumentError("Sampler: temperature is for the sampling strategies, not "
                                "'greedy'")
        self._check_uses("top_k", "top-k", lambda k: not isinstance(k, bool)
                         and isinstance(k, int) and k >= 1, "an int >= 1")
        self._check_uses("top_p", "top-p", lambda p: not isinstance(p, bool)
                         and isinstance(p, (int, float)) and 0 < p <= 1, "a number in (0, 1]")

    def _check_uses(self, name: str, strategy: str, valid: Any, wanted: str) -> None:
        """`name` is given (and `valid`) exactly when the strategy is `strategy`."""
        value = getattr(self, name)
        if self.strategy != strategy and value is not None:
            raise ArgumentError(f"Sampler: {name} is for strategy {strategy!r}, not "
                                f"{self.strategy!r}")
        if self.strategy == strategy and not valid(value):
            raise ArgumentError(f"Sampler: strategy {strategy!r} needs {name}, {wanted}; got "
                                f"{value!r}")

    def filtered(self, logits: Tensor) -> Tensor:
        """The logits (N, vocab) the draw is made from, as float32: divided by the
        temperature, and -inf for the tokens the strategy leaves out."""
        scaled = logits.float() / float(self.temperature)
        if self.top_k is not None:
            kth = scaled.topk(min(self.top_k, scaled.shape[-1])).values[..., -1:]
            return where(scaled >= kth, scaled, -math.inf)
        if self.top_p is not None:
            probs = F.softmax(scaled, -1)
            ordered = probs.sort(-1, descending=True).values
            # a token is kept while the more likely ones add up to less than top_p
            before = F.pad(ordered.cumsum(-1)[..., :-1], (1, 0))
            least = where(before < self.top_p, ordered, math.inf).amin(-1, keepdim=True)
            return where(probs >= least, scaled, -math.inf)
        return scaled

    def __call__(self, logits: Tensor, generator: Generator | None = None) -> Tensor:
        """The chosen token of each row of logits (N, vocab): int32 (N,). Draws use
        `generator` (the default generator when None)."""
        if not isinstance(logits, Tensor) or logits.ndim != 2 or logits.shape[1] < 1:
            raise ShapeError(f"Sampler takes logits of shape (N, vocab), got "
                             f"{getattr(logits, 'shape', type(logits).__name__)}")
        if self.strategy == "greedy":
            return logits.argmax(-1)
        return draw(F.softmax(self.filtered(logits), -1), generator)


def draw(probs: Tensor, generator: Generator | None = None) -> Tensor:
    """One index per row of probs (N, V), index j with probability ``probs[i, j]``: the
    inverse of the row's cumulative distribution at a uniform draw. The draw is scaled by the
    row's total, which rounding keeps from 1 exactly, and the index is capped at the row's
    last token of nonzero probability, which rounding could otherwise overshoot.

    >>> import pyburn
    >>> draw(pyburn.tensor([[0.0, 1.0, 0.0]], device="flex")).tolist()
    [1]
    """
    n, size = probs.shape
    cdf = probs.cumsum(-1)
    u = rand(n, 1, dtype=cdf.dtype, device=probs.device, generator=generator) * cdf[:, -1:]
    last = where(probs > 0, arange(size, device=probs.device), 0).amax(-1)
    return (cdf <= u).sum(-1).cast(last.dtype).minimum(last)


def _check_ids(input_ids: Tensor) -> Tensor:
    """The prompt as (N, L) integer ids."""
    if input_ids.ndim not in (1, 2) or input_ids.shape[-1] < 1:
        raise ShapeError(f"generate takes token ids of shape (L,) or (N, L) with L >= 1, got "
                         f"{input_ids.shape}")
    if input_ids.dtype.is_floating_point or input_ids.dtype.is_bool:
        raise DTypeError(f"generate takes integer token ids, got {input_ids.dtype.name}")
    return input_ids if input_ids.ndim == 2 else input_ids.unsqueeze(0)


def _is_token(value: Any) -> bool:
    """Whether `value` can be a token id: an int >= 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _left_padded(attention_mask: Any, input_ids: Tensor) -> Tensor | None:
    """The attention mask of the prompt `input_ids` as (N, L), checked to pad on the left (each
    row 0s, then 1s, at least one); None when it masks nothing."""
    if not isinstance(attention_mask, Tensor) or attention_mask.shape != input_ids.shape:
        raise ShapeError(f"generate: attention_mask must have the shape of the token ids "
                         f"{input_ids.shape}, got "
                         f"{getattr(attention_mask, 'shape', type(attention_mask).__name__)}")
    if attention_mask.dtype.is_floating_point:
        raise DTypeError(f"generate takes an integer or bool attention_mask, got "
                         f"{attention_mask.dtype.name}")
    mask = attention_mask if attention_mask.ndim == 2 else attention_mask.unsqueeze(0)
    rows = [[int(v) for v in row] for row in mask.tolist()]
    for index, row in enumerate(rows):
        if not set(row) <= {0, 1}:
            raise ArgumentError(f"generate: attention_mask holds 1 for a token and 0 for "
                                f"padding, got {sorted(set(row) - {0, 1})} in row {index}")
        if not any(row):
            raise ArgumentError(f"generate: row {index} of attention_mask has no token")
        if row != sorted(row):
            raise ArgumentError(f"generate: row {index} of attention_mask {row} has padding "
                                f"after a token: prompts must be padded on the left (a "
                                f"tokenizer's padding_side='left'), since the new tokens "
                                f"follow the last position")
    return None if all(all(row) for row in rows) else mask


def _padded(model: CausalLM, prompts: Sequence[Any],
            pad_token_id: int | None) -> tuple[Tensor, Tensor | None]:
    """Prompts given as lists of token ids as (N, L) int32 ids on the model's device, padded
    on the left with `pad_token_id`, and their attention mask (None when they are of one
    length)."""
    if not isinstance(prompts, (list, tuple)) or not prompts or not all(
            isinstance(p, (list, tuple)) and p and all(map(_is_token, p)) for p in prompts):
        raise ArgumentError(f"generate takes token ids as a Tensor or as a list of prompts, "
                            f"each a non-empty list of token ids (ints >= 0), got {prompts!r}")
    if pad_token_id is None:
        raise ArgumentError("generate: prompts given as lists are padded on the left with "
                            "pad_token_id, which must be given")
    width = max(len(p) for p in prompts)
    device = next(iter(model.parameters())).device
    ids = tensor([[pad_token_id] * (width - len(p)) + list(p) for p in prompts], dtype=int32,
                 device=device)
    if all(len(p) == width for p in prompts):
        return ids, None
    return ids, tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=int32,
                       device=device)


def _stop_ids(eos_token_id: int | Sequence[int] | None) -> list[int]:
    ids = [eos_token_id] if isinstance(eos_token_id, int) else \
        [] if eos_token_id is None else list(eos_token_id)
    if not all(map(_is_token, ids)):
        raise ArgumentError(f"generate: eos_token_id must be a token id, a sequence of them "
                            f"or None, got {eos_token_id!r}")
    return ids


def generate(model: CausalLM, input_ids: Tensor | Sequence[Sequence[int]],
             max_new_tokens: int, *, attention_mask: Tensor | None = None,
             pad_token_id: int | None = None, strategy: str = "greedy",
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             generator: Generator | None = None,
             eos_token_id: int | Sequence[int] | None = None,
             on_token: Callable[[Tensor], None] | None = None) -> Tensor:
    """The prompts `input_ids` followed by up to `max_new_tokens` tokens of `model`, chosen by
    ``Sampler(strategy, temperature, top_k, top_p)`` with the random numbers of `generator`
    (the default generator when None).

    The prompts are token ids (L,) or (N, L), one prompt per row: all of one length, or padded
    on the left with an `attention_mask` of their shape, 1 for a token and 0 for padding (as a
    tokenizer with ``padding_side="left"`` gives; padding after a token is refused). They may
    also be a list of lists of token ids, of any lengths: generate pads them on the left with
    `pad_token_id` (which must then be given) and makes the mask. A padded row's positions
    count its tokens only and nothing attends to its padding, so each row gets the tokens its
    prompt alone would get.

    The prompt runs once, filling a new cache (``model.new_cache()``, which keeps the mask);
    then each new token runs alone. A row that produced `eos_token_id` (an id or several) is
    finished: its later tokens are `pad_token_id` (the first end id when None), and generation
    stops when every row is finished. Returns the ids, prompt and its padding included, with
    the prompt's rank and dtype (int32 (N, L + new) for lists); nothing is recorded for
    autodiff. `on_token`, when given, is called with each step's new tokens (N,) as soon as
    they are chosen, before the next step runs: a page or a terminal can show the text as it
    comes (streaming).

    >>> import pyburn
    >>> from pyburn.models.llama import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...                      num_hidden_layers=1, num_attention_heads=2)
    >>> model = LlamaForCausalLM(config, device="flex")
    >>> out = generate(model, pyburn.tensor([1, 2, 3], device="flex"), 4, strategy="top-p",
    ...                top_p=0.9, generator=pyburn.Generator(0))
    >>> out.shape
    (7,)
    >>> generate(model, [[1, 2, 3], [4]], 2, pad_token_id=0).tolist()[1][:3]
    [0, 0, 4]
    """
    sampler = Sampler(strategy, temperature, top_k, top_p)
    if pad_token_id is not None and not _is_token(pad_token_id):
        raise ArgumentError(f"generate: pad_token_id must be a token id or None, got "
                            f"{pad_token_id!r}")
    if isinstance(input_ids, Tensor):
        ids = _check_ids(input_ids)
        mask = None if attention_mask is None else _left_padded(attention_mask, input_ids)
    else:
        if attention_mask is not None:
            raise ArgumentError("generate makes the attention_mask of prompts given as lists: "
                                "give one with a Tensor of token ids only")
        ids, mask = _padded(model, input_ids, pad_token_id)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
            max_new_tokens < 0:
        raise ArgumentError(f"generate: max_new_tokens must be an int >= 0, got "
                            f"{max_new_tokens!r}")
    if generator is not None and not isinstance(generator, Generator):
        raise ArgumentError(f"generate: generator must be a pyburn.Generator or None, got "
                            f"{type(generator).__name__}")
    stops = _stop_ids(eos_token_id)
    tokens: list[Tensor] = []
    with no_grad():
        cache = model.new_cache()
        logits = model(ids, cache=cache, attention_mask=mask) if max_new_tokens else None
        finished: Tensor | None = None
        while logits is not None:
            token = sampler(logits[:, -1], generator).cast(ids.dtype)
            if stops:
                if finished is not None:
                    token = where(finished, stops[0] if pad_token_id is None else
                                  pad_token_id, token)
                done = token == stops[0]
                for other in stops[1:]:
                    done = done | (token == other)
                finished = done if finished is None else finished | done
            tokens.append(token.unsqueeze(1))
            if on_token is not None:
                on_token(token)
            ended = finished is not None and bool(finished.all().item())
            logits = None if ended or len(tokens) == max_new_tokens else \
                model(tokens[-1], cache=cache)
    out = cat([ids, *tokens], 1)
    return out.squeeze(0) if isinstance(input_ids, Tensor) and input_ids.ndim == 1 else out
