"""SQLite tables as datasets: `write_sqlite` (or a `SqliteWriter`) stores items, dicts with
one set of keys, as the rows of a table, and `SqliteDataset` reads them back by index.

A column's SQL type comes from the first of its values that is not None: int → INTEGER,
float → REAL, str → TEXT, bytes → BLOB. Any other value (a bool, a list, a dict, ...) is
stored as JSON text and decoded when read; the table ``pyburn_json_columns`` records which
columns hold JSON. A column keeps the kind of value it started with (an int in a REAL column
is stored as a float); None is NULL in any column. SQLite has no NaN: a float NaN reads back
as None.

sqlite3 is in Python's standard library, but Pyodide leaves it out until
``pyodide.loadPackage("sqlite3")`` has loaded it.
"""

from __future__ import annotations

import json
import threading
from array import array
from collections.abc import Iterable, Mapping
from types import ModuleType, TracebackType
from typing import Any

from ...errors import ArgumentError, FormatError, MissingExtraError
from ..dataset import Dataset, check_index
from .files import PathLike, existing_file

#: the side table that names the JSON columns of each table
JSON_COLUMNS_TABLE = "pyburn_json_columns"
#: the SQL type each kind of value gives its column
_SQL_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "blob": "BLOB",
              "json": "TEXT"}


def _sqlite3() -> ModuleType:
    try:
        import sqlite3  # optional: sqlite3 (part of Python, but Pyodide loads it on demand)
    except ImportError:
        raise MissingExtraError('SQLite datasets need the sqlite3 module, which this Python '
                                'lacks; in Pyodide, load it first: await '
                                'pyodide.loadPackage("sqlite3")') from None
    return sqlite3


def _check_name(name: Any, what: str) -> str:
    """A table or column name that is safe to put in SQL inside double quotes: a Python
    identifier (letters, digits and underscores), not one of SQLite's or pyburn's own."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ArgumentError(f"a SQLite {what} name must be an identifier (letters, digits and "
                            f"underscores, not starting with a digit), got {name!r}")
    if name.lower().startswith("sqlite_") or name == JSON_COLUMNS_TABLE:
        raise ArgumentError(f"{name!r} is reserved (by SQLite or for pyburn's own table), not "
                            f"a {what} name")
    return name


def _kind(value: Any) -> str | None:
    """The kind of column `value` belongs in; None for None, which fits any."""
    if value is None:
        return None
    if isinstance(value, bool):  # an int to Python, but it should read back as a bool
        return "json"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "blob"
    return "json"


class SqliteWriter:
    """Writes items (dicts with the same keys) as the rows of `table` in the SQLite file at
    `path` (made if missing), all in one transaction: nothing is in the file until `close()`,
    or the end of a ``with`` block without an exception (an exception rolls it all back).

    The table is made from the first item's keys (identifiers, in the item's order); an
    existing table of that name is refused unless `overwrite`, which replaces it.

        with SqliteWriter("data.db") as writer:
            for item in items:
                writer.write(item)
    """

    def __init__(self, path: PathLike, table: str = "items", *, overwrite: bool = False):
        sqlite3 = _sqlite3()
        self.table = _check_name(table, "table")
        self.path = path
        #: how many items have been written
        self.count = 0
        self._kinds: dict[str, str | None] = {}  # column -> kind, None until a value fixes it
        self._insert = ""
        try:
            self._db = sqlite3.connect(path, isolation_level=None)  # transactions are ours
        except sqlite3.OperationalError as error:
            raise ArgumentError(f"cannot open {path} to write to it: {error}") from None
        try:
            self._db.execute("BEGIN IMMEDIATE")
            exists = self._has_table(table)
            if exists and not overwrite:
                raise ArgumentError(f"{path} already has a table {table!r}; pass "
                                    "overwrite=True to replace it")
            if exists:
                self._db.execute(f'DROP TABLE "{table}"')
                if self._has_table(JSON_COLUMNS_TABLE):
                    self._db.execute(f'DELETE FROM "{JSON_COLUMNS_TABLE}" WHERE "table" = ?',
                                     (table,))
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise FormatError(f"cannot write to {path}: {error}") from None
        except ArgumentError:
            self._db.close()
            raise

    def _has_table(self, name: str) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                (name,)).fetchone() is not None

    def _create(self, item: Mapping[str, Any]) -> None:
        columns = [_check_name(key, "column") for key in item]
        if not columns:
            raise ArgumentError("item 0 has no keys: a table needs at least one column")
        if len({c.lower() for c in columns}) < len(columns):  # SQLite's names ignore case
            raise ArgumentError(f"item 0 has keys that differ only in case, which SQLite "
                                f"takes for one column: {columns}")
        self._kinds = dict.fromkeys(columns)
        # a column whose first value is None gets no SQL type: SQLite then stores values as
        # they come, and the first that is not None fixes the column's kind
        kinds = [_kind(item[c]) for c in columns]
        definitions = ", ".join(f'"{c}" {_SQL_TYPES[k]}' if k else f'"{c}"'
                                for c, k in zip(columns, kinds))
        self._db.execute(f'CREATE TABLE "{self.table}" ({definitions})')
        self._insert = (f'INSERT INTO "{self.table}" VALUES '
                        f'({", ".join("?" * len(columns))})')

    def _fix_kind(self, column: str, kind: str) -> None:
        """The first value of `column` that is not None says what the column holds."""
        self._kinds[column] = kind
        if kind == "json":
            self._db.execute(f'CREATE TABLE IF NOT EXISTS "{JSON_COLUMNS_TABLE}" ("table" TEXT, '
                             '"column" TEXT, PRIMARY KEY ("table", "column"))')
            self._db.execute(f'INSERT INTO "{JSON_COLUMNS_TABLE}" VALUES (?, ?)',
                             (self.table, column))

    def _encode(self, column: str, value: Any) -> Any:
        kind = _kind(value)
        if kind is None:
            return None
        if self._kinds[column] is None:
            self._fix_kind(column, kind)
        have = self._kinds[column]
        if have == "json":
            try:
                return json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError) as error:
                raise ArgumentError(f"item {self.count}: column {column!r} holds a "
                                    f"{type(value).__name__}, which neither SQLite nor JSON "
                                    f"can store ({error})") from None
        if have == "real" and kind == "integer":
            return float(value)
        if kind != have:
            raise ArgumentError(f"item {self.count}: column {column!r} holds {have} values "
                                f"(its first value said so), got a {type(value).__name__}: "
                                f"{value!r:.60}")
        return bytes(value) if kind == "blob" else value

    def write(self, item: Mapping[str, Any]) -> None:
        """Add `item` as the next row; its keys must be those of the first item."""
        if not isinstance(item, Mapping):
            raise ArgumentError(f"item {self.count} is a {type(item).__name__}; SQLite rows "
                                "are written from dicts")
        if not self._insert:  # the first item makes the table
            self._create(item)
        elif item.keys() != self._kinds.keys():
            missing = [c for c in self._kinds if c not in item]
            extra = [k for k in item if k not in self._kinds]
            raise ArgumentError(f"item {self.count} has other keys than item 0: missing "
                                f"{missing}, extra {extra}")
        row = [self._encode(column, item[column]) for column in self._kinds]
        try:
            self._db.execute(self._insert, row)
        except OverflowError:
            raise ArgumentError(f"item {self.count} has an int that SQLite cannot store "
                                "(it takes -2**63 to 2**63 - 1)") from None
        self.count += 1

    def close(self) -> None:
        """Commit the rows written; `ArgumentError` (and nothing written) if there were
        none, since a table's columns come from its first item."""
        try:
            if self.count == 0:
                self._db.execute("ROLLBACK")
                raise ArgumentError(f"no items to write to table {self.table!r} of "
                                    f"{self.path}: its columns come from the first item")
            self._db.execute("COMMIT")
        finally:
            self._db.close()

    def __enter__(self) -> SqliteWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self._db.execute("ROLLBACK")
            self._db.close()


def write_sqlite(path: PathLike, items: Iterable[Mapping[str, Any]], table: str = "items", *,
                 overwrite: bool = False) -> int:
    """Write `items` as the rows of `table` in the SQLite file at `path`, in one transaction
    (see `SqliteWriter`); the number of rows written.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.db")
    >>> write_sqlite(path, [{"x": 1, "tags": ["a"]}, {"x": 2, "tags": []}])
    2
    >>> SqliteDataset(path)[1]
    {'x': 2, 'tags': []}
    """
    with SqliteWriter(path, table, overwrite=overwrite) as writer:
        for item in items:
            writer.write(item)
    return writer.count


class SqliteDataset(Dataset[dict[str, Any]]):
    """The rows of `table` in the SQLite file at `path`, as dicts by column name: item ``i``
    is the row with the ``i``-th smallest rowid, which for a table `write_sqlite` made is the
    ``i``-th item written. JSON columns (see the module's doc) are decoded.

    The file is opened read-only, with one connection that `DataLoader`'s worker threads
    share in turn; the rowids are read once, and each item is one query by rowid.
    """

    def __init__(self, path: PathLike, table: str = "items"):
        sqlite3 = _sqlite3()
        self.path = existing_file(path, "SqliteDataset")
        self.table = _check_name(table, "table")
        uri = self.path.absolute().as_uri() + "?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        try:
            tables = [name for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            if table not in tables:
                raise ArgumentError(f"{self.path} has no table {table!r} (its tables: "
                                    f"{', '.join(sorted(tables)) or 'none'})")
            cursor = self._db.execute(f'SELECT * FROM "{table}" LIMIT 0')
            #: the column names, in the table's order
            self.columns: list[str] = [d[0] for d in cursor.description]
            self.json_columns: frozenset[str] = frozenset(
                column for (column,) in self._db.execute(
                    f'SELECT "column" FROM "{JSON_COLUMNS_TABLE}" WHERE "table" = ?', (table,))
            ) if JSON_COLUMNS_TABLE in tables else frozenset()
            self._rowids = array("q", (rowid for (rowid,) in self._db.execute(
                f'SELECT rowid FROM "{table}" ORDER BY rowid')))
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise FormatError(f"{self.path}: cannot read table {table!r} as SQLite: "
                              f"{error}") from None
        except ArgumentError:
            self._db.close()
            raise
        self._select = f'SELECT * FROM "{table}" WHERE rowid = ?'

    def __len__(self) -> int:
        return len(self._rowids)

    def __getitem__(self, index: int) -> dict[str, Any]:
        rowid = self._rowids[check_index(index, len(self._rowids), "SqliteDataset")]
        with self._lock:
            row = self._db.execute(self._select, (rowid,)).fetchone()
        item = dict(zip(self.columns, row))
        for column in self.json_columns:
            if item[column] is not None:
                try:
                    item[column] = json.loads(item[column])
                except (TypeError, ValueError) as error:
                    raise FormatError(f"{self.path}: table {self.table!r}, rowid {rowid}: "
                                      f"column {column!r} is not JSON ({error})") from None
        return item

    def close(self) -> None:
        """Close the connection; items can no longer be read."""
        self._db.close()

    def __repr__(self) -> str:
        return f"SqliteDataset({str(self.path)!r}, {self.table!r}, {len(self)} rows)"
