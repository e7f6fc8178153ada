"""Connectionist temporal classification loss: the forward algorithm in log space.

The targets are extended with blanks (``blank, l1, blank, l2, ..., blank``: 2S + 1 states).
Each time step updates every state of every sample at once with tensor ops: a state is
reached from itself, from the state before it, and from two states before when that skips a
blank between two different labels. Samples with shorter inputs keep their state once their
input has ended, so the whole batch walks the longest input together.
"""

from __future__ import annotations

from typing import Any

from ... import ArgumentError, DTypeError, ShapeError, Tensor, cat, full, stack, tensor, where
from .loss import check_reduction, reduce_loss

_NEG_INF = float("-inf")


def _log_add(*terms: Tensor) -> Tensor:
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf. No inf or NaN can
    reach the gradient: the shift is detached and a zero sum is replaced before the log."""
    top = terms[0]
    for t in terms[1:]:
        top = top.maximum(t)
    shift = where(top.isfinite(), top, 0.0).detach()
    total = (terms[0] - shift).exp()
    for t in terms[1:]:
        total = total + (t - shift).exp()
    reachable = total > 0
    return where(reachable, where(reachable, total, 1.0).log() + shift, _NEG_INF)


def _lengths(value: Any, count: int, limit: int | None, name: str) -> list[int]:
    """Lengths as a list of `count` ints in [0, limit]."""
    if isinstance(value, Tensor):
        value = value.tolist()
    listed = [value] if isinstance(value, int) else list(value)
    if len(listed) != count or not all(isinstance(v, int) for v in listed):
        raise ShapeError(f"ctc_loss: {name} must hold {count} ints (one per sample), got "
                         f"{value!r}")
    bad = [v for v in listed if v < 0 or (limit is not None and v > limit)]
    if bad:
        raise ArgumentError(f"ctc_loss: {name} {bad[0]} is out of range [0, {limit}]")
    return listed


def _padded_targets(targets: Tensor, lengths: list[int]) -> Tensor:
    """Targets as (N, S) from either that shape or the 1-d concatenation of every sample's
    targets; entries past a sample's length are arbitrary."""
    n = len(lengths)
    if targets.ndim == 2:
        if targets.shape[0] != n:
            raise ShapeError(f"ctc_loss: targets shape {targets.shape} has {targets.shape[0]} "
                             f"rows for {n} samples")
        return targets
    if targets.ndim != 1 or targets.shape[0] != sum(lengths):
        raise ShapeError(f"ctc_loss: targets must be (N, S) or 1-d with sum(target_lengths) = "
                         f"{sum(lengths)} entries, got shape {targets.shape}")
    width = max(lengths, default=0)
    starts = [sum(lengths[:i]) for i in range(n)]
    last = max(targets.shape[0] - 1, 0)
    index = [min(s + j, last) for s in starts for j in range(width)]
    if not index or targets.shape[0] == 0:
        return full((n, width), 0, dtype=targets.dtype, device=targets.device)
    return targets.index_select(0, tensor(index, device=targets.device)).reshape(n, width)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss: the negative log-probability of all alignments of each target sequence to
    its input, summed over alignments.

    `log_probs` is (T, N, C) (log-softmax over C) or (T, C) for one sample; `targets` is
    (N, S) padded, or the 1-d concatenation of every sample's targets (or (S,) for one
    sample); the lengths are tensors or sequences of N ints (ints for one sample). "mean"
    divides each loss by its target length (at least 1), then averages over the batch.
    Impossible alignments give inf, or 0 with `zero_infinity`.
    """
    op = "ctc_loss"
    check_reduction(reduction, op)
    if not isinstance(log_probs, Tensor) or log_probs.ndim not in (2, 3):
        raise ShapeError(f"{op}: log_probs must be (T, N, C) or (T, C), got "
                         f"{getattr(log_probs, 'shape', log_probs)}")
    if not isinstance(targets, Tensor) or not targets.dtype.is_integer:
        raise DTypeError(f"{op}: targets must be an integer tensor")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise ArgumentError(f"{op}: blank {blank} is out of range for {classes} classes")
    if not batched and targets.ndim != 1:
        raise ShapeError(f"{op}: one sample's targets must be 1-d, got shape {targets.shape}")
    grouped = targets if batched else targets.unsqueeze(0)
    in_lens = _lengths(input_lengths, n, steps, "input_lengths")
    tgt_lens = _lengths(target_lengths, n, grouped.shape[1] if grouped.ndim == 2 else None,
                        "target_lengths")
    padded = _padded_targets(grouped, tgt_lens)
    width = padded.shape[1]
    dev = lp.device

    # extended labels (N, 2S + 1), blanks between and around the targets
    within = tensor(list(range(width)), device=dev) < tensor(tgt_lens, device=dev).unsqueeze(1)
    labels = where(within, padded, blank).cast(padded.dtype)
    blanks = full((n, width), blank, dtype=labels.dtype, device=dev)
    ext = cat([stack([blanks, labels], dim=2).reshape(n, 2 * width), blanks[:, :1]], dim=1)
    states = ext.shape[1]
    emissions = lp.gather(2, ext.unsqueeze(0).expand(steps, n, states))  # (T, N, 2S + 1)
    # a skip from two states back: onto a label that differs from the label before the blank
    before = cat([full((n, 2), blank, dtype=ext.dtype, device=dev), ext], dim=1)[:, :states]
    skip = (ext != blank) & (ext != before)

    position = tensor(list(range(states)), device=dev)
    started = tensor([length > 0 for length in in_lens], device=dev).unsqueeze(1)
    first = where(position < 2, emissions[0] if steps else 0.0, _NEG_INF)
    alpha = where(started, first, where(position == 0, 0.0, _NEG_INF))  # empty input: one path
    running = tensor(in_lens, device=dev).unsqueeze(1)
    for t in range(1, steps):
        from_prev = _shift(alpha, 1)
        from_skip = where(skip, _shift(alpha, 2), _NEG_INF)
        step = _log_add(alpha, from_prev, from_skip) + emissions[t]
        alpha = where(running > t, step, alpha)

    ends = tensor([2 * length for length in tgt_lens], device=dev).unsqueeze(1)
    last = alpha.gather(1, ends).squeeze(1)
    second = alpha.gather(1, (ends - 1).maximum(0)).squeeze(1)
    has_labels = tensor([length > 0 for length in tgt_lens], device=dev)
    loss = -_log_add(last, where(has_labels, second, _NEG_INF))
    if zero_infinity:
        loss = where(loss.isinf(), 0.0, loss)
    if reduction == "mean":
        return (loss / tensor(tgt_lens, dtype=loss.dtype, device=dev).clamp(min=1)).mean()
    out = reduce_loss(loss, reduction)
    return out if batched or reduction != "none" else out.squeeze(0)


def _shift(alpha: Tensor, by: int) -> Tensor:
    """alpha moved `by` states to the right along dim 1, with -inf coming in."""
    incoming = full((alpha.shape[0], by), _NEG_INF, dtype=alpha.dtype, device=alpha.device)
    return cat([incoming, alpha], dim=1)[:, :alpha.shape[1]]
