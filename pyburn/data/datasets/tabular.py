"""Text files of records as datasets: CSV (`CsvDataset`) and JSON Lines (`JsonlDataset`).

Both read their file once, when made, and hold every row in memory as Python objects: fine
for what fits in memory; for more, write the rows to SQLite once (`write_sqlite`) and read
them from there (`SqliteDataset`). Files are UTF-8 (a leading byte-order mark is dropped).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...errors import ArgumentError, FormatError
from ..dataset import Dataset, check_index
from .files import PathLike, read_text


def csv_records(path: PathLike, what: str,
                delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """The records of the CSV file at `path`, in order, each with the line it ends on (counted
    from 1); blank lines are skipped. Quoting follows the `csv` module's "excel" dialect with
    `delimiter`, strictly: a quote left open or text after a closing quote raises
    `FormatError` naming the line. `what` (the reader's name) goes in the file's errors."""
    reader = csv.reader(io.StringIO(read_text(path, what), newline=""), delimiter=delimiter,
                        strict=True)
    try:
        for fields in reader:
            if fields:  # a blank line reads as no fields
                yield reader.line_num, fields
    except csv.Error as error:
        raise FormatError(f"{path}, line {reader.line_num}: {error}") from None


class _Rows(Dataset[Any]):
    """A dataset whose items are the rows read from one file, held in a list."""

    def __init__(self, path: PathLike, rows: list[Any]):
        self.path = Path(path)
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Any:
        return self.rows[check_index(index, len(self.rows), type(self).__name__)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, {len(self.rows)} rows)"


class CsvDataset(_Rows):
    """The rows of a CSV file as dicts keyed by its header row (the first row), in file order;
    blank lines are skipped. Values stay strings, except in the columns `types` names, whose
    values go through its callable (``types={"age": int}``; an empty field is passed as "").

    Quoting follows Python's `csv` module (the "excel" dialect) with `delimiter`, strictly: a
    quote left open (which would take in the rest of the file) or text after a closing quote
    raises `FormatError`, as do a row with another number of fields than the header and a
    value its callable refuses; each error names the line (counted from 1, the header being
    line 1).
    """

    def __init__(self, path: PathLike, *, delimiter: str = ",",
                 types: Mapping[str, Callable[[str], Any]] | None = None):
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise ArgumentError(f"CsvDataset's delimiter must be one character, got "
                                f"{delimiter!r}")
        types = dict(types or {})
        records = csv_records(path, "CsvDataset", delimiter)
        header = next(records, None)
        if header is None:
            raise FormatError(f"{path} is empty: a CSV file starts with its header row")
        self.columns: list[str] = header[1]
        self._check_header(path, types)
        rows = [self._row(fields, types, f"{path}, line {line}") for line, fields in records]
        super().__init__(path, rows)

    def _check_header(self, path: PathLike, types: dict[str, Callable[[str], Any]]) -> None:
        repeated = sorted({c for c in self.columns if self.columns.count(c) > 1})
        if repeated:
            raise FormatError(f"{path}: the header names column(s) {repeated} more than once")
        unknown = [c for c in types if c not in self.columns]
        if unknown:
            raise ArgumentError(f"CsvDataset types name column(s) {unknown} that {path} does "
                                f"not have (its columns: {self.columns})")
        for column, convert in types.items():
            if not callable(convert):
                raise ArgumentError(f"CsvDataset types[{column!r}] must be a callable, got "
                                    f"{convert!r}")

    def _row(self, fields: list[str], types: dict[str, Callable[[str], Any]],
             where: str) -> dict[str, Any]:
        if len(fields) != len(self.columns):
            raise FormatError(f"{where}: {len(fields)} fields where the header has "
                              f"{len(self.columns)}")
        row: dict[str, Any] = dict(zip(self.columns, fields))
        for column, convert in types.items():
            try:
                row[column] = convert(row[column])
            except (TypeError, ValueError) as error:
                raise FormatError(f"{where}: column {column!r} holds {row[column]!r}, which "
                                  f"{getattr(convert, '__name__', convert)} refuses: "
                                  f"{error}") from None
        return row


class JsonlDataset(_Rows):
    """The values of a JSON Lines file, one JSON value per line (usually an object, which
    becomes a dict), in file order; blank lines are skipped. A line that is not JSON raises
    `FormatError` naming the line (counted from 1)."""

    def __init__(self, path: PathLike):
        rows = []
        for number, line in enumerate(read_text(path, "JsonlDataset").split("\n"), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as error:
                    raise FormatError(f"{path}, line {number}: not JSON ({error})") from None
        super().__init__(path, rows)
