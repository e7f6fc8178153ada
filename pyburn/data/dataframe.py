"""`DataFrameDataset`: the rows of a pandas DataFrame as dicts, batched column by column."""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from .dataset import Dataset, check_index


class DataFrameDataset(Dataset[dict[Any, Any]]):
    """Item ``i`` is row ``i`` of `frame` (by position, whatever the frame's index) as a dict
    from column name to value, each value a Python scalar (int, float, bool, str, ...) as
    pandas' ``to_dict("records")`` gives it, so an int column stays int next to a float one.
    `default_collate` then makes a dict of batches: a tensor per column of numbers, a list per
    column of strings.

    pyburn does not import pandas: any object with ``len()``, ``.iloc``, ``.columns`` and
    ``.to_dict`` works. The rows are read from the frame when asked for, not copied.

    >>> import pandas
    >>> DataFrameDataset(pandas.DataFrame({"x": [1, 2], "y": [0.5, 1.5]}))[1]
    {'x': 2, 'y': 1.5}
    """

    def __init__(self, frame: Any):
        missing = [name for name in ("__len__", "iloc", "columns", "to_dict")
                   if not hasattr(frame, name)]
        if missing:
            raise ArgumentError(f"DataFrameDataset needs a pandas DataFrame (with len(), .iloc, "
                                f".columns and .to_dict), got {type(frame).__name__} without "
                                f"{', '.join(missing)}")
        self.frame = frame

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, index: int) -> dict[Any, Any]:
        i = check_index(index, len(self.frame), "DataFrameDataset")
        # a one-row frame, not iloc[i]: a row Series would give every column one dtype
        # (ints become floats next to a float column) and numpy scalars
        return self.frame.iloc[[i]].to_dict("records")[0]

    def __repr__(self) -> str:
        return f"DataFrameDataset(<{len(self.frame)} rows, {len(self.frame.columns)} columns>)"
