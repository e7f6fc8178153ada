"""default_collate on every kind of item it takes, and its errors."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import pyburn
from pyburn.data import default_collate, to_device

Sample = namedtuple("Sample", ["x", "y"])


def test_tensors_are_stacked(device):
    items = [pyburn.tensor([[i, i + 0.5]], device=device) for i in range(3)]
    batch = default_collate(items)
    assert batch.shape == (3, 1, 2) and batch.dtype is pyburn.float32 and batch.device is device
    assert batch.tolist() == [[[0.0, 0.5]], [[1.0, 1.5]], [[2.0, 2.5]]]


@pytest.mark.parametrize(("values", "dtype", "expected"), [
    ([1, 2, 3], pyburn.int32, [1, 2, 3]),
    ([1.5, 2, 3], pyburn.float32, [1.5, 2.0, 3.0]),
    ([True, False], pyburn.bool_, [True, False]),
])
def test_numbers_become_a_1d_tensor(device, values, dtype, expected):
    batch = default_collate(values, device=device)
    assert batch.dtype is dtype and batch.device is device
    assert batch.tolist() == expected


def test_numpy_arrays_and_scalars_keep_their_dtype(device):
    arrays = [np.full((2,), i, dtype=np.int32) for i in range(3)]
    batch = default_collate(arrays, device=device)
    assert batch.dtype is pyburn.int32 and batch.tolist() == [[0, 0], [1, 1], [2, 2]]
    scalars = default_collate([np.float32(0.25), np.float32(1.0)], device=device)
    assert scalars.dtype is pyburn.float32 and scalars.tolist() == [0.25, 1.0]
    with pytest.raises(pyburn.ShapeError, match="arrays of different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])


def test_nested_structures_are_collated_field_by_field(device):
    items = [{"image": pyburn.full((2,), float(i), device=device),
              "meta": (i, f"name{i}", [i * 0.5, True]),
              "pair": Sample(x=i, y=-i)} for i in range(4)]
    batch = default_collate(items, device=device)
    assert list(batch) == ["image", "meta", "pair"]
    assert batch["image"].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    ids, names, inner = batch["meta"]
    assert isinstance(batch["meta"], tuple)
    assert ids.tolist() == [0, 1, 2, 3] and ids.dtype is pyburn.int32
    assert names == ["name0", "name1", "name2", "name3"]
    assert isinstance(inner, list) and inner[0].tolist() == [0.0, 0.5, 1.0, 1.5]
    assert inner[1].tolist() == [True] * 4 and inner[1].dtype is pyburn.bool_
    assert isinstance(batch["pair"], Sample)
    assert batch["pair"].x.tolist() == [0, 1, 2, 3] and batch["pair"].y.tolist() == [0, -1, -2,
                                                                                      -3]


def test_tensors_move_to_the_requested_device(device):
    others = [d for d in pyburn.available_devices() if d is not device]
    if not others:
        pytest.skip("needs a second device")
    batch = default_collate([pyburn.ones(2, device=device)] * 2, device=others[0])
    assert batch.device is others[0]
    moved = to_device({"a": (pyburn.zeros(1, device=device), "s")}, others[0])
    assert moved["a"][0].device is others[0] and moved["a"][1] == "s"
    assert to_device(batch, None) is batch


@pytest.mark.parametrize(("items", "match"), [
    ([], "empty"),
    ([object()], "cannot batch a object at item"),
    ([(1, 2), (1,)], r"different lengths at item: item 0 has 2, item 1 has 1"),
    ([{"a": 1}, {"b": 1}], "different keys"),
    ([1, "x"], "item 0 is a int, item 1 is a str"),
    ([{"a": (1, None)}, {"a": (2, None)}], r"NoneType at item\['a'\]\[1\]"),
])
def test_bad_items_raise_argument_errors(items, match):
    with pytest.raises(pyburn.ArgumentError, match=match):
        default_collate(items)


def test_tensors_of_different_shapes_raise_shape_error():
    with pytest.raises(pyburn.ShapeError, match=r"different shapes at item\[0\]"):
        default_collate([(pyburn.zeros(2),), (pyburn.zeros(3),)])
