"""CIFAR10 from tiny batch files pickled as the real ones are, against numpy's reshape of the
same bytes; with and without numpy installed."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
from test_no_numpy import run_without_numpy  # tests/ is on sys.path under pytest

import pyburn
from pyburn.data import DataLoader
from pyburn.data.datasets import CIFAR10, DatasetUnavailableError

SIZES = {"data_batch_1": 2, "data_batch_2": 1, "data_batch_3": 2, "data_batch_4": 1,
         "data_batch_5": 2, "test_batch": 3}


def write_batches(root, protocol=2):
    """Each batch as CIFAR-10's python files hold it; the data and labels of both splits."""
    rng = np.random.default_rng(3)
    splits = {True: ([], []), False: ([], [])}
    for name, n in SIZES.items():
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, size=n)]
        batch = {b"batch_label": name.encode(), b"labels": labels, b"data": data,
                 b"filenames": [f"{name}_{k}.png".encode() for k in range(n)]}
        (root / name).write_bytes(pickle.dumps(batch, protocol=protocol))
        images, all_labels = splits[name != "test_batch"]
        images.append(data)
        all_labels.extend(labels)
    return {train: (np.concatenate(images).reshape(-1, 3, 32, 32), labels)
            for train, (images, labels) in splits.items()}


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_items_and_batches_match_numpy(tmp_path, protocol):
    expected = write_batches(tmp_path, protocol)
    for train in (True, False):
        ds = CIFAR10(tmp_path, train=train)
        raw, labels = expected[train]
        floats = raw.astype(np.float32) / np.float32(255)
        assert len(ds) == len(labels) == (8 if train else 3) and ds.labels == labels
        for i in (0, len(ds) - 1, -1):
            image, label = ds[i]
            assert image.shape == (3, 32, 32) and image.dtype is pyburn.float32
            np.testing.assert_array_equal(image.numpy(), floats[i])
            assert label == labels[i] and isinstance(label, int)
        images, batch_labels = ds.get_batch([2, 0, -1])
        np.testing.assert_array_equal(images.numpy(), floats[[2, 0, -1]])
        assert batch_labels.dtype is pyburn.int32
        assert batch_labels.tolist() == [labels[2], labels[0], labels[-1]]
        np.testing.assert_array_equal(ds.tensors()[0].numpy(), raw)
        with pytest.raises(pyburn.IndexOutOfRange):
            ds[len(ds)]
    batches = list(DataLoader(CIFAR10(tmp_path), batch_size=3))
    assert [b[0].shape for b in batches] == [(3, 3, 32, 32), (3, 3, 32, 32), (2, 3, 32, 32)]


def test_missing_and_bad_files(tmp_path):
    write_batches(tmp_path)
    os.remove(tmp_path / "data_batch_4")
    with pytest.raises(DatasetUnavailableError, match="data_batch_4 missing.*cifar.html"):
        CIFAR10(tmp_path)
    assert len(CIFAR10(tmp_path, train=False)) == 3
    bad = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 10]}
    (tmp_path / "test_batch").write_bytes(pickle.dumps(bad))
    with pytest.raises(pyburn.FormatError, match="test_batch: label 10 is not a class index"):
        CIFAR10(tmp_path, train=False)
    bad = {b"data": np.zeros((2, 3072), np.float32), b"labels": [1, 1]}
    (tmp_path / "test_batch").write_bytes(pickle.dumps(bad))
    with pytest.raises(pyburn.FormatError, match=r"should be uint8 \(N, 3072\)"):
        CIFAR10(tmp_path, train=False)
    (tmp_path / "test_batch").write_bytes(
        pickle.dumps({b"data": eval, b"labels": []}).replace(b"eval", b"exec"))
    with pytest.raises(pyburn.FormatError, match=r"test_batch: the pickle names builtins\.exec"):
        CIFAR10(tmp_path, train=False)


def test_reads_the_same_without_numpy(tmp_path):
    write_batches(tmp_path)
    result = run_without_numpy(f"""
        import json, sys
        from pyburn.data.datasets import CIFAR10

        ds = CIFAR10({str(tmp_path)!r}, train=False, device="flex")
        images, labels = ds.get_batch([2, 0])
        print(json.dumps({{"item": ds[1][0].tolist(), "batch": images.tolist(),
                          "labels": labels.tolist(), "numpy_loaded": "numpy" in sys.modules}}))
    """)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    ds = CIFAR10(tmp_path, train=False, device="flex")
    assert out["numpy_loaded"] is False
    assert out["item"] == ds[1][0].tolist()
    assert out["batch"] == ds.get_batch([2, 0])[0].tolist()
    assert out["labels"] == [ds.labels[2], ds.labels[0]]
