"""Bad input raises a PyburnError subclass whose message names the problem, on every device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

import pyburn

from .helpers import raises, read_back


@dataclass(frozen=True)
class Bad:
    """A call that must fail: the error class (or a tuple of acceptable classes) and the words
    its message must contain (an inner tuple of words: any one of them)."""

    id: str
    error: type[Exception]
    call: Callable  # takes the device
    words: tuple = ()

    def __str__(self) -> str:
        return self.id


def z(*shape, d, dtype=None):
    """zeros on device d (short, for the table)."""
    return pyburn.zeros(shape, device=d, dtype=dtype)


def i32(data, d):
    return pyburn.tensor(data, dtype=pyburn.int32, device=d)


def _setitem(t, key, value):
    t[key] = value


SHAPE_ERRORS = [
    Bad("add", pyburn.ShapeError, lambda d: z(2, 3, d=d) + z(5, 7, d=d), ("2, 3", "5, 7")),
    Bad("add_3d", pyburn.ShapeError, lambda d: z(4, 1, 3, d=d) * z(2, 2, d=d), ("4, 1, 3", "2, 2")),
    Bad("compare", pyburn.ShapeError, lambda d: z(3, d=d) < z(4, d=d), ("3", "4")),
    Bad("where", pyburn.ShapeError,
        lambda d: pyburn.where(z(2, d=d, dtype=pyburn.bool), z(3, d=d), z(2, d=d)), ("2", "3")),
    Bad("matmul", pyburn.ShapeError, lambda d: z(2, 3, d=d) @ z(4, 5, d=d), ("2, 3", "4, 5")),
    Bad("matmul_batch", pyburn.ShapeError, lambda d: z(2, 2, 3, d=d) @ z(3, 3, 4, d=d),
        ("2, 2, 3", "3, 3, 4")),
    Bad("matmul_0d", pyburn.ShapeError, lambda d: pyburn.matmul(z(d=d), z(3, d=d)), ("()",)),
    Bad("dot", pyburn.ShapeError, lambda d: pyburn.dot(z(3, d=d), z(4, d=d)), ("3", "4")),
    Bad("reshape", pyburn.ShapeError, lambda d: z(2, 3, d=d).reshape(4, 2), ("2, 3", "4, 2")),
    Bad("reshape_two_infer", pyburn.ShapeError, lambda d: z(2, 3, d=d).reshape(-1, -1), ("-1",)),
    Bad("view", pyburn.ShapeError, lambda d: z(6, d=d).view(4), ("6", "4")),
    Bad("unflatten", pyburn.ShapeError, lambda d: z(2, 6, d=d).unflatten(1, (4, 2)), ("6",)),
    Bad("expand", pyburn.ShapeError, lambda d: z(3, d=d).expand(2, 4), ("3", "2, 4")),
    Bad("expand_fewer_dims", pyburn.ShapeError, lambda d: z(2, 3, d=d).expand(3), ("2, 3",)),
    Bad("broadcast_to", pyburn.ShapeError, lambda d: z(2, 3, d=d).broadcast_to((3, 3)),
        ("2, 3", "3, 3")),
    Bad("cat", pyburn.ShapeError,
        lambda d: pyburn.cat([z(2, 3, d=d), z(2, 4, d=d)], dim=0), ("2, 3", "2, 4")),
    Bad("cat_rank", pyburn.ShapeError,
        lambda d: pyburn.cat([z(2, 3, d=d), z(3, d=d)]), ("2, 3", "(3,)")),
    Bad("stack", pyburn.ShapeError,
        lambda d: pyburn.stack([z(2, 3, d=d), z(3, 2, d=d)]), ("2, 3", "3, 2")),
    Bad("setitem_value", pyburn.ShapeError,
        lambda d: _setitem(z(3, 4, d=d), 0, z(5, d=d)), ("4", "5")),
    Bad("mask", (pyburn.ShapeError, pyburn.IndexOutOfRange),
        lambda d: z(3, 4, d=d)[z(4, d=d, dtype=pyburn.bool)], ("3", "4")),
    Bad("index_tensors_broadcast", pyburn.ShapeError,
        lambda d: z(5, 5, d=d)[i32([0, 1], d), i32([0, 1, 2], d)], ("2", "3")),
    Bad("gather_rank", pyburn.ShapeError,
        lambda d: z(3, 4, d=d).gather(1, i32([0, 1], d)), ("3, 4", "(2,)")),
    Bad("scatter_src", pyburn.ShapeError,
        lambda d: z(3, 4, d=d).scatter(1, i32([[0, 1]], d), z(1, d=d)), ("1, 2",)),
    Bad("split_sizes", pyburn.ShapeError, lambda d: z(5, d=d).split([2, 2]), ("[2, 2]", "5")),
    Bad("masked_fill", pyburn.ShapeError,
        lambda d: z(3, 4, d=d).masked_fill(z(3, d=d, dtype=pyburn.bool), 1.0), ("3, 4", "(3,)")),
    Bad("einsum_sizes", pyburn.ShapeError,
        lambda d: pyburn.einsum("ij,jk->ik", z(2, 3, d=d), z(4, 5, d=d)), ("j", "3", "4")),
]

DIM_ERRORS = [
    Bad("sum", pyburn.DimError, lambda d: z(2, 3, d=d).sum(dim=2), ("2",)),
    Bad("sum_neg", pyburn.DimError, lambda d: z(2, 3, d=d).sum(dim=-3), ("-3",)),
    Bad("sum_tuple", pyburn.DimError, lambda d: z(2, 3, d=d).sum(dim=(0, 5)), ("5",)),
    Bad("max", pyburn.DimError, lambda d: z(2, 3, d=d).max(4), ("4",)),
    Bad("argmax", pyburn.DimError, lambda d: z(2, 3, d=d).argmax(dim=-5), ("-5",)),
    Bad("cumsum", pyburn.DimError, lambda d: z(2, 3, d=d).cumsum(2), ("2",)),
    Bad("transpose", pyburn.DimError, lambda d: z(2, 3, d=d).transpose(0, 3), ("3",)),
    Bad("permute_range", pyburn.DimError, lambda d: z(2, 3, d=d).permute(0, 2), ("2",)),
    Bad("squeeze", pyburn.DimError, lambda d: z(2, 1, d=d).squeeze(2), ("2",)),
    Bad("unsqueeze", pyburn.DimError, lambda d: z(2, 3, d=d).unsqueeze(4), ("4",)),
    Bad("unsqueeze_neg", pyburn.DimError, lambda d: z(2, 3, d=d).unsqueeze(-4), ("-4",)),
    Bad("flatten", pyburn.DimError, lambda d: z(2, 3, d=d).flatten(0, 2), ("2",)),
    Bad("cat", pyburn.DimError, lambda d: pyburn.cat([z(2, d=d), z(2, d=d)], dim=1), ("1",)),
    Bad("stack", pyburn.DimError, lambda d: pyburn.stack([z(2, d=d), z(2, d=d)], dim=3), ("3",)),
    Bad("flip", pyburn.DimError, lambda d: z(2, 3, d=d).flip(2), ("2",)),
    Bad("roll", pyburn.DimError, lambda d: z(2, 3, d=d).roll(1, 5), ("5",)),
    Bad("gather", pyburn.DimError,
        lambda d: z(2, 3, d=d).gather(2, pyburn.zeros((2, 3), dtype=pyburn.int32, device=d)),
        ("2",)),
    Bad("index_select", pyburn.DimError, lambda d: z(2, 3, d=d).index_select(-3, i32([0], d)),
        ("-3",)),
    Bad("sort", pyburn.DimError, lambda d: z(2, 3, d=d).sort(dim=2), ("2",)),
    Bad("size", pyburn.DimError, lambda d: z(2, 3, d=d).size(2), ("2",)),
    Bad("narrow", pyburn.DimError, lambda d: z(2, 3, d=d).narrow(3, 0, 1), ("3",)),
    Bad("too_many_indices", (pyburn.DimError, pyburn.IndexOutOfRange),
        lambda d: z(2, 3, d=d)[0, 0, 0], ("2",)),
    Bad("two_ellipses", (pyburn.ArgumentError, pyburn.DimError),
        lambda d: z(2, 3, d=d)[..., ...], (("...", "ellipsis"),)),
]

INDEX_ERRORS = [
    Bad("int", pyburn.IndexOutOfRange, lambda d: z(3, 4, d=d)[3], ("3",)),
    Bad("neg_int", pyburn.IndexOutOfRange, lambda d: z(3, 4, d=d)[-4], ("-4", "3")),
    Bad("second_dim", pyburn.IndexOutOfRange, lambda d: z(3, 4, d=d)[0, 4], ("4", "dim 1")),
    Bad("tensor", pyburn.IndexOutOfRange, lambda d: z(3, 4, d=d)[i32([0, 7], d)], ("7", "3")),
    Bad("list", pyburn.IndexOutOfRange, lambda d: z(3, 4, d=d)[[1, -5]], ("-5", "3")),
    Bad("setitem", pyburn.IndexOutOfRange, lambda d: _setitem(z(3, d=d), 3, 1.0), ("3",)),
    Bad("gather", pyburn.IndexOutOfRange,
        lambda d: z(2, 3, d=d).gather(1, i32([[0, 3], [1, 1]], d)), ("3",)),
    Bad("scatter", pyburn.IndexOutOfRange,
        lambda d: z(2, 3, d=d).scatter(0, i32([[2, 0, 0]], d), 1.0), ("2",)),
    Bad("index_select", pyburn.IndexOutOfRange,
        lambda d: z(2, 3, d=d).index_select(1, i32([0, 5], d)), ("5", "3")),
    Bad("take", pyburn.IndexOutOfRange, lambda d: z(2, 3, d=d).take(i32([6], d)), ("6",)),
    Bad("index_put", pyburn.IndexOutOfRange,
        lambda d: z(3, d=d).index_put((i32([4], d),), z(1, d=d)), ("4", "3")),
    Bad("one_hot", pyburn.IndexOutOfRange,
        lambda d: pyburn.one_hot(i32([0, 3], d), num_classes=3), ("3",)),
    Bad("one_hot_negative", pyburn.IndexOutOfRange,
        lambda d: pyburn.one_hot(i32([0, -1], d), num_classes=3), ("-1",)),
    Bad("empty_dim", pyburn.IndexOutOfRange, lambda d: z(0, 3, d=d)[0], ("0",)),
]

DTYPE_ERRORS = [
    Bad("unknown_name", pyburn.DTypeError, lambda d: pyburn.zeros(2, dtype="complex64", device=d),
        ("complex64",)),
    Bad("bitwise_float", pyburn.DTypeError, lambda d: z(2, d=d) & z(2, d=d), ("float32",)),
    Bad("invert_float", pyburn.DTypeError, lambda d: ~z(2, d=d), ("float32",)),
    Bad("shift_float", pyburn.DTypeError, lambda d: z(2, d=d) << 1, ("float32",)),
    Bad("bitwise_fn_float", pyburn.DTypeError,
        lambda d: pyburn.bitwise_xor(z(2, d=d), i32([1, 2], d)), ("float32",)),
    Bad("index_float", pyburn.DTypeError, lambda d: z(3, d=d)[z(2, d=d)], ("float32",)),
    Bad("gather_float_index", pyburn.DTypeError, lambda d: z(2, 3, d=d).gather(1, z(2, 3, d=d)),
        ("float32",)),
    Bad("rand_int", pyburn.DTypeError, lambda d: pyburn.rand(2, dtype=pyburn.int32, device=d),
        ("int32",)),
    Bad("where_cond_float", pyburn.DTypeError,
        lambda d: pyburn.where(z(2, d=d), z(2, d=d), z(2, d=d)), ("float32", "bool")),
    Bad("one_hot_float", pyburn.DTypeError, lambda d: pyburn.one_hot(z(2, d=d), 3), ("float32",)),
    Bad("tensor_of_strings", (pyburn.DTypeError, pyburn.ArgumentError),
        lambda d: pyburn.tensor(["a", "b"], device=d), ("str",)),
]

ARGUMENT_ERRORS = [
    Bad("ragged", (pyburn.ShapeError, pyburn.ArgumentError),
        lambda d: pyburn.tensor([[1, 2], [3]], device=d), ("2", "1")),
    Bad("item_many", pyburn.ArgumentError, lambda d: z(2, d=d).item(), ("2",)),
    Bad("bool_many", pyburn.ArgumentError, lambda d: bool(z(2, d=d)), ("2",)),
    Bad("arange_step_zero", pyburn.ArgumentError, lambda d: pyburn.arange(0, 5, 0, device=d),
        ("step",)),
    Bad("linspace_negative", pyburn.ArgumentError, lambda d: pyburn.linspace(0, 1, -2, device=d),
        ("-2",)),
    Bad("zeros_negative", (pyburn.ArgumentError, pyburn.ShapeError),
        lambda d: pyburn.zeros(2, -1, device=d), ("-1",)),
    Bad("randint_empty_range", pyburn.ArgumentError,
        lambda d: pyburn.randint(5, 5, (2,), device=d), ("5",)),
    Bad("topk_too_big", (pyburn.ArgumentError, pyburn.IndexOutOfRange),
        lambda d: z(2, 3, d=d).topk(4), ("4", "3")),
    Bad("chunk_zero", pyburn.ArgumentError, lambda d: z(4, d=d).chunk(0), ("0",)),
    Bad("split_zero", pyburn.ArgumentError, lambda d: z(4, d=d).split(0), ("0",)),
    Bad("pad_mode", pyburn.ArgumentError, lambda d: pyburn.pad(z(3, d=d), (1, 1), mode="wrap"),
        ("wrap",)),
    Bad("pad_odd", pyburn.ArgumentError, lambda d: pyburn.pad(z(3, d=d), (1,)), ("1",)),
    Bad("pad_reflect_too_wide", (pyburn.ArgumentError, pyburn.ShapeError),
        lambda d: pyburn.pad(z(3, d=d), (3, 0), mode="reflect"), ("3",)),
    Bad("narrow_past_end", (pyburn.ArgumentError, pyburn.IndexOutOfRange),
        lambda d: z(5, d=d).narrow(0, 3, 4), ("3", "4")),
    Bad("slice_step_zero", pyburn.ArgumentError, lambda d: z(5, d=d)[::0], ("step",)),
    Bad("scatter_reduce", pyburn.ArgumentError,
        lambda d: z(3, d=d).scatter(0, i32([0], d), 1.0, reduce="max"), ("max",)),
    Bad("norm_p", pyburn.ArgumentError, lambda d: z(3, d=d).norm(p="nuc"), ("nuc",)),
    Bad("einsum_operands", pyburn.ArgumentError,
        lambda d: pyburn.einsum("ij,jk->ik", z(2, 3, d=d)), ("2", "1")),
    Bad("einsum_output_letter", pyburn.ArgumentError,
        lambda d: pyburn.einsum("ij->k", z(2, 3, d=d)), ("k",)),
    Bad("repeat_fewer_dims", (pyburn.ArgumentError, pyburn.ShapeError),
        lambda d: z(2, 3, d=d).repeat(2), ("2",)),
    Bad("max_of_empty", (pyburn.ArgumentError, pyburn.ShapeError), lambda d: z(0, d=d).amax(),
        (("empty", "zero", "no elements"),)),
    Bad("argmax_of_empty", (pyburn.ArgumentError, pyburn.ShapeError),
        lambda d: z(3, 0, d=d).argmax(dim=1), (("empty", "zero", "no elements"),)),
    Bad("unknown_device", pyburn.DeviceError, lambda d: z(2, d="nodevice"), ("nodevice",)),
]

ALL = ([("shape", b) for b in SHAPE_ERRORS] + [("dim", b) for b in DIM_ERRORS]
       + [("index", b) for b in INDEX_ERRORS] + [("dtype", b) for b in DTYPE_ERRORS]
       + [("argument", b) for b in ARGUMENT_ERRORS])


@pytest.mark.parametrize("kind,bad", ALL, ids=[f"{k}-{b.id}" for k, b in ALL])
def test_bad_input_raises_a_named_error(device, kind, bad):
    with raises(bad.error, *bad.words):
        read_back(bad.call(device))


def test_errors_are_pyburn_errors_and_builtin_kinds():
    """Code that catches ValueError/IndexError/TypeError keeps working."""
    assert issubclass(pyburn.ShapeError, ValueError)
    assert issubclass(pyburn.DimError, IndexError)
    assert issubclass(pyburn.IndexOutOfRange, IndexError)
    assert issubclass(pyburn.DTypeError, TypeError)
    for cls in (pyburn.ShapeError, pyburn.DimError, pyburn.IndexOutOfRange, pyburn.DTypeError,
                pyburn.DeviceError, pyburn.ArgumentError):
        assert issubclass(cls, pyburn.PyburnError)


def test_missing_dtype_capability(device):
    """A dtype the device lacks is a DTypeError naming it, never a crash deep inside."""
    lacking = [n for n in ("float64", "int64", "float16") if n not in device.caps]
    if not lacking:
        pytest.skip(f"{device} has every optional dtype")
    for name in lacking:
        with raises(pyburn.DTypeError, name):
            pyburn.zeros(2, dtype=getattr(pyburn, name), device=device)


def test_mixing_devices(device, other_device):
    a = pyburn.ones(3, device=device)
    b = pyburn.ones(3, device=other_device)
    for call in (lambda: a + b, lambda: pyburn.where(a > 0, a, b), lambda: a @ b,
                 lambda: pyburn.cat([a, b]), lambda: a.gather(0, pyburn.zeros(
                     3, dtype=pyburn.int32, device=other_device))):
        with raises(pyburn.DeviceError, device.name, other_device.name):
            call()
