"""from_huggingface and huggingface_to_sqlite over an in-memory datasets.Dataset."""

from __future__ import annotations

import datasets
import pytest

import pyburn
from pyburn.data import MapDataset
from pyburn.data.datasets import SqliteDataset, from_huggingface, huggingface_to_sqlite

COLUMNS = {"id": [3, 1, 2], "text": ["a", "bé", None], "score": [0.5, None, -2.0],
           "tokens": [[1, 2], [], [3]], "raw": [b"\x00", b"", b"\xff\xfe"]}


@pytest.fixture
def hf():
    return datasets.Dataset.from_dict(COLUMNS)


def test_items_are_the_datasets_rows(hf):
    ds = from_huggingface(hf)
    assert len(ds) == 3 and ds.features == hf.features
    assert [ds[i] for i in range(3)] == [hf[i] for i in range(3)] == list(ds)
    assert ds[-1] == hf[2] and ds[0]["tokens"] == [1, 2]
    assert MapDataset(ds, lambda row: row["id"])[1] == 1
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        ds[3]


def test_not_one_random_access_split_is_refused(hf):
    with pytest.raises(pyburn.ArgumentError, match=r"one split, such as dataset\['train'\]"):
        from_huggingface(datasets.DatasetDict({"train": hf}))
    class Streamed:  # as a datasets.IterableDataset: features, but no length nor [i]
        features = hf.features

        def __iter__(self):
            return iter(hf)

    with pytest.raises(pyburn.ArgumentError, match="IterableDataset has no random access"):
        from_huggingface(Streamed())
    with pytest.raises(pyburn.ArgumentError, match="got list"):
        from_huggingface([1, 2])


def test_import_into_sqlite_reads_back_the_same_rows(hf, tmp_path):
    path = tmp_path / "hf.db"
    assert huggingface_to_sqlite(hf, path, "train") == 3
    assert list(SqliteDataset(path, "train")) == [hf[i] for i in range(3)]
    with pytest.raises(pyburn.ArgumentError, match="already has a table 'train'"):
        huggingface_to_sqlite(hf, path, "train")
