"""Loss modules: each holds its options (and, for the class-weighted losses, its weights as
buffers, as PyTorch does) and calls the ``pyburn.nn.functional`` loss of the same name.

As in ``pyburn.nn.functional``, options are keyword-only: PyTorch's positional slots before
them are its deprecated ``size_average`` / ``reduce``.

>>> import pyburn
>>> loss = pyburn.nn.CrossEntropyLoss(label_smoothing=0.1)
>>> logits = pyburn.zeros(2, 3, device="flex")
>>> round(loss(logits, pyburn.tensor([0, 2], device="flex")).item(), 4)
1.0986
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .functional.loss import check_reduction
from .module import Module


class _Loss(Module):
    """A loss: ``forward(*inputs)`` is `function` of the inputs with the attributes named in
    `options` as keyword arguments."""

    function: Any
    options: tuple[str, ...] = ("reduction",)
    #: reductions this loss accepts beyond "none", "mean" and "sum"
    extra_reductions: tuple[str, ...] = ()

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        check_reduction(reduction, type(self).__name__, self.extra_reductions)
        self.reduction = reduction

    def forward(self, *inputs: Tensor) -> Tensor:
        """The loss of the inputs (typically prediction, target)."""
        return type(self).function(*inputs, **{name: getattr(self, name)
                                               for name in self.options})


class _WeightedLoss(_Loss):
    """A loss with optional per-class weights, kept as the buffer ``weight``."""

    options = ("weight", "reduction")

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean (or sum) absolute error."""

    function = staticmethod(F.l1_loss)

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)


class MSELoss(_Loss):
    """Mean (or sum) squared error."""

    function = staticmethod(F.mse_loss)

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)


class HuberLoss(_Loss):
    """Squared error below `delta`, linear above it."""

    function = staticmethod(F.huber_loss)
    options = ("reduction", "delta")

    def __init__(self, *, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta


class SmoothL1Loss(_Loss):
    """Huber loss divided by `beta`: squared error / (2 beta) below `beta`, |d| - beta / 2
    above."""

    function = staticmethod(F.smooth_l1_loss)
    options = ("reduction", "beta")

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        self.beta = beta


class KLDivLoss(_Loss):
    """KL divergence of the target distribution from the input's; the input holds
    log-probabilities ("batchmean" gives the mathematically right mean)."""

    function = staticmethod(F.kl_div)
    options = ("reduction", "log_target")
    extra_reductions = ("batchmean",)

    def __init__(self, *, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction)
        self.log_target = log_target


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of the target classes, given log-probabilities (N, C, ...)."""

    function = staticmethod(F.nll_loss)
    options = ("weight", "ignore_index", "reduction")

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean"):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax over the classes (dim 1) then NLL: targets are class indices or class
    probabilities; `label_smoothing` mixes in the uniform distribution."""

    function = staticmethod(F.cross_entropy)
    options = ("weight", "ignore_index", "reduction", "label_smoothing")

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities in [0, 1]."""

    function = staticmethod(F.binary_cross_entropy)

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean"):
        super().__init__(weight, reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of logits (sigmoid inside, computed stably); `pos_weight` scales
    the positive term per class (kept as a buffer, like `weight`)."""

    function = staticmethod(F.binary_cross_entropy_with_logits)
    options = ("weight", "reduction", "pos_weight")

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean",
                 pos_weight: Tensor | None = None):
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target."""

    function = staticmethod(F.poisson_nll_loss)
    options = ("log_input", "full", "eps", "reduction")

    def __init__(self, *, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                 reduction: str = "mean"):
        super().__init__(reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target: ``forward(input, target, var)``."""

    function = staticmethod(F.gaussian_nll_loss)
    options = ("full", "eps", "reduction")

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction)
        self.full = full
        self.eps = eps


class CosineEmbeddingLoss(_Loss):
    """``forward(input1, input2, target)``: 1 - cos for target 1, max(0, cos - margin) for
    target -1."""

    function = staticmethod(F.cosine_embedding_loss)
    options = ("margin", "reduction")

    def __init__(self, *, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin


class MarginRankingLoss(_Loss):
    """``forward(input1, input2, target)``: max(0, -target * (input1 - input2) + margin)."""

    function = staticmethod(F.margin_ranking_loss)
    options = ("margin", "reduction")

    def __init__(self, *, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1."""

    function = staticmethod(F.hinge_embedding_loss)
    options = ("margin", "reduction")

    def __init__(self, *, margin: float = 1.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin


class TripletMarginLoss(_Loss):
    """``forward(anchor, positive, negative)``: max(d(a, p) - d(a, n) + margin, 0)."""

    function = staticmethod(F.triplet_margin_loss)
    options = ("margin", "p", "eps", "swap", "reduction")

    def __init__(self, *, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap


class CTCLoss(_Loss):
    """Connectionist temporal classification: ``forward(log_probs, targets, input_lengths,
    target_lengths)``."""

    function = staticmethod(F.ctc_loss)
    options = ("blank", "reduction", "zero_infinity")

    def __init__(self, *, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity
