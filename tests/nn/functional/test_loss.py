"""Losses against PyTorch, for every reduction and option: values and gradients."""

from __future__ import annotations

import math

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, Const, raises, read_back

REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,options", [("mse_loss", {}), ("l1_loss", {}),
                                          ("huber_loss", {}), ("huber_loss", {"delta": 0.4}),
                                          ("smooth_l1_loss", {}),
                                          ("smooth_l1_loss", {"beta": 0.3}),
                                          ("smooth_l1_loss", {"beta": 0.0})])
def test_regression(ref, name, options, reduction):
    ref.check(getattr(F, name), getattr(TF, name), ref.floats(3, 5), ref.floats(3, 5),
              reduction=reduction, **options)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_regression_weighted(ref, name, reduction):
    ref.check(getattr(F, name), getattr(TF, name), ref.floats(4, 3), ref.floats(4, 3),
              reduction=reduction, weight=ref.floats(4, 3, low=0.1, high=2.0))


def test_mse_broadcasts(ref):
    ref.check(F.mse_loss, TF.mse_loss, ref.floats(4, 3), Const(ref.floats(3)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 4), (4,), (3, 4, 2, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(ref, shape, reduction, weighted):
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else shape[:1] + shape[2:]
    target = ref.ints(*target_shape, high=classes)
    weight = Const(ref.floats(classes, low=0.2, high=2)) if weighted else None
    ref.check(F.nll_loss, TF.nll_loss, ref.floats(*shape), target, weight, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_ignore_index(ref, reduction):
    target = ref.tensor([0, 3, 1, 3, 2])
    ref.check(F.nll_loss, TF.nll_loss, ref.floats(5, 4), target, Const(ref.floats(4, low=0.5)),
              ignore_index=3, reduction=reduction)
    ref.check(F.nll_loss, TF.nll_loss, ref.floats(5, 4), ref.tensor([0, -100, 1, -100, 2]),
              reduction=reduction)


CROSS_ENTROPY = [dict(), dict(label_smoothing=0.1), dict(ignore_index=1),
                 dict(ignore_index=2, label_smoothing=0.3)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", CROSS_ENTROPY, ids=str)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4,), (3, 4, 2, 3)])
def test_cross_entropy_indices(ref, shape, options, weighted, reduction):
    classes = shape[0] if len(shape) == 1 else shape[1]
    target = ref.ints(*(() if len(shape) == 1 else shape[:1] + shape[2:]), high=classes)
    weight = Const(ref.floats(classes, low=0.2, high=2)) if weighted else None
    ref.check(F.cross_entropy, TF.cross_entropy, ref.floats(*shape, low=-5, high=5), target,
              weight, reduction=reduction, **options)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4,), (2, 4, 3)])
def test_cross_entropy_probabilities(ref, shape, smoothing, weighted, reduction):
    classes = shape[0] if len(shape) == 1 else shape[1]
    probs = ref.floats(*shape, low=0, high=1).sum_to_one(dim=0 if len(shape) == 1 else 1)
    weight = Const(ref.floats(classes, low=0.2, high=2)) if weighted else None
    ref.check(F.cross_entropy, TF.cross_entropy, ref.floats(*shape), probs, weight,
              reduction=reduction, label_smoothing=smoothing)


def test_cross_entropy_large_logits(ref):
    logits = ref.tensor([[1000.0, -1000.0, 0.0], [-50.0, 50.0, 50.0]])
    ref.check(F.cross_entropy, TF.cross_entropy, logits, ref.tensor([1, 0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(ref, weighted, reduction):
    weight = Const(ref.floats(3, 4, low=0.5, high=2)) if weighted else None
    ref.check(F.binary_cross_entropy, TF.binary_cross_entropy,
              ref.floats(3, 4, low=0.01, high=0.99), Const(ref.floats(3, 4, low=0, high=1)),
              weight, reduction=reduction)


def test_binary_cross_entropy_clamps_the_log(ref):
    p = ref.tensor([0.0, 1.0, 0.5, 1.0])
    ref.check(F.binary_cross_entropy, TF.binary_cross_entropy, p, ref.tensor([1.0, 0.0, 0.5, 1.0]),
              grad=False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits(ref, weighted, pos_weighted, reduction):
    weight = Const(ref.floats(3, 4, low=0.5, high=2)) if weighted else None
    pos_weight = Const(ref.floats(4, low=0.5, high=3)) if pos_weighted else None
    logits = ref.floats(3, 4, low=-5, high=5)
    logits[0, :2] = [0.0, 80.0]
    logits[1, :2] = [-80.0, 0.0]
    ref.check(F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, logits,
              ref.floats(3, 4, low=0, high=1), weight, reduction=reduction,
              pos_weight=pos_weight)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(ref, reduction, log_target):
    target = ref.floats(4, 5, low=0.05, high=1)
    if log_target:
        target = target.map(math.log)
    ref.check(F.kl_div, TF.kl_div, ref.floats(4, 5, low=-3, high=0), target,
              reduction=reduction, log_target=log_target)


def test_kl_div_zero_target(ref):
    """0 log 0 counts as 0 (PyTorch's gradient with respect to such a target is NaN, pyburn's
    is finite, so only the input's gradient is compared)."""
    target = ref.floats(3, 4, low=0, high=1)
    target[0, :2] = 0.0
    ref.check(F.kl_div, TF.kl_div, ref.floats(3, 4, low=-3, high=0), Const(target))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 3), (4,)])
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss(ref, shape, margin, reduction):
    target = ref.bools(*shape[:-1]).map(lambda b: 1 if b else -1, "int")
    ref.check(F.cosine_embedding_loss, TF.cosine_embedding_loss, ref.floats(*shape),
              ref.floats(*shape), target, margin=margin, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(ref, margin, reduction):
    target = ref.bools(6).map(lambda b: 1.0 if b else -1.0, "float")
    ref.check(F.margin_ranking_loss, TF.margin_ranking_loss, ref.floats(6), ref.floats(6),
              Const(target), margin=margin, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.5])
def test_hinge_embedding_loss(ref, margin, reduction):
    target = ref.bools(3, 4).map(lambda b: 1.0 if b else -1.0, "float")
    ref.check(F.hinge_embedding_loss, TF.hinge_embedding_loss, ref.floats(3, 4, low=0, high=2),
              Const(target), margin=margin, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [dict(), dict(margin=0.5, p=1.0), dict(swap=True),
                                     dict(p=3.0, eps=1e-3)], ids=str)
@pytest.mark.parametrize("shape", [(4, 5), (5,)])
def test_triplet_margin_loss(ref, shape, options, reduction):
    ref.check(F.triplet_margin_loss, TF.triplet_margin_loss, ref.floats(*shape),
              ref.floats(*shape), ref.floats(*shape), reduction=reduction, **options)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss(ref, log_input, full, reduction):
    x = ref.floats(3, 4, low=-1, high=1) if log_input else ref.floats(3, 4, low=0.1, high=3)
    target = ref.floats(3, 4, low=0, high=5).map(math.floor)
    ref.check(F.poisson_nll_loss, TF.poisson_nll_loss, x, Const(target), log_input=log_input,
              full=full, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), "float"])
def test_gaussian_nll_loss(ref, var_shape, full, reduction):
    var = 0.7 if var_shape == "float" else ref.floats(*var_shape, low=0.1, high=2)
    ref.check(F.gaussian_nll_loss, TF.gaussian_nll_loss, ref.floats(4, 3), ref.floats(4, 3),
              var, full=full, reduction=reduction)


def test_gaussian_nll_loss_clamps_var(ref):
    var = ref.tensor([1e-9, 0.5, 2.0])
    ref.check(F.gaussian_nll_loss, TF.gaussian_nll_loss, ref.floats(3), ref.floats(3), var,
              eps=1e-3, tol=PERMISSIVE)


def _z(device, *shape, dtype=None):
    return pyburn.zeros(shape, device=device, dtype=dtype)


def _ints(device, *values):
    return pyburn.tensor(list(values), device=device)


BAD = [
    ("reduction", pyburn.ArgumentError,
     lambda d: F.mse_loss(_z(d, 3), _z(d, 3), reduction="avg"), ("reduction", "avg")),
    ("batchmean only for kl_div", pyburn.ArgumentError,
     lambda d: F.l1_loss(_z(d, 3), _z(d, 3), reduction="batchmean"), ("reduction",)),
    ("weight shape", pyburn.ShapeError,
     lambda d: F.mse_loss(_z(d, 2, 3), _z(d, 2, 3), weight=_z(d, 3)), ("weight", "(2, 3)")),
    ("cross_entropy target shape", pyburn.ShapeError,
     lambda d: F.cross_entropy(_z(d, 4, 3), _ints(d, 0, 1)), ("(2,)", "(4, 3)")),
    ("cross_entropy target range", pyburn.IndexOutOfRange,
     lambda d: F.cross_entropy(_z(d, 2, 3), _ints(d, 0, 3)), ("cross_entropy", "3")),
    ("cross_entropy probabilities shape", pyburn.ShapeError,
     lambda d: F.cross_entropy(_z(d, 2, 3), _z(d, 2, 4)), ("(2, 3)", "(2, 4)")),
    ("cross_entropy smoothing", pyburn.ArgumentError,
     lambda d: F.cross_entropy(_z(d, 2, 3), _ints(d, 0, 1), label_smoothing=1.5),
     ("label_smoothing",)),
    ("cross_entropy class weight", pyburn.ShapeError,
     lambda d: F.cross_entropy(_z(d, 2, 3), _ints(d, 0, 1), _z(d, 2)), ("(3,)",)),
    ("cross_entropy scalar input", pyburn.ShapeError,
     lambda d: F.cross_entropy(_z(d), _ints(d, 0)), ("(C,)",)),
    ("nll_loss float target", pyburn.DTypeError,
     lambda d: F.nll_loss(_z(d, 2, 3), _z(d, 2)), ("integers",)),
    ("binary_cross_entropy shapes", pyburn.ShapeError,
     lambda d: F.binary_cross_entropy(_z(d, 2, 3), _z(d, 3)), ("(2, 3)", "(3,)")),
    ("huber delta", pyburn.ArgumentError,
     lambda d: F.huber_loss(_z(d, 3), _z(d, 3), delta=0.0), ("delta",)),
    ("gaussian var shape", pyburn.ShapeError,
     lambda d: F.gaussian_nll_loss(_z(d, 4, 3), _z(d, 4, 3), _z(d, 2, 3)), ("var", "(2, 3)")),
    ("gaussian negative var", pyburn.ArgumentError,
     lambda d: F.gaussian_nll_loss(_z(d, 3), _z(d, 3), _z(d, 3) - 1.0), ("negative",)),
    ("cosine_embedding shapes", pyburn.ShapeError,
     lambda d: F.cosine_embedding_loss(_z(d, 2, 3), _z(d, 2, 3), _z(d, 3)), ("target",)),
    ("triplet ranks", pyburn.ShapeError,
     lambda d: F.triplet_margin_loss(_z(d, 2, 3), _z(d, 3), _z(d, 2, 3)), ("(2, 3)", "(3,)")),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        read_back(call(device))
