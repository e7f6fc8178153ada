"""Loss functions with PyTorch's semantics. `reduction` is "none" (one loss per element),
"mean" or "sum"; `kl_div` also takes "batchmean".

Arguments after the first two (or three) are keyword-only: PyTorch's positional slots there
are the deprecated ``size_average``/``reduce`` flags, which pyburn does not have, so a
positional call that meant them fails loudly instead of binding the wrong parameter. The
``weight`` of the class losses stays positional, as in ``cross_entropy(x, y, w)``.
"""

from __future__ import annotations

import math

from ... import ArgumentError, DTypeError, IndexOutOfRange, ShapeError, Tensor, where
from ...ops import capability
from ...ops.capability import NLL_LOSS, offered
from ...precision import autocast_inputs
from .activation import _log1p_exp, log_softmax
from .distance import pairwise_distance

_REDUCTIONS = ("none", "mean", "sum")


def check_reduction(reduction: str, op: str, extra: tuple[str, ...] = ()) -> None:
    """Raise ArgumentError unless `reduction` is "none", "mean", "sum" or one of `extra`."""
    if reduction not in _REDUCTIONS + extra:
        names = ", ".join(repr(r) for r in _REDUCTIONS + extra)
        raise ArgumentError(f"{op}: reduction must be one of {names}, got {reduction!r}")


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """The per-element `loss` reduced as `reduction` ("none", "mean" or "sum") says."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _mean_by(total: Tensor, weight_sum: Tensor) -> Tensor:
    """total / weight_sum, NaN when the weights sum to 0 (every target ignored), as in
    PyTorch, but with a zero gradient there instead of a NaN one."""
    some = weight_sum != 0
    return where(some, total / where(some, weight_sum, 1.0), float("nan"))


def _tensor(x: object, name: str, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op}: {name} must be a tensor, got {type(x).__name__}")
    (t,) = autocast_inputs(op, x)
    return t if t.dtype.is_floating_point else t.cast("float32")


def _same_shape(a: Tensor, b: Tensor, op: str, names: str = "input and target") -> None:
    if a.shape != b.shape:
        raise ShapeError(f"{op}: {names} must have the same shape, got {a.shape} and {b.shape}")


def _weighted(loss: Tensor, weight: Tensor | None, reduction: str, op: str,
              mean_by_weight: bool = True) -> Tensor:
    """`loss` times the per-element `weight` (input's shape), reduced; "mean" divides by the
    sum of the weights (PyTorch's rule for mse and l1) or, for huber, by the count."""
    if weight is None:
        return reduce_loss(loss, reduction)
    if not isinstance(weight, Tensor) or weight.shape != loss.shape:
        raise ShapeError(f"{op}: weight must have the input's shape {loss.shape}, got "
                         f"{getattr(weight, 'shape', weight)}")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, *, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Squared error ``(input - target)^2`` (broadcast), optionally weighted per element
    ("mean" then divides by the sum of the weights).

    >>> import pyburn, pyburn.nn.functional as F
    >>> F.mse_loss(pyburn.tensor([1.0, 3.0], device="flex"),
    ...            pyburn.tensor([0.0, 0.0], device="flex")).item()
    5.0
    """
    check_reduction(reduction, "mse_loss")
    diff = _tensor(input, "input", "mse_loss") - target
    return _weighted(diff * diff, weight, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Absolute error ``|input - target|``, optionally weighted per element."""
    check_reduction(reduction, "l1_loss")
    diff = _tensor(input, "input", "l1_loss") - target
    return _weighted(diff.abs(), weight, reduction, "l1_loss")


def huber_loss(input: Tensor, target: Tensor, *, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - delta / 2)``, with
    ``d = input - target``; optionally weighted ("mean" stays the plain mean, as in
    PyTorch)."""
    check_reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ArgumentError(f"huber_loss: delta must be positive, got {delta}")
    size = (_tensor(input, "input", "huber_loss") - target).abs()
    inner = size.minimum(delta)  # the quadratic part, capped where the linear part takes over
    loss = inner * inner * 0.5 + (size - inner) * delta
    return _weighted(loss, weight, reduction, "huber_loss", mean_by_weight=False)


def smooth_l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (plain L1 for
    beta = 0)."""
    check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ArgumentError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    size = (_tensor(input, "input", "smooth_l1_loss") - target).abs()
    if beta == 0:
        return reduce_loss(size, reduction)
    inner = size.minimum(beta)
    return reduce_loss(inner * inner * (0.5 / beta) + (size - inner), reduction)


# ---- classification -------------------------------------------------------------------------
def _class_dim(input: Tensor, target: Tensor, op: str) -> int:
    """The class dim of `input` (0 for a single (C,) sample, else 1) after checking that the
    integer `target` has input's shape without it."""
    if not isinstance(input, Tensor) or input.ndim == 0:
        raise ShapeError(f"{op}: input must be (C,), (N, C) or (N, C, d1, ...), got "
                         f"{getattr(input, 'shape', input)}")
    if not isinstance(target, Tensor):
        raise ArgumentError(f"{op}: target must be a tensor, got {type(target).__name__}")
    cdim = 0 if input.ndim == 1 else 1
    wanted = input.shape[:cdim] + input.shape[cdim + 1:]
    if target.shape != wanted:
        raise ShapeError(f"{op}: target shape {target.shape} does not fit input shape "
                         f"{input.shape} (expected {wanted})")
    return cdim


def _class_weight(weight: Tensor | None, classes: int, op: str) -> None:
    if weight is not None and (not isinstance(weight, Tensor) or weight.shape != (classes,)):
        raise ShapeError(f"{op}: weight must have shape ({classes},), one per class, got "
                         f"{getattr(weight, 'shape', weight)}")


def _picked(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
            cdim: int, op: str) -> tuple[Tensor, Tensor, Tensor]:
    """(-w[t] * logp[t] per element, w[t] per element, ignored mask), with ignored targets
    contributing 0 to both."""
    if not (target.dtype.is_integer):
        raise DTypeError(f"{op}: class-index targets must be integers, got {target.dtype.name}")
    ignored = target == ignore_index
    safe = where(ignored, 0, target)  # an in-range index where the target is ignored
    try:
        picked = logp.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    except IndexOutOfRange as exc:
        raise IndexOutOfRange(f"{op}: a target is out of range for {logp.shape[cdim]} classes "
                              f"({exc})") from None
    if weight is None:
        w = where(ignored, 0.0, 1.0).cast(logp.dtype)
    else:
        w = where(ignored, 0.0, weight.take(safe))
    return -picked * w, w, ignored


def _nll_offered(logp: Tensor, target: Tensor, weight: Tensor | None) -> bool:
    """Whether the backend's "nll_loss" computes this loss: it offers it for logp (and the
    weight), the target holds integers on logp's device, and the weight needs no gradient
    (the capability gives none)."""
    tensors = (logp,) if weight is None else (logp, weight)
    return (offered(NLL_LOSS, *tensors) and target.dtype.is_integer
            and target.device is logp.device and (weight is None or not weight.requires_grad))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class-index targets: ``-weight[t] * input[n, t]`` for
    input (N, C, ...) of log-probabilities and target (N, ...); "mean" divides by the sum of
    the weights of the targets that are not `ignore_index`."""
    check_reduction(reduction, "nll_loss")
    cdim = _class_dim(input, target, "nll_loss")
    _class_weight(weight, input.shape[cdim], "nll_loss")
    (input,) = autocast_inputs("nll_loss", input)
    if _nll_offered(input, target, weight):
        return capability.nll_loss(input, target, cdim, weight, ignore_index, reduction,
                                   "nll_loss")
    loss, w, _ = _picked(input, target, weight, ignore_index, cdim, "nll_loss")
    if reduction == "mean":
        return _mean_by(loss.sum(), w.sum())
    return reduce_loss(loss, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits (C,), (N, C) or (N, C, d1, ...) and either class indices
    (an integer target without the class dim) or class probabilities (a float target of
    input's shape). `weight` rescales each class; `label_smoothing` mixes the target with
    the uniform distribution.

    >>> import pyburn, pyburn.nn.functional as F
    >>> logits = pyburn.tensor([[0.0, 0.0]], device="flex")
    >>> round(F.cross_entropy(logits, pyburn.tensor([1], device="flex")).item(), 4)
    0.6931
    """
    op = "cross_entropy"
    check_reduction(reduction, op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if not isinstance(input, Tensor) or input.ndim == 0:
        raise ShapeError(f"{op}: input must be (C,), (N, C) or (N, C, d1, ...), got "
                         f"{getattr(input, 'shape', input)}")
    cdim = 0 if input.ndim == 1 else 1
    classes = input.shape[cdim]
    _class_weight(weight, classes, op)
    logp = log_softmax(_tensor(input, "input", op), dim=cdim)
    class_weight = None if weight is None else weight.reshape(
        (classes,) + (1,) * (input.ndim - cdim - 1))
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        _same_shape(input, target, op, "input and probability target")
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / classes
        terms = logp * target if class_weight is None else logp * target * class_weight
        return reduce_loss(-terms.sum(cdim), reduction)
    _class_dim(input, target, op)
    if not label_smoothing and _nll_offered(logp, target, weight):
        return capability.nll_loss(logp, target, cdim, weight, ignore_index, reduction, op)
    loss, w, ignored = _picked(logp, target, weight, ignore_index, cdim, op)
    if label_smoothing:
        every = logp if class_weight is None else logp * class_weight
        smooth = where(ignored, 0.0, -every.sum(cdim))
        loss = loss * (1.0 - label_smoothing) + smooth * (label_smoothing / classes)
    if reduction == "mean":
        return _mean_by(loss.sum(), w.sum())
    return reduce_loss(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
                         reduction: str = "mean") -> Tensor:
    """``-(t log(p) + (1 - t) log(1 - p))`` for probabilities p, each log clamped at -100
    (as in PyTorch, so p = 0 or 1 gives a finite loss); `weight` broadcasts."""
    op = "binary_cross_entropy"
    check_reduction(reduction, op)
    p = _tensor(input, "input", op)
    _same_shape(p, target, op)
    loss = -(target * p.log().maximum(-100.0) + (1.0 - target) * (1.0 - p).log().maximum(-100.0))
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, *, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """`binary_cross_entropy` of sigmoid(input), computed stably from the logits;
    `pos_weight` (broadcast along the last dim: one per class) weights the positive term."""
    op = "binary_cross_entropy_with_logits"
    check_reduction(reduction, op)
    x = _tensor(input, "input", op)
    _same_shape(x, target, op)
    neg_log_sig = _log1p_exp(-x)  # -log(sigmoid(x)), finite for every x
    if pos_weight is None:
        loss = (1.0 - target) * x + neg_log_sig
    else:
        loss = (1.0 - target) * x + ((pos_weight - 1.0) * target + 1.0) * neg_log_sig
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def kl_div(input: Tensor, target: Tensor, *, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``t (log t - input)`` with `input` log-probabilities
    (target too if `log_target`); 0 where t = 0. "batchmean" divides the sum by the batch
    size (the mathematically proper KL); "mean" averages over every element."""
    check_reduction(reduction, "kl_div", ("batchmean",))
    x = _tensor(input, "input", "kl_div")
    if log_target:
        loss = target.exp() * (target - x)
    else:
        # t log t with 0 log 0 = 0; the log sees 1 there so that no inf reaches the gradient
        loss = target * where(target == 0, 1.0, target).log() - target * x
    if reduction == "batchmean":
        return loss.sum() / (x.shape[0] if x.ndim else 1)
    return reduce_loss(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, *, log_input: bool = True,
                     full: bool = False, eps: float = 1e-8, reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (log_input) or
    ``input - target * log(input + eps)``; `full` adds Stirling's approximation of
    log(target!) where target > 1."""
    check_reduction(reduction, "poisson_nll_loss")
    x = _tensor(input, "input", "poisson_nll_loss")
    loss = x.exp() - target * x if log_input else x - target * (x + eps).log()
    if full:
        t = where(target > 1, target, 1.0)  # the term is 0 elsewhere; keep its log finite
        stirling = t * t.log() - t + (t * (2 * math.pi)).log() * 0.5
        loss = loss + where(target > 1, stirling, 0.0)
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, *, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log(var) + (input - target)^2 / var)`` (plus
    ``0.5 log(2 pi)`` if `full`), var clamped at `eps`. `var` has input's shape, or one dim
    fewer (or a size-1 dim: one variance shared by that dim), or is a float. The clamp
    changes the value only: var's gradient is that of the unclamped formula, as in
    PyTorch."""
    op = "gaussian_nll_loss"
    check_reduction(reduction, op)
    x = _tensor(input, "input", op)
    if isinstance(var, (int, float)):
        if var < 0:
            raise ArgumentError(f"{op}: var has a negative entry: {var}")
        var = x * 0.0 + float(var)
    elif not isinstance(var, Tensor):
        raise ArgumentError(f"{op}: var must be a tensor or a float, got {type(var).__name__}")
    else:
        if var.shape != x.shape:
            if var.shape == x.shape[:-1]:
                var = var.unsqueeze(-1)
            elif var.ndim != x.ndim or sum(v for i, v in zip(x.shape, var.shape) if i != v) != 1:
                raise ShapeError(f"{op}: var of shape {var.shape} does not fit input shape "
                                 f"{x.shape}")
        if (var < 0).any().item():
            raise ArgumentError(f"{op}: var has a negative entry")
    # clamped for the value only: as in PyTorch, the gradient passes the clamp unchanged
    var = var + (var.clamp(min=eps) - var).detach()
    diff = x - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


# ---- embeddings and rankings ----------------------------------------------------------------
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, *, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is
    -1; inputs are (N, D) with target (N,), or (D,) with a 0-d target."""
    op = "cosine_embedding_loss"
    check_reduction(reduction, op)
    x1, x2 = _tensor(input1, "input1", op), _tensor(input2, "input2", op)
    _same_shape(x1, x2, op, "input1 and input2")
    if x1.ndim not in (1, 2) or target.shape != x1.shape[:-1]:
        raise ShapeError(f"{op}: inputs must be (N, D) with target (N,) or (D,) with a 0-d "
                         f"target, got {x1.shape} and target {target.shape}")
    tiny = 1e-12  # PyTorch's epsilon, added to each squared norm
    cos = (x1 * x2).sum(-1) / (((x1 * x1).sum(-1) + tiny) * ((x2 * x2).sum(-1) + tiny)).sqrt()
    loss = where(target == 1, 1.0 - cos, 0.0) + where(target == -1, (cos - margin).maximum(0.0),
                                                       0.0)
    return reduce_loss(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, *, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: target 1 asks input1 to rank
    higher, -1 lower."""
    check_reduction(reduction, "margin_ranking_loss")
    x1 = _tensor(input1, "input1", "margin_ranking_loss")
    return reduce_loss((-target * (x1 - input2) + margin).maximum(0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, *, margin: float = 1.0,
                         reduction: str = "mean") -> Tensor:
    """x where target is 1, ``max(0, margin - x)`` where it is -1 (input holds distances)."""
    check_reduction(reduction, "hinge_embedding_loss")
    x = _tensor(input, "input", "hinge_embedding_loss")
    return reduce_loss(where(target != 1, (margin - x).maximum(0.0), 0.0)
                       + where(target != -1, x, 0.0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with d the `pairwise_distance` of order p;
    `swap` uses the smaller of d(a, n) and d(p, n)."""
    op = "triplet_margin_loss"
    check_reduction(reduction, op)
    ranks = {t.ndim for t in (anchor, positive, negative)}
    if len(ranks) != 1 or not ranks <= {1, 2}:
        raise ShapeError(f"{op}: anchor, positive and negative must all be (N, D) or (D,), got "
                         f"{anchor.shape}, {positive.shape} and {negative.shape}")
    if margin <= 0:
        raise ArgumentError(f"{op}: margin must be positive, got {margin}")
    to_pos = pairwise_distance(anchor, positive, p, eps)
    to_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_neg = to_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return reduce_loss((to_pos - to_neg + margin).maximum(0.0), reduction)
