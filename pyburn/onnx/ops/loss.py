"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, through
`pyburn.nn.functional.nll_loss` (the same class weights, ignore_index and reductions)."""

from __future__ import annotations

from ... import Tensor
from ...nn import functional as F
from ..registry import check, onnx_op

#: ignore_index when the attribute is absent: no class index can equal it (and it fits the
#: int32 that holds ONNX's int64 on devices without int64)
_NOTHING_IGNORED = -(2**31)


def _nll(log_prob: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int | None,
         reduction: str, op: str) -> Tensor:
    check(reduction in ("none", "sum", "mean"),
          f"{op}: reduction must be none, sum or mean, got {reduction!r}")
    check(log_prob.ndim >= 2 and target.shape == log_prob.shape[:1] + log_prob.shape[2:],
          f"{op}: target shape {target.shape} does not fit input shape {log_prob.shape} "
          f"(N, C, d1, ...)")
    ignored = _NOTHING_IGNORED if ignore_index is None else ignore_index
    return F.nll_loss(log_prob, target, weight, ignore_index=ignored, reduction=reduction)


@onnx_op("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                 *, ignore_index: int | None = None,
                                 reduction: str = "mean") -> Tensor:
    """NegativeLogLikelihoodLoss: ``-weight[t] * input[n, t, d...]`` per element of the
    class-index target, 0 where it is ignore_index; "mean" divides by the weights of the
    targets that count."""
    return _nll(input, target, weight, ignore_index, reduction, "NegativeLogLikelihoodLoss")


@onnx_op("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(scores: Tensor, labels: Tensor, weights: Tensor | None = None,
                               *, ignore_index: int | None = None,
                               reduction: str = "mean") -> tuple[Tensor, Tensor]:
    """SoftmaxCrossEntropyLoss: the negative log-likelihood of log_softmax(scores) over the
    class dim 1: (loss, log_prob)."""
    log_prob = F.log_softmax(scores, dim=1)
    return _nll(log_prob, labels, weights, ignore_index, reduction,
                "SoftmaxCrossEntropyLoss"), log_prob
