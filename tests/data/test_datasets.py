"""The dataset wrappers, TensorDataset, FakeDataset and the seeded permutation, against
plain-list references and the documented Philox stream."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.data import (
    ConcatDataset,
    Dataset,
    FakeDataset,
    InMemoryDataset,
    MapDataset,
    PartialDataset,
    SelectionDataset,
    ShuffledDataset,
    TensorDataset,
    WindowDataset,
    permutation,
)
from pyburn.data import shuffle as shuffle_module
from pyburn.random import philox_block, random_words

ITEMS = list(range(10, 20))


def test_lists_and_custom_classes_are_datasets():
    class Squares:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i * i

    assert isinstance([1, 2], Dataset)
    assert isinstance(Squares(), Dataset)
    assert list(MapDataset(Squares(), str)) == ["0", "1", "4", "9"]
    assert not isinstance(3, Dataset)


def test_in_memory_dataset_is_a_list():
    ds = InMemoryDataset(iter(ITEMS))
    assert len(ds) == 10
    assert [ds[i] for i in range(10)] == ITEMS
    assert ds[-1] == ITEMS[-1] and ds[-10] == ITEMS[0]
    assert list(ds) == ITEMS  # iteration stops at IndexOutOfRange, an IndexError


@pytest.mark.parametrize("bad", [10, -11, 1000])
def test_out_of_range_index_names_index_and_length(bad):
    with pytest.raises(pyburn.IndexOutOfRange, match=f"index {bad} is out of range.*length 10"):
        InMemoryDataset(ITEMS)[bad]


@pytest.mark.parametrize("bad", [1.0, "1", None, True])
def test_non_int_index_is_an_argument_error(bad):
    with pytest.raises(pyburn.ArgumentError, match="indexed by an int"):
        InMemoryDataset(ITEMS)[bad]


def test_map_dataset_applies_fn_lazily():
    calls = []

    def fn(x):
        calls.append(x)
        return x * 2

    ds = MapDataset(ITEMS, fn)
    assert calls == []
    assert ds[3] == 26 and ds[-1] == 38
    assert calls == [13, 19]
    assert len(ds) == 10
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[10]
    with pytest.raises(pyburn.ArgumentError, match="callable"):
        MapDataset(ITEMS, 3)
    with pytest.raises(pyburn.ArgumentError, match="needs a dataset"):
        MapDataset(5, str)


def test_shuffled_dataset_is_the_documented_permutation():
    ds = ShuffledDataset(ITEMS, seed=42)
    order = permutation(10, 42)
    assert [ds[i] for i in range(10)] == [ITEMS[j] for j in order]
    assert sorted(ds) == ITEMS
    assert list(ShuffledDataset(ITEMS, seed=42)) == list(ds)
    assert list(ShuffledDataset(ITEMS, seed=43)) != list(ds)
    with pytest.raises(pyburn.ArgumentError, match="int seed"):
        ShuffledDataset(ITEMS, seed=1.5)
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[-11]


def test_partial_dataset_is_a_slice():
    assert list(PartialDataset(ITEMS, 2, 5)) == ITEMS[2:5]
    assert list(PartialDataset(ITEMS, 7)) == ITEMS[7:]
    assert list(PartialDataset(ITEMS, 4, 4)) == []
    assert PartialDataset(ITEMS, 2, 5)[-1] == ITEMS[4]
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        PartialDataset(ITEMS, 2, 5)[3]


@pytest.mark.parametrize(("start", "end"), [(-1, 5), (5, 4), (0, 11), (11, None)])
def test_partial_dataset_rejects_bad_bounds(start, end):
    with pytest.raises(pyburn.ArgumentError, match="0 <= start <= end <= 10"):
        PartialDataset(ITEMS, start, end)


def test_selection_dataset_picks_items(device):
    ds = SelectionDataset(ITEMS, [3, -1, 3, 0])
    assert list(ds) == [13, 19, 13, 10] and ds.indices == [3, 9, 3, 0]
    assert ds[-1] == 10 and len(SelectionDataset(ITEMS, [])) == 0
    with pytest.raises(pyburn.IndexOutOfRange, match="index 10 is out of range.*length 10"):
        SelectionDataset(ITEMS, [1, 10])
    with pytest.raises(pyburn.IndexOutOfRange, match="length 4"):
        ds[4]
    fast = SelectionDataset(TensorDataset(pyburn.arange(10, device=device) * 2), [7, 1, 1])
    assert fast.get_batch([2, 0])[0].tolist() == [2, 14]
    assert not hasattr(ds, "get_batch")


def test_fake_dataset_items_are_the_documented_draws(device):
    ds = FakeDataset(5, shape=(2, 3), num_classes=10, seed=42, device=device)
    image, label = ds[3]
    assert image.shape == (2, 3) and image.dtype is pyburn.float32 and image.device is device
    words = random_words(7, 42, 3 * 2**32)  # item 3 reads its stretch of the stream
    assert image.reshape(6).tolist() == [(w & 0xFFFFFF) / 2**24 for w in words[:6]]
    assert label == words[6] * 10 >> 32  # (no rejection: its low half is >= 2**32 % 10)
    again = FakeDataset(5, shape=(2, 3), num_classes=10, seed=42, device=device)
    assert again[-2][0].tolist() == image.tolist() and again[-2][1] == label
    assert ds[2][0].tolist() != image.tolist()
    assert FakeDataset(5, shape=(2, 3), seed=43, device=device)[3][0].tolist() != image.tolist()


def test_fake_dataset_labels_and_arguments():
    labels = [FakeDataset(300, shape=(), num_classes=4, device="flex")[i][1] for i in range(300)]
    assert set(labels) == {0, 1, 2, 3}
    assert len(FakeDataset(0)) == 0 and FakeDataset(3)[0][0].shape == (1, 28, 28)
    pyburn.manual_seed(3)
    unseeded = FakeDataset(2, seed=None).seed
    pyburn.manual_seed(3)
    assert FakeDataset(2, seed=None).seed == unseeded
    for kwargs, match in [({"length": -1}, "length must be an int >= 0"),
                          ({"length": 2, "num_classes": 0}, "num_classes must be an int >= 1"),
                          ({"length": 2, "shape": (2, -1)}, "negative"),
                          ({"length": 2, "seed": "0"}, "seed must be an int or None")]:
        with pytest.raises(pyburn.PyburnError, match=match):
            FakeDataset(**kwargs)
    with pytest.raises(pyburn.IndexOutOfRange):
        FakeDataset(2)[2]


def test_concat_dataset_joins_in_order():
    parts = [[1, 2, 3], [], [4], [5, 6]]
    ds = ConcatDataset(parts)
    assert len(ds) == 6
    assert list(ds) == [1, 2, 3, 4, 5, 6]
    assert ds[-3] == 4
    assert len(ConcatDataset([])) == 0
    with pytest.raises(pyburn.IndexOutOfRange, match="length 6"):
        ds[6]
    with pytest.raises(pyburn.ArgumentError, match="part 1"):
        ConcatDataset([[1], 2])


def test_window_dataset_slides():
    ds = WindowDataset(ITEMS, 3)
    assert len(ds) == 8
    assert list(ds) == [tuple(ITEMS[i:i + 3]) for i in range(8)]
    assert len(WindowDataset(ITEMS, 10)) == 1
    assert len(WindowDataset(ITEMS, 11)) == 0 and list(WindowDataset(ITEMS, 11)) == []
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[8]
    for bad in (0, -1, 2.0):
        with pytest.raises(pyburn.ArgumentError, match="size must be an int >= 1"):
            WindowDataset(ITEMS, bad)


def test_tensor_dataset_items_and_batches(device):
    x = pyburn.arange(24, device=device).reshape(6, 2, 2).float()
    y = pyburn.tensor([5, 4, 3, 2, 1, 0], device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    item = ds[4]
    assert isinstance(item, tuple) and len(item) == 2
    assert item[0].tolist() == [[16.0, 17.0], [18.0, 19.0]] and item[1].item() == 1
    bx, by = ds.get_batch([5, 0, 5])
    assert bx.shape == (3, 2, 2) and bx.dtype is pyburn.float32 and bx.device is device
    assert bx.tolist() == [x[5].tolist(), x[0].tolist(), x[5].tolist()]
    assert by.tolist() == [0, 5, 0]
    assert ds.get_batch([])[0].shape == (0, 2, 2)
    # on a GPU the bounds check runs there and raises at the next read (docs/api.md)
    with pytest.raises(pyburn.IndexOutOfRange):
        ds.get_batch([6])[0].tolist()
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[6][0].tolist()


def test_tensor_dataset_rejects_bad_tensors():
    with pytest.raises(pyburn.ArgumentError, match="at least one"):
        TensorDataset()
    with pytest.raises(pyburn.ShapeError, match=r"argument 1 \(2,\)"):
        TensorDataset(pyburn.zeros(3, 1), pyburn.zeros(2))
    with pytest.raises(pyburn.ShapeError, match="0-d"):
        TensorDataset(pyburn.tensor(1.0))
    with pytest.raises(pyburn.ArgumentError, match="not a pyburn.Tensor"):
        TensorDataset([1, 2])


def test_views_keep_the_fast_batch_path(device):
    x = pyburn.arange(10, device=device)
    ds = TensorDataset(x)
    part = PartialDataset(ds, 3, 8)
    assert part.get_batch([0, -1])[0].tolist() == [3, 7]
    shuffled = ShuffledDataset(part, seed=5)
    expected = [3 + permutation(5, 5)[i] for i in range(5)]
    assert shuffled.get_batch(range(5))[0].tolist() == expected
    with pytest.raises(pyburn.IndexOutOfRange, match="length 5"):
        part.get_batch([5])
    # no fast path underneath, none on top
    assert not hasattr(PartialDataset(ITEMS, 0, 2), "get_batch")


def _spec_permutation(n: int, seed: int, epoch: int) -> list[int]:
    """The permutation as docs/data.md specifies it, from single Philox blocks."""
    offset = epoch * 2**32
    words = [philox_block((offset + k) // 4, seed)[(offset + k) % 4] for k in range(2 * n)]
    keys = [(words[2 * i] << 32) | words[2 * i + 1] for i in range(n)]
    return sorted(range(n), key=lambda i: (keys[i], i))


@pytest.mark.parametrize(("n", "seed", "epoch"), [(1, 0, 0), (17, 3, 0), (50, 2**64 - 1, 3),
                                                  (33, 12345, 1)])
@pytest.mark.parametrize("with_numpy", [True, False], ids=["numpy", "pure"])
def test_permutation_follows_the_spec(n, seed, epoch, with_numpy, monkeypatch):
    if not with_numpy:
        monkeypatch.setattr(shuffle_module, "_numpy", lambda: None)
    assert permutation(n, seed, epoch) == _spec_permutation(n, seed, epoch)


def test_permutation_seeds_and_epochs_differ():
    base = permutation(100, 7)
    assert sorted(base) == list(range(100))
    assert permutation(100, 7, 1) != base
    assert permutation(100, 8) != base
    assert permutation(100, 7 + 2**64) == base  # seeds are taken modulo 2**64
    assert permutation(0, 7) == []
    with pytest.raises(pyburn.ArgumentError, match="epoch"):
        permutation(3, 0, -1)
    with pytest.raises(pyburn.ArgumentError, match="cannot shuffle"):
        permutation(-1, 0)
