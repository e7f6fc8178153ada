"""Normalisation functions against PyTorch, running statistics included."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, Const, raises


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training(ref, shape, affine):
    w, b = (ref.floats(3), ref.floats(3)) if affine else (None, None)
    ref.check(F.batch_norm, TF.batch_norm, ref.floats(*shape), None, None, w, b, training=True,
              tol=PERMISSIVE)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5)])
def test_batch_norm_eval(ref, shape):
    ref.check(F.batch_norm, TF.batch_norm, ref.floats(*shape), Const(ref.floats(3)),
              Const(ref.floats(3, low=0.5, high=2)), ref.floats(3), ref.floats(3), eps=1e-3)


@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batch_norm_updates_running_stats(ref, momentum):
    def running_stats(batch_norm):
        def call(x, mean, var):  # the statistics after two steps
            for _ in range(2):
                batch_norm(x, mean, var, training=True, momentum=momentum)
            return mean, var

        return call

    ref.check(running_stats(F.batch_norm), running_stats(TF.batch_norm), ref.floats(6, 3, 4),
              ref.tensor([0.0] * 3), ref.tensor([1.0] * 3), tol=PERMISSIVE, grad=False)


def test_batch_norm_running_stats_are_not_recorded(device):
    dev = device.autodiff()
    x = pyburn.randn(5, 2, device=dev, requires_grad=True)
    mean, var = pyburn.zeros(2, device=dev), pyburn.ones(2, device=dev)
    F.batch_norm(x, mean, var, training=True).sum().backward()
    assert not mean.requires_grad and not var.requires_grad


@pytest.mark.parametrize("running,use_input_stats", [(False, True), (True, True),
                                                     (True, False)])
def test_instance_norm(ref, running, use_input_stats):
    stats = (Const(ref.floats(3)), Const(ref.floats(3, low=0.5, high=2))) if running else (
        None, None)
    ref.check(F.instance_norm, TF.instance_norm, ref.floats(2, 3, 4, 5), *stats, ref.floats(3),
              ref.floats(3), use_input_stats=use_input_stats, tol=PERMISSIVE)


def test_instance_norm_updates_running_stats(ref):
    def running_stats(instance_norm):
        def call(x, mean, var):
            instance_norm(x, mean, var, momentum=0.3)
            return mean, var

        return call

    ref.check(running_stats(F.instance_norm), running_stats(TF.instance_norm),
              ref.floats(2, 3, 7), ref.tensor([0.0] * 3), ref.tensor([1.0] * 3), tol=PERMISSIVE,
              grad=False)


@pytest.mark.parametrize("shape,normalized", [((4, 5), 5), ((2, 3, 4), (3, 4)), ((6,), (6,))])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(ref, shape, normalized, affine):
    ns = (normalized,) if isinstance(normalized, int) else normalized
    w, b = (ref.floats(*ns), ref.floats(*ns)) if affine else (None, None)
    ref.check(F.layer_norm, lambda x, _, w, b: TF.layer_norm(x, ns, w, b), ref.floats(*shape),
              normalized, w, b, tol=PERMISSIVE)


@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [False, True])
def test_rms_norm(ref, eps, affine):
    w = ref.floats(3, 4) if affine else None
    ref.check(F.rms_norm, TF.rms_norm, ref.floats(2, 3, 4), (3, 4), w, eps=eps, tol=PERMISSIVE)


@pytest.mark.parametrize("groups", [1, 2, 6])
@pytest.mark.parametrize("shape", [(2, 6), (2, 6, 5), (3, 6, 2, 3)])
def test_group_norm(ref, groups, shape):
    ref.check(F.group_norm, TF.group_norm, ref.floats(*shape), groups, ref.floats(6),
              ref.floats(6), tol=PERMISSIVE)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1)])
def test_normalize(ref, p, dim):
    ref.check(F.normalize, TF.normalize, ref.floats(3, 4, 2), p=p, dim=dim)


def test_normalize_zero_vector(ref):
    ref.check(F.normalize, TF.normalize, ref.tensor([[0.0] * 3] * 2), grad=False)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("batch_norm one value", pyburn.ArgumentError,
     lambda d: F.batch_norm(_z(d, 1, 3), None, None, training=True), ("more than one",)),
    ("batch_norm running shape", pyburn.ShapeError,
     lambda d: F.batch_norm(_z(d, 2, 3), _z(d, 4), _z(d, 3)), ("running_mean", "(3,)")),
    ("batch_norm eval needs both", pyburn.ArgumentError,
     lambda d: F.batch_norm(_z(d, 2, 3), _z(d, 3), None), ("running",)),
    ("batch_norm rank", pyburn.ShapeError,
     lambda d: F.batch_norm(_z(d, 3), None, None, training=True), ("(3,)",)),
    ("batch_norm weight", pyburn.ShapeError,
     lambda d: F.batch_norm(_z(d, 2, 3), None, None, _z(d, 2)), ("weight", "(3,)")),
    ("layer_norm shape", pyburn.ShapeError,
     lambda d: F.layer_norm(_z(d, 2, 3), (2,)), ("normalized_shape", "(2, 3)")),
    ("group_norm groups", pyburn.ShapeError,
     lambda d: F.group_norm(_z(d, 2, 6, 3), 4), ("num_groups=4", "6 channels")),
    ("instance_norm rank", pyburn.ShapeError,
     lambda d: F.instance_norm(_z(d, 2, 3)), ("(2, 3)",)),
    ("instance_norm eval", pyburn.ArgumentError,
     lambda d: F.instance_norm(_z(d, 2, 3, 4), use_input_stats=False), ("running",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
