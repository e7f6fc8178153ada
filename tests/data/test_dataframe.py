"""DataFrameDataset over pandas DataFrames (desktop only: Pyodide's run has no pandas)."""

from __future__ import annotations

import pandas
import pytest

import pyburn
from pyburn.data import DataFrameDataset, DataLoader


def test_rows_are_dicts_of_python_values_that_collate_by_column():
    frame = pandas.DataFrame({"x": [1, 2, 3], "y": [0.5, 1.5, 2.5], "name": ["a", "b", "c"],
                              "ok": [True, False, True]}, index=[30, 10, 20])
    ds = DataFrameDataset(frame)
    assert len(ds) == 3
    row = ds[1]  # by position, not by the frame's index
    assert row == {"x": 2, "y": 1.5, "name": "b", "ok": False}
    assert [type(v) for v in row.values()] == [int, float, str, bool]  # x stays int
    assert ds[-1]["name"] == "c"
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        ds[3]
    (batch,) = DataLoader(ds, batch_size=3, device="flex")
    assert batch["x"].dtype is pyburn.int32 and batch["x"].tolist() == [1, 2, 3]
    assert batch["y"].tolist() == [0.5, 1.5, 2.5] and batch["name"] == ["a", "b", "c"]


def test_anything_but_a_frame_is_refused():
    with pytest.raises(pyburn.ArgumentError, match="without iloc, columns, to_dict"):
        DataFrameDataset([{"x": 1}])
