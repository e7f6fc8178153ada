"""Movement ops: reshape and friends, permutations, broadcasting, repetition, joins, pads."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest

import pyburn

from .helpers import VIEWS, np


@dataclass(frozen=True)
class Move:
    """A movement op on one tensor of `shape`: pyburn call and numpy reference (None: the
    same call works on a numpy array)."""

    id: str
    shape: tuple[int, ...]
    fn: Callable
    ref: Callable | None = None

    def __str__(self) -> str:
        return self.id


def _chunks(a, chunks: int, axis: int):
    """torch.chunk: pieces of ceil(size / chunks), the last one smaller (so maybe fewer)."""
    size = a.shape[axis]
    step = max(1, math.ceil(size / chunks))
    return _split(a, step, axis)


def _split(a, sizes, axis: int):
    """torch.split: pieces of `sizes` (an int: that size, the last one smaller)."""
    total = a.shape[axis]
    if isinstance(sizes, int):
        sizes = [min(sizes, total - s) for s in range(0, total, sizes)] or [0]
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(a, bounds, axis=axis))


MOVES = [
    Move("reshape", (2, 3, 4), lambda t: t.reshape(4, 6)),
    Move("reshape_tuple", (2, 3, 4), lambda t: t.reshape((6, 4))),
    Move("reshape_infer", (2, 3, 4), lambda t: t.reshape(2, -1, 3)),
    Move("reshape_flat", (2, 3, 4), lambda t: t.reshape(-1)),
    Move("reshape_0d", (1, 1), lambda t: t.reshape(())),
    Move("reshape_from_0d", (), lambda t: t.reshape(1, 1, 1)),
    Move("reshape_empty", (0, 6), lambda t: t.reshape(3, 0, 2)),
    Move("view", (2, 3, 4), lambda t: t.view(3, 8), lambda a: a.reshape(3, 8)),
    Move("flatten", (2, 3, 4), lambda t: t.flatten(), lambda a: a.reshape(-1)),
    Move("flatten_1", (2, 3, 4), lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    Move("flatten_0_1", (2, 3, 4), lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    Move("flatten_neg", (2, 3, 4, 1), lambda t: t.flatten(-3, -2), lambda a: a.reshape(2, 12, 1)),
    Move("flatten_0d", (), lambda t: t.flatten(), lambda a: a.reshape(1)),
    Move("unflatten", (2, 6, 4), lambda t: t.unflatten(1, (3, 2)),
         lambda a: a.reshape(2, 3, 2, 4)),
    Move("unflatten_neg", (2, 12), lambda t: t.unflatten(-1, (2, -1, 3)),
         lambda a: a.reshape(2, 2, 2, 3)),
    Move("squeeze_all", (1, 3, 1, 2), lambda t: t.squeeze(), lambda a: np.squeeze(a)),
    Move("squeeze_0", (1, 3, 1, 2), lambda t: t.squeeze(0), lambda a: np.squeeze(a, 0)),
    Move("squeeze_neg", (1, 3, 1, 2), lambda t: t.squeeze(-2), lambda a: np.squeeze(a, -2)),
    Move("squeeze_tuple", (1, 3, 1, 2), lambda t: t.squeeze((0, 2)),
         lambda a: np.squeeze(a, (0, 2))),
    Move("squeeze_not_one", (1, 3, 1, 2), lambda t: t.squeeze(1), lambda a: a),
    Move("unsqueeze_0", (3, 2), lambda t: t.unsqueeze(0), lambda a: a[None]),
    Move("unsqueeze_last", (3, 2), lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    Move("unsqueeze_mid", (3, 2), lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    Move("unsqueeze_neg", (3, 2), lambda t: t.unsqueeze(-2), lambda a: a[:, None]),
    Move("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1),
         lambda a: np.transpose(a, (2, 0, 1))),
    Move("permute_tuple", (2, 3, 4), lambda t: t.permute((1, 2, 0)),
         lambda a: np.transpose(a, (1, 2, 0))),
    Move("permute_neg", (2, 3, 4), lambda t: t.permute(-1, -3, -2),
         lambda a: np.transpose(a, (2, 0, 1))),
    Move("transpose", (2, 3, 4), lambda t: t.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    Move("transpose_neg", (2, 3, 4), lambda t: t.transpose(-1, 0),
         lambda a: np.swapaxes(a, -1, 0)),
    Move("swapdims", (2, 3, 4), lambda t: t.swapdims(0, 1), lambda a: np.swapaxes(a, 0, 1)),
    Move("T", (3, 5), lambda t: t.T, lambda a: a.T),
    Move("movedim", (2, 3, 4), lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    Move("movedim_many", (2, 3, 4), lambda t: t.movedim((0, 1), (2, 0)),
         lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    Move("expand", (3, 1), lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4))),
    Move("expand_keep", (3, 1), lambda t: t.expand(2, -1, 4),
         lambda a: np.broadcast_to(a, (2, 3, 4))),
    Move("expand_tuple", (1, 3), lambda t: t.expand((2, 3)), lambda a: np.broadcast_to(a, (2, 3))),
    Move("expand_0d", (), lambda t: t.expand(2, 2), lambda a: np.broadcast_to(a, (2, 2))),
    Move("expand_to_zero", (1, 3), lambda t: t.expand(0, 3), lambda a: np.broadcast_to(a, (0, 3))),
    Move("broadcast_to", (1, 4), lambda t: t.broadcast_to((3, 4)),
         lambda a: np.broadcast_to(a, (3, 4))),
    Move("broadcast_to_fn", (4,), lambda t: pyburn.broadcast_to(t, (2, 3, 4)),
         lambda a: np.broadcast_to(a, (2, 3, 4))),
    Move("repeat", (2, 3), lambda t: t.repeat(2, 3), lambda a: np.tile(a, (2, 3))),
    Move("repeat_more_dims", (2, 3), lambda t: t.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3))),
    Move("repeat_zero", (2, 3), lambda t: t.repeat(0, 1), lambda a: np.tile(a, (0, 1))),
    Move("tile", (2, 3), lambda t: t.tile((2,)), lambda a: np.tile(a, (2,))),
    Move("tile_more", (2, 3), lambda t: t.tile((2, 1, 2)), lambda a: np.tile(a, (2, 1, 2))),
    Move("flip", (2, 3, 4), lambda t: t.flip(0), lambda a: np.flip(a, 0)),
    Move("flip_many", (2, 3, 4), lambda t: t.flip((0, 2)), lambda a: np.flip(a, (0, 2))),
    Move("flip_neg", (2, 3, 4), lambda t: t.flip(-1), lambda a: np.flip(a, -1)),
    Move("roll", (3, 4), lambda t: t.roll(1, 0), lambda a: np.roll(a, 1, 0)),
    Move("roll_neg", (3, 4), lambda t: t.roll(-2, -1), lambda a: np.roll(a, -2, -1)),
    Move("roll_big", (3, 4), lambda t: t.roll(9, 1), lambda a: np.roll(a, 9, 1)),
    Move("roll_many", (3, 4), lambda t: t.roll((1, 2), (0, 1)),
         lambda a: np.roll(a, (1, 2), (0, 1))),
    Move("roll_flat", (3, 4), lambda t: t.roll(5), lambda a: np.roll(a, 5)),
    Move("narrow", (3, 5), lambda t: t.narrow(1, 1, 3), lambda a: a[:, 1:4]),
    Move("narrow_neg", (3, 5), lambda t: t.narrow(-2, 2, 1), lambda a: a[2:3]),
    Move("narrow_empty", (3, 5), lambda t: t.narrow(1, 5, 0), lambda a: a[:, 5:5]),
    Move("chunk", (2, 7), lambda t: t.chunk(3, dim=1), lambda a: _chunks(a, 3, 1)),
    Move("chunk_fewer", (6, 2), lambda t: t.chunk(4), lambda a: _chunks(a, 4, 0)),
    Move("chunk_neg", (2, 6), lambda t: t.chunk(2, -1), lambda a: _chunks(a, 2, -1)),
    Move("split", (5, 3), lambda t: t.split(2), lambda a: _split(a, 2, 0)),
    Move("split_sizes", (5, 3), lambda t: t.split([1, 3, 1]), lambda a: _split(a, [1, 3, 1], 0)),
    Move("split_dim", (2, 5), lambda t: t.split(3, dim=-1), lambda a: _split(a, 3, -1)),
    Move("split_zero_size", (4, 3), lambda t: t.split([0, 4], 0), lambda a: _split(a, [0, 4], 0)),
    Move("contiguous", (2, 3), lambda t: t.T.contiguous(), lambda a: a.T),
]


@pytest.mark.parametrize("move", MOVES, ids=str)
def test_movement(check, move):
    check.op(move.fn, check.floats(move.shape), ref=move.ref)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "int64", "float64", "uint8"])
@pytest.mark.parametrize("move", [m for m in MOVES if m.id in ("permute", "expand", "flip",
                                                              "roll_many", "repeat", "split")],
                         ids=str)
def test_movement_keeps_dtype(check, move, dtype):
    check.require(dtype)
    check.op(move.fn, check.values(move.shape, dtype), ref=move.ref)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("move", [m for m in MOVES if m.shape == (2, 3, 4)], ids=str)
def test_movement_of_views(check, move, view):
    """Every op also takes a non-contiguous input (a transpose, a slice with steps, ...)."""
    check.op(move.fn, check.floats(move.shape, view=view), ref=move.ref)


# Chains of views fed to further ops: the result of one strided view is the input of the next.
CHAINS = {
    "permute_reshape": (lambda t: t.permute(2, 0, 1).reshape(4, 6),
                        lambda a: np.transpose(a, (2, 0, 1)).reshape(4, 6)),
    "transpose_flip_add": (lambda t: t.transpose(0, 1).flip(0) + 1,
                           lambda a: np.flip(np.swapaxes(a, 0, 1), 0) + 1),
    "step_then_step": (lambda t: t[:, ::2][..., 1::2], lambda a: a[:, ::2][..., 1::2]),
    "expand_then_reshape": (lambda t: t[:, :1].expand(2, 3, 4).reshape(6, 4),
                            lambda a: np.broadcast_to(a[:, :1], (2, 3, 4)).reshape(6, 4)),
    "slice_transpose_sum": (lambda t: t[1:, ::2].transpose(1, 2).sum(1),
                            lambda a: np.swapaxes(a[1:, ::2], 1, 2).sum(1)),
    "narrow_permute_matmul": (lambda t: t.narrow(2, 1, 3).permute(0, 2, 1) @ t[:, :, :3],
                              lambda a: np.transpose(a[:, :, 1:4], (0, 2, 1)) @ a[:, :, :3]),
    "unsqueeze_expand_mul": (lambda t: t.unsqueeze(1).expand(2, 5, 3, 4) * t[:, None, :, :1],
                             lambda a: np.broadcast_to(a[:, None], (2, 5, 3, 4))
                             * a[:, None, :, :1]),
    "roll_of_flip_of_view": (lambda t: t.transpose(0, 2).flip(1).roll(1, 0),
                             lambda a: np.roll(np.flip(np.swapaxes(a, 0, 2), 1), 1, 0)),
}


@pytest.mark.parametrize("name", CHAINS)
def test_chained_views(check, name):
    fn, ref = CHAINS[name]
    check.op(fn, check.floats((2, 3, 4)), ref=ref)


# ---- joins ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_cat(check, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if d != dim % 3 else n for d, s in enumerate(shape))
              for n, shape in zip((1, 3, 2), shapes)]
    xs = tuple(check.floats(s) for s in shapes)
    check.op(lambda *ts: pyburn.cat(list(ts), dim=dim), *xs,
             ref=lambda *a: np.concatenate(a, axis=dim))
    check.op(lambda *ts: pyburn.cat(ts, dim), *xs, ref=lambda *a: np.concatenate(a, axis=dim))


def test_cat_with_empty_and_views(check):
    a, b = check.floats((2, 3), view="transposed"), check.floats((0, 3))
    c = check.floats((3, 3), view="stepped")
    check.op(lambda x, y, z: pyburn.cat([x, y, z]), a, b, c, ref=lambda *t: np.concatenate(t))
    check.op(lambda x: pyburn.cat([x]), a, ref=lambda x: x)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(check, dim):
    xs = tuple(check.floats((2, 3)) for _ in range(3))
    check.op(lambda *ts: pyburn.stack(list(ts), dim=dim), *xs,
             ref=lambda *a: np.stack(a, axis=dim))


def test_stack_of_0d_and_ints(check):
    xs = tuple(check.ints(()) for _ in range(4))
    check.op(lambda *ts: pyburn.stack(list(ts)), *xs, ref=lambda *a: np.stack(a))


def test_expand_as(check):
    check.op(lambda t, o: t.expand_as(o), check.floats((3, 1)), check.floats((2, 3, 5)),
             ref=lambda a, o: np.broadcast_to(a, o.shape))


# ---- pad -----------------------------------------------------------------------------------

def _np_pad(a, pad, mode, value=0.0):
    """torch.nn.functional.pad order: (last_before, last_after, previous_before, ...)."""
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return np.pad(a, widths, mode="constant", constant_values=value)
    return np.pad(a, widths, mode={"reflect": "reflect", "replicate": "edge"}[mode])


PADS = [
    ((1, 2), "constant", 0.0),
    ((0, 0, 2, 1), "constant", -1.5),
    ((1, 1, 1, 1), "constant", 3.0),
    ((2, 0), "reflect", 0.0),
    ((1, 2, 2, 1), "reflect", 0.0),
    ((3, 3), "reflect", 0.0),
    ((2, 1), "replicate", 0.0),
    ((1, 0, 3, 2), "replicate", 0.0),
]


@pytest.mark.parametrize("pad,mode,value", PADS, ids=[f"{m}{p}" for p, m, _ in PADS])
def test_pad(check, pad, mode, value):
    x = check.floats((2, 4, 5))
    kwargs = {"value": value} if mode == "constant" else {}
    check.op(lambda t: pyburn.pad(t, pad, mode=mode, **kwargs), x,
             ref=lambda a: _np_pad(a, pad, mode, value))


def test_pad_ints_and_views(check):
    check.op(lambda t: pyburn.pad(t, (1, 1), value=7), check.ints((2, 3)),
             ref=lambda a: _np_pad(a, (1, 1), "constant", 7))
    check.op(lambda t: pyburn.pad(t, (1, 2, 0, 1), mode="reflect"),
             check.floats((3, 4), view="transposed"),
             ref=lambda a: _np_pad(a, (1, 2, 0, 1), "reflect"))
    check.op(lambda t: pyburn.pad(t, pad=(2, 2)), check.floats((2, 0)),
             ref=lambda a: _np_pad(a, (2, 2), "constant"))
