"""linear, bilinear, convolutions and transposed convolutions against PyTorch."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, raises


@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 3, 5), (0, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(ref, shape, bias):
    b = ref.floats(3) if bias else None
    ref.check(F.linear, TF.linear, ref.floats(*shape), ref.floats(3, 5), b)


def test_linear_vector_weight(ref):
    ref.check(F.linear, TF.linear, ref.floats(4, 5), ref.floats(5))


@pytest.mark.parametrize("bias_shape", [(1,), (4, 3), ()])
def test_linear_broadcast_bias(ref, bias_shape):
    # a bias that broadcasts without being (out_features,) takes the composite
    ref.check(F.linear, TF.linear, ref.floats(4, 5), ref.floats(3, 5), ref.floats(*bias_shape))


@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
def test_bilinear(ref, lead):
    ref.check(F.bilinear, TF.bilinear, ref.floats(*lead, 3), ref.floats(*lead, 5),
              ref.floats(2, 3, 5), ref.floats(2))


CONV2D = [
    dict(),
    dict(stride=2),
    dict(stride=(2, 1), padding=(1, 2)),
    dict(padding=1, dilation=2),
    dict(padding="same"),
    dict(padding="same", dilation=(2, 1)),
    dict(padding="valid", stride=(1, 3)),
    dict(groups=2),
    dict(groups=4, padding=1, stride=2),
]


@pytest.mark.parametrize("options", CONV2D, ids=str)
@pytest.mark.parametrize("kernel", [(3, 3), (2, 4), (1, 1)], ids=str)
def test_conv2d(ref, options, kernel):
    groups = options.get("groups", 1)
    ref.check(F.conv2d, TF.conv2d, ref.floats(2, 4, 7, 8), ref.floats(8, 4 // groups, *kernel),
              ref.floats(8), tol=PERMISSIVE, **options)


def test_conv2d_unbatched_without_bias(ref):
    ref.check(F.conv2d, TF.conv2d, ref.floats(3, 6, 5), ref.floats(2, 3, 3, 2), tol=PERMISSIVE)


@pytest.mark.parametrize("options", [dict(), dict(stride=3, padding=2), dict(padding="same"),
                                     dict(dilation=3, groups=3), dict(padding="same", dilation=2)],
                         ids=str)
def test_conv1d(ref, options):
    groups = options.get("groups", 1)
    ref.check(F.conv1d, TF.conv1d, ref.floats(2, 6, 11), ref.floats(3, 6 // groups, 4),
              ref.floats(3), tol=PERMISSIVE, **options)


@pytest.mark.parametrize("options", [dict(), dict(stride=(1, 2, 2), padding=1),
                                     dict(padding="same", groups=2)], ids=str)
def test_conv3d(ref, options):
    groups = options.get("groups", 1)
    ref.check(F.conv3d, TF.conv3d, ref.floats(2, 4, 4, 5, 6), ref.floats(2, 4 // groups, 2, 3, 2),
              ref.floats(2), tol=PERMISSIVE, **options)


CONV_T2D = [
    dict(),
    dict(stride=2),
    dict(stride=2, output_padding=1),
    dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2)),
    dict(padding=1, dilation=2),
    dict(stride=2, dilation=2, output_padding=1),
    dict(groups=2, stride=2),
]


@pytest.mark.parametrize("options", CONV_T2D, ids=str)
def test_conv_transpose2d(ref, options):
    groups = options.get("groups", 1)
    ref.check(F.conv_transpose2d, TF.conv_transpose2d, ref.floats(2, 4, 5, 4),
              ref.floats(4, 6 // groups, 3, 2), ref.floats(6), tol=PERMISSIVE, **options)


@pytest.mark.parametrize("options", [dict(), dict(stride=3, padding=2, output_padding=1),
                                     dict(groups=3, dilation=2)], ids=str)
def test_conv_transpose1d(ref, options):
    groups = options.get("groups", 1)
    ref.check(F.conv_transpose1d, TF.conv_transpose1d, ref.floats(2, 6, 5),
              ref.floats(6, 6 // groups, 4), ref.floats(6), tol=PERMISSIVE, **options)


def test_conv_transpose3d_unbatched(ref):
    ref.check(F.conv_transpose3d, TF.conv_transpose3d, ref.floats(2, 3, 2, 4),
              ref.floats(2, 3, 2, 2, 3), tol=PERMISSIVE, stride=(1, 2, 1), padding=(0, 1, 1))


def test_conv2d_mnist_shapes(ref):
    """The shapes of the MNIST example's CNN (smaller batch)."""
    ref.check(F.conv2d, TF.conv2d, ref.floats(2, 32, 12, 12), ref.floats(64, 32, 3, 3),
              ref.floats(64), tol=PERMISSIVE)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("linear in_features", pyburn.ShapeError,
     lambda d: F.linear(_z(d, 2, 3), _z(d, 4, 5)), ("(2, 3)", "(4, 5)")),
    ("linear weight rank", pyburn.ShapeError,
     lambda d: F.linear(_z(d, 2, 3), _z(d, 1, 4, 3)), ("weight",)),
    ("conv2d input rank", pyburn.ShapeError,
     lambda d: F.conv2d(_z(d, 5, 5), _z(d, 1, 1, 3, 3)), ("3 or 4", "(5, 5)")),
    ("conv2d channels", pyburn.ShapeError,
     lambda d: F.conv2d(_z(d, 1, 3, 5, 5), _z(d, 2, 2, 3, 3)), ("3 channels", "(2, 2, 3, 3)")),
    ("conv2d groups", pyburn.ShapeError,
     lambda d: F.conv2d(_z(d, 1, 4, 5, 5), _z(d, 3, 2, 3, 3), groups=2), ("groups=2",)),
    ("conv2d kernel too large", pyburn.ShapeError,
     lambda d: F.conv2d(_z(d, 1, 1, 2, 5), _z(d, 1, 1, 3, 3)), ("larger", "(1, 1, 2, 5)")),
    ("conv2d same with stride", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), stride=2, padding="same"),
     ("same", "stride")),
    ("conv2d bad padding", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), padding="full"), ("padding",)),
    ("conv2d negative padding", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), padding=-1), ("padding",)),
    ("conv2d zero stride", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), stride=0), ("stride",)),
    ("conv2d stride triple", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), stride=(1, 1, 1)), ("stride",)),
    ("conv2d groups zero", pyburn.ArgumentError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 1, 1, 3, 3), groups=0), ("groups",)),
    ("conv2d bias shape", pyburn.ShapeError,
     lambda d: F.conv2d(_z(d, 1, 1, 5, 5), _z(d, 2, 1, 3, 3), _z(d, 3)), ("bias", "(2,)")),
    ("conv1d weight rank", pyburn.ShapeError,
     lambda d: F.conv1d(_z(d, 1, 1, 5), _z(d, 1, 1, 3, 3)), ("3-d",)),
    ("conv_transpose2d channels", pyburn.ShapeError,
     lambda d: F.conv_transpose2d(_z(d, 1, 3, 5, 5), _z(d, 2, 2, 3, 3)), ("3 channels",)),
    ("conv_transpose2d output_padding", pyburn.ArgumentError,
     lambda d: F.conv_transpose2d(_z(d, 1, 2, 5, 5), _z(d, 2, 2, 3, 3), output_padding=1),
     ("output_padding",)),
    ("conv_transpose2d groups", pyburn.ShapeError,
     lambda d: F.conv_transpose2d(_z(d, 1, 3, 5, 5), _z(d, 3, 2, 3, 3), groups=2),
     ("groups=2",)),
    ("conv_transpose2d empty output", pyburn.ShapeError,
     lambda d: F.conv_transpose2d(_z(d, 1, 1, 1, 1), _z(d, 1, 1, 1, 1), padding=1), ("empty",)),
    ("bilinear shapes", pyburn.ShapeError,
     lambda d: F.bilinear(_z(d, 2, 3), _z(d, 2, 4), _z(d, 5, 3, 5)), ("(5, 3, 5)",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
