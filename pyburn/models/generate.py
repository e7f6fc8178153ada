"""Text generation with a causal language model: `generate` runs the prompt once, filling the
model's key/value cache, then one position per new token, each chosen from the logits of the
last position by a `Sampler`: the most likely token (greedy), or a draw from the softmax at a
temperature, over all tokens or only the `top_k` most likely, or only the smallest set of most
likely tokens whose probabilities add up to `top_p` (nucleus sampling, Holtzman et al. 2020).

Draws take their random numbers from a `pyburn.Generator`, so a seeded generator gives the same
tokens on every device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..nn import functional as F
from ..ops.creation import arange
from ..ops.math_ops import where
from ..ops.movement import cat
from ..ops.random_tensors import rand
from ..random import Generator
from ..tape import no_grad

#: the ways `Sampler` chooses a token
STRATEGIES = ("greedy", "temperature", "top-k", "top-p")


class CausalLM(Protocol):
    """What `generate` needs of a model: logits (N, L, vocab) of token ids (N, L) that follow
    the positions of a cache it makes (`pyburn.models.llama.LlamaForCausalLM`)."""

    def __call__(self, input_ids: Tensor, cache: Any = None) -> Tensor: ...

    def new_cache(self) -> Any: ...


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


def _check_ids(input_ids: Any) -> Tensor:
    """The prompt as (N, L) integer ids."""
    if not isinstance(input_ids, Tensor) or input_ids.ndim not in (1, 2) or \
            input_ids.shape[-1] < 1:
        raise ShapeError(f"generate takes token ids of shape (L,) or (N, L) with L >= 1, got "
                         f"{getattr(input_ids, 'shape', type(input_ids).__name__)}")
    if input_ids.dtype.is_floating_point or input_ids.dtype.is_bool:
        raise DTypeError(f"generate takes integer token ids, got {input_ids.dtype.name}")
    return input_ids if input_ids.ndim == 2 else input_ids.unsqueeze(0)


def _stop_ids(eos_token_id: int | Sequence[int] | None) -> list[int]:
    ids = [eos_token_id] if isinstance(eos_token_id, int) else \
        [] if eos_token_id is None else list(eos_token_id)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise ArgumentError(f"generate: eos_token_id must be a token id, a sequence of them "
                            f"or None, got {eos_token_id!r}")
    return ids


def generate(model: CausalLM, input_ids: Tensor, max_new_tokens: int, *,
             strategy: str = "greedy", temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None, generator: Generator | None = None,
             eos_token_id: int | Sequence[int] | None = None) -> Tensor:
    """The prompt `input_ids` ((L,) or (N, L), one prompt per row, all of one length) followed
    by up to `max_new_tokens` tokens of `model`, chosen by ``Sampler(strategy, temperature,
    top_k, top_p)`` with the random numbers of `generator` (the default generator when None).

    The prompt runs once, filling a new cache (``model.new_cache()``); then each new token
    runs alone. A row that produced `eos_token_id` (an id or several) is finished: its later
    tokens repeat that id, and generation stops when every row is finished. Returns the ids,
    prompt included, with the prompt's rank and dtype; nothing is recorded for autodiff.

    >>> import pyburn
    >>> from pyburn.models.llama import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...                      num_hidden_layers=1, num_attention_heads=2)
    >>> model = LlamaForCausalLM(config, device="flex")
    >>> out = generate(model, pyburn.tensor([1, 2, 3], device="flex"), 4, strategy="top-p",
    ...                top_p=0.9, generator=pyburn.Generator(0))
    >>> out.shape
    (7,)
    """
    sampler = Sampler(strategy, temperature, top_k, top_p)
    ids = _check_ids(input_ids)
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
        logits = model(ids, cache=cache) if max_new_tokens else None
        finished: Tensor | None = None
        while logits is not None:
            token = sampler(logits[:, -1], generator).cast(ids.dtype)
            if stops:
                if finished is not None:
                    token = where(finished, stops[0], token)
                done = token == stops[0]
                for other in stops[1:]:
                    done = done | (token == other)
                finished = done if finished is None else finished | done
            tokens.append(token.unsqueeze(1))
            ended = finished is not None and bool(finished.all().item())
            logits = None if ended or len(tokens) == max_new_tokens else \
                model(tokens[-1], cache=cache)
    out = cat([ids, *tokens], 1)
    return out if input_ids.ndim == 2 else out.squeeze(0)
