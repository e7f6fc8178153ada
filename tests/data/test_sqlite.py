"""SqliteWriter / write_sqlite and SqliteDataset, against what sqlite3 itself reads from the
file and what was written."""

from __future__ import annotations

import json
import sqlite3
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import pyburn
from pyburn.data.datasets import SqliteDataset, SqliteWriter, write_sqlite
from pyburn.data.datasets.sqlite import JSON_COLUMNS_TABLE

ITEMS = [
    {"id": 1, "score": 0.5, "name": "ä b", "raw": b"\x00\xff", "tags": ["x", 2], "ok": True,
     "note": None},
    {"id": -(2**63), "score": 3, "name": "", "raw": b"", "tags": {"k": [1.5, None]},
     "ok": False, "note": 1.25},
    {"id": 7, "score": None, "name": None, "raw": None, "tags": None, "ok": None, "note": 2},
]
#: what the rows read back as: the int in the REAL column became a float; the column "note"
#: took its kind (REAL) from its first value that is not None
EXPECTED = [dict(ITEMS[0]), dict(ITEMS[1], score=3.0), dict(ITEMS[2], note=2.0)]


def test_rows_read_back_as_written_and_as_sqlite_stores_them(tmp_path):
    path = tmp_path / "d.db"
    assert write_sqlite(path, iter(ITEMS)) == 3
    ds = SqliteDataset(path)
    assert len(ds) == 3 and ds.columns == list(ITEMS[0])
    assert [ds[i] for i in range(3)] == EXPECTED and list(ds) == EXPECTED
    assert ds[-1] == EXPECTED[2] and isinstance(ds[0]["ok"], bool)
    assert ds.json_columns == {"tags", "ok"}
    with sqlite3.connect(path) as db:
        types = {name: kind for _, name, kind, *_ in db.execute("PRAGMA table_info(items)")}
        rows = db.execute("SELECT * FROM items ORDER BY rowid").fetchall()
        json_columns = db.execute(f"SELECT * FROM {JSON_COLUMNS_TABLE}").fetchall()
    assert types == {"id": "INTEGER", "score": "REAL", "name": "TEXT", "raw": "BLOB",
                     "tags": "TEXT", "ok": "TEXT", "note": ""}
    assert rows[0] == (1, 0.5, "ä b", b"\x00\xff", '["x", 2]', "true", None)
    assert rows[1][:2] == (-(2**63), 3.0) and json.loads(rows[1][4]) == ITEMS[1]["tags"]
    assert rows[2] == (7, None, None, None, None, None, 2.0)
    assert sorted(json_columns) == [("items", "ok"), ("items", "tags")]
    with pytest.raises(pyburn.IndexOutOfRange, match="index 3 is out of range.*length 3"):
        ds[3]
    assert "3 rows" in repr(ds)
    ds.close()


def test_items_follow_rowid_order_and_threads_share_the_connection(tmp_path):
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as db:  # a table pyburn did not write, with gaps in rowid
        db.execute("CREATE TABLE t (v INTEGER)")
        db.executemany("INSERT INTO t (rowid, v) VALUES (?, ?)", [(9, 90), (2, 20), (5, 50)])
    ds = SqliteDataset(path, table="t")
    assert list(ds) == [{"v": 20}, {"v": 50}, {"v": 90}]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda i: ds[i % 3]["v"], range(60))) == [20, 50, 90] * 20


def test_existing_tables_are_kept_unless_overwrite(tmp_path):
    path = tmp_path / "d.db"
    write_sqlite(path, [{"a": 1}])
    write_sqlite(path, [{"b": "other"}], table="second")
    with pytest.raises(pyburn.ArgumentError, match="already has a table 'items'.*overwrite"):
        write_sqlite(path, [{"a": 2}])
    write_sqlite(path, [{"c": [1]}, {"c": [2]}], overwrite=True)
    assert list(SqliteDataset(path)) == [{"c": [1]}, {"c": [2]}]
    assert list(SqliteDataset(path, "second")) == [{"b": "other"}]


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "d.db"
    write_sqlite(path, [{"a": 1}])
    with pytest.raises(pyburn.ArgumentError, match="item 1 has other keys.*missing.*'a'.*"
                                                   "extra.*'b'"):
        write_sqlite(path, [{"a": 5}, {"b": 6}], overwrite=True)
    with pytest.raises(RuntimeError):
        with SqliteWriter(path, "fresh") as writer:
            writer.write({"a": 1})
            raise RuntimeError("stop")
    assert list(SqliteDataset(path)) == [{"a": 1}]
    with pytest.raises(pyburn.ArgumentError, match="no table 'fresh'.*its tables: items"):
        SqliteDataset(path, "fresh")


@pytest.mark.parametrize(("items", "message"), [
    ([{"a": 1}, {"a": "one"}], "item 1: column 'a' holds integer values.*got a str"),
    ([{"a": b"x"}, {"a": 1.5}], "column 'a' holds blob values"),
    ([{"a": [1]}, {"a": {1, 2}}], "column 'a' holds a set, which neither SQLite nor JSON"),
    ([{"a": 2**63}], "int that SQLite cannot store"),
    ([{"bad key": 1}], "column name must be an identifier"),
    ([{"a": 1, "A": 2}], "differ only in case"),
    ([[1, 2]], "item 0 is a list"),
    ([], "no items to write"),
])
def test_bad_items_are_refused(tmp_path, items, message):
    with pytest.raises(pyburn.ArgumentError, match=message):
        write_sqlite(tmp_path / "d.db", items)


@pytest.mark.parametrize("table", ["items; DROP TABLE items", "1st", 'a"b', "sqlite_master",
                                   JSON_COLUMNS_TABLE, ""])
def test_table_names_must_be_plain_identifiers(tmp_path, table):
    path = tmp_path / "d.db"
    write_sqlite(path, [{"a": 1}])
    with pytest.raises(pyburn.ArgumentError, match="table name|reserved"):
        SqliteDataset(path, table)
    with pytest.raises(pyburn.ArgumentError, match="table name|reserved"):
        write_sqlite(path, [{"a": 1}], table)
    assert list(SqliteDataset(path)) == [{"a": 1}]


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(pyburn.ArgumentError, match=r"nothing\.db is no such file"):
        SqliteDataset(tmp_path / "nothing.db")
    assert not (tmp_path / "nothing.db").exists()  # read-only: no empty file made
    text = tmp_path / "text.db"
    text.write_text("not a database, but long enough to be looked at " * 4)
    with pytest.raises(pyburn.FormatError, match="text.db: cannot read table 'items' as SQLite"):
        SqliteDataset(text)
    with pytest.raises(pyburn.ArgumentError, match="cannot open .*missing-folder"):
        write_sqlite(tmp_path / "missing-folder" / "d.db", [{"a": 1}])


def test_without_sqlite3_the_error_says_how_to_load_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sqlite3", None)  # as in Pyodide before loadPackage
    with pytest.raises(pyburn.MissingExtraError, match=r'pyodide.loadPackage\("sqlite3"\)'):
        SqliteDataset(tmp_path / "d.db")
    with pytest.raises(pyburn.MissingExtraError, match="sqlite3"):
        write_sqlite(tmp_path / "d.db", [{"a": 1}])
