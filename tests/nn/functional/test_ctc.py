"""ctc_loss against PyTorch: values, and gradients through log_softmax.

PyTorch's CTC backward returns the gradient with respect to the logits of a log_softmax
(it folds the softmax in), not with respect to log_probs themselves; composed with
log_softmax the two agree, so the checks differentiate with respect to logits.
"""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, raises


def _pyburn_ctc(logits, *args, **kwargs):
    return F.ctc_loss(F.log_softmax(logits, dim=-1), *args, **kwargs)


def _torch_ctc(logits, *args, **kwargs):
    return TF.ctc_loss(TF.log_softmax(logits, dim=-1), *args, **kwargs)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("blank", [0, 4])
def test_ctc_padded_targets(ref, reduction, blank):
    targets = ref.ints(3, 4, low=1, high=4) if blank == 0 else ref.ints(3, 4, low=0, high=4)
    targets[1, 1] = targets[1, 0]  # a repeated label needs a blank between the two
    ref.check(_pyburn_ctc, _torch_ctc, ref.floats(9, 3, 5), targets, [9, 7, 8], [4, 2, 3],
              blank=blank, reduction=reduction, tol=PERMISSIVE)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_ctc_concatenated_targets(ref, reduction):
    lengths = [2, 0, 3]
    targets = ref.ints(sum(lengths), low=1, high=5)
    ref.check(_pyburn_ctc, _torch_ctc, ref.floats(6, 3, 5), targets, ref.tensor([6, 4, 5]),
              ref.tensor(lengths), reduction=reduction, tol=PERMISSIVE)


def test_ctc_unbatched(ref):
    ref.check(_pyburn_ctc, _torch_ctc, ref.floats(7, 4), ref.ints(3, low=1, high=4),
              ref.tensor(7), ref.tensor(3),
              reduction="sum", tol=PERMISSIVE)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_alignment(ref, zero_infinity):
    """Three labels with a repeat need at least four steps: two steps give inf."""
    targets = ref.tensor([[1, 1, 2], [2, 3, 0]])
    ref.check(_pyburn_ctc, _torch_ctc, ref.floats(4, 2, 4), targets, [2, 4], [3, 2],
              reduction="none", zero_infinity=zero_infinity, tol=PERMISSIVE,
              grad=zero_infinity)


def _lp(device, t=4, n=2, c=3):
    return pyburn.zeros(t, n, c, device=device)


def _ints(device, *values):
    return pyburn.tensor(list(values), device=device)


BAD = [
    ("log_probs rank", pyburn.ShapeError,
     lambda d: F.ctc_loss(pyburn.zeros(4, device=d), _ints(d, 1), [4], [1]), ("(T, N, C)",)),
    ("input length too long", pyburn.ArgumentError,
     lambda d: F.ctc_loss(_lp(d), _ints(d, 1, 2), [5, 4], [1, 1]), ("input_lengths", "5")),
    ("length count", pyburn.ShapeError,
     lambda d: F.ctc_loss(_lp(d), _ints(d, 1, 2), [4], [1, 1]), ("2 ints",)),
    ("concatenated targets", pyburn.ShapeError,
     lambda d: F.ctc_loss(_lp(d), _ints(d, 1, 2, 1), [4, 4], [1, 1]), ("sum(target_lengths)",)),
    ("blank", pyburn.ArgumentError,
     lambda d: F.ctc_loss(_lp(d), _ints(d, 1, 2), [4, 4], [1, 1], blank=3), ("blank",)),
    ("float targets", pyburn.DTypeError,
     lambda d: F.ctc_loss(_lp(d), pyburn.zeros(2, device=d), [4, 4], [1, 1]), ("integer",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
