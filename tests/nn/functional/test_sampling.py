"""interpolate, pixel_shuffle/unshuffle, unfold/fold and pad against PyTorch."""

from __future__ import annotations

import math

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, raises

SIZES_2D = [dict(size=(8, 9)), dict(size=(3, 2)), dict(size=5), dict(size=(5, 4)),
            dict(scale_factor=2), dict(scale_factor=(1.5, 0.7)), dict(scale_factor=0.5),
            dict(scale_factor=(2.3, 1.0), recompute_scale_factor=True)]


@pytest.mark.parametrize("options", SIZES_2D, ids=str)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area"])
def test_interpolate_2d(ref, mode, options):
    ref.check(F.interpolate, TF.interpolate, ref.floats(2, 3, 5, 4), mode=mode, **options)


@pytest.mark.parametrize("options", SIZES_2D, ids=str)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_2d_interpolating(ref, mode, align_corners, options):
    ref.check(F.interpolate, TF.interpolate, ref.floats(2, 3, 5, 4), mode=mode,
              align_corners=align_corners, tol=PERMISSIVE, **options)


@pytest.mark.parametrize("options", [dict(size=9), dict(size=3), dict(scale_factor=3),
                                     dict(scale_factor=0.6), dict(size=1)], ids=str)
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None),
                                                ("linear", False), ("linear", True),
                                                ("area", None)])
def test_interpolate_1d(ref, mode, align_corners, options):
    ref.check(F.interpolate, TF.interpolate, ref.floats(2, 3, 7), mode=mode,
              align_corners=align_corners, **options)


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("trilinear", False),
                                                ("trilinear", True), ("area", None)])
def test_interpolate_3d(ref, mode, align_corners):
    ref.check(F.interpolate, TF.interpolate, ref.floats(1, 2, 3, 4, 5), size=(5, 3, 7),
              mode=mode, align_corners=align_corners, tol=PERMISSIVE)


def test_interpolate_nearest_float_indices(ref):
    """Sizes where float32 rounding of the source index matters."""
    for n, out in ((3, 7), (7, 3), (10, 3), (13, 29)):
        ref.check(F.interpolate, TF.interpolate, ref.floats(1, 1, n), size=out)
        ref.check(F.interpolate, TF.interpolate, ref.floats(1, 1, n), scale_factor=out / n)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_pixel_shuffle(ref, r):
    ref.check(F.pixel_shuffle, TF.pixel_shuffle, ref.floats(2, 2 * r * r, 3, 4), r)
    ref.check(F.pixel_shuffle, TF.pixel_shuffle, ref.floats(r * r, 2, 3), r)
    ref.check(F.pixel_unshuffle, TF.pixel_unshuffle, ref.floats(2, 2, 3 * r, 2 * r), r)
    ref.check(F.pixel_unshuffle, TF.pixel_unshuffle, ref.floats(3, 1, 2, r, r), r)


UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2)),
          dict(kernel_size=3, padding=1, dilation=2),
          dict(kernel_size=(3, 1), stride=2, padding=(1, 0))]


@pytest.mark.parametrize("options", UNFOLD, ids=str)
def test_unfold(ref, options):
    ref.check(F.unfold, TF.unfold, ref.floats(2, 3, 6, 7), **options)
    ref.check(F.unfold, TF.unfold, ref.floats(3, 6, 7), **options)


def _unfold_counts(size: tuple[int, int], kernel_size, stride=1, padding=0,
                   dilation=1) -> tuple[int, int]:
    """How many blocks unfold takes from an image of `size`, and how many values each."""
    k, s, p, d = ((v, v) if isinstance(v, int) else v
                  for v in (kernel_size, stride, padding, dilation))
    counts = [(n + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i, n in enumerate(size)]
    return math.prod(counts), math.prod(k)


@pytest.mark.parametrize("options", UNFOLD, ids=str)
def test_fold(ref, options):
    size = (6, 7)
    blocks, k = _unfold_counts(size, **options)
    ref.check(F.fold, TF.fold, ref.floats(2, 3 * k, blocks), size, **options)
    ref.check(F.fold, TF.fold, ref.floats(3 * k, blocks), size, **options)


@pytest.mark.parametrize("pads,mode,value", [((1, 2), "constant", None),
                                             ((1, 2, 0, 3), "constant", 1.5),
                                             ((2, 1, 1, 0), "reflect", None),
                                             ((2, 3, 1, 1), "replicate", None),
                                             ((1, 2, 2, 1), "circular", None),
                                             ((-1, 2), "constant", None)], ids=str)
def test_pad(ref, pads, mode, value):
    ref.check(F.pad, TF.pad, ref.floats(2, 3, 4, 5), pads, mode=mode, value=value)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("size and scale", pyburn.ArgumentError,
     lambda d: F.interpolate(_z(d, 1, 1, 4), size=2, scale_factor=2), ("exactly one",)),
    ("neither size nor scale", pyburn.ArgumentError,
     lambda d: F.interpolate(_z(d, 1, 1, 4)), ("exactly one",)),
    ("mode rank", pyburn.ShapeError,
     lambda d: F.interpolate(_z(d, 1, 1, 4), size=2, mode="bilinear"), ("bilinear", "4-d")),
    ("unknown mode", pyburn.ArgumentError,
     lambda d: F.interpolate(_z(d, 1, 1, 4), size=2, mode="lanczos"), ("lanczos",)),
    ("align_corners with nearest", pyburn.ArgumentError,
     lambda d: F.interpolate(_z(d, 1, 1, 4), size=2, align_corners=True), ("align_corners",)),
    ("antialias", pyburn.ArgumentError,
     lambda d: F.interpolate(_z(d, 1, 1, 4, 4), size=2, mode="bilinear", antialias=True),
     ("antialias",)),
    ("interpolate rank", pyburn.ShapeError,
     lambda d: F.interpolate(_z(d, 4, 4), size=2), ("(4, 4)",)),
    ("scale to empty", pyburn.ShapeError,
     lambda d: F.interpolate(_z(d, 1, 1, 4), scale_factor=0.1), ("empty",)),
    ("pixel_shuffle channels", pyburn.ShapeError,
     lambda d: F.pixel_shuffle(_z(d, 1, 6, 2, 2), 2), ("6 channels",)),
    ("pixel_unshuffle size", pyburn.ShapeError,
     lambda d: F.pixel_unshuffle(_z(d, 1, 1, 3, 4), 2), ("(3, 4)",)),
    ("unfold rank", pyburn.ShapeError,
     lambda d: F.unfold(_z(d, 4, 4), 2), ("(4, 4)",)),
    ("unfold kernel", pyburn.ShapeError,
     lambda d: F.unfold(_z(d, 1, 1, 2, 2), 3), ("larger",)),
    ("fold blocks", pyburn.ShapeError,
     lambda d: F.fold(_z(d, 1, 4, 5), (3, 3), 2), ("(1, 4, 5)", "(C * 4, 4)")),
    ("pad mode", pyburn.ArgumentError,
     lambda d: F.pad(_z(d, 2, 2), (1, 1), mode="mirror"), ("mirror",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
