"""CsvDataset against the csv module and pandas.read_csv; JsonlDataset against json, line by
line."""

from __future__ import annotations

import csv
import json

import pandas
import pytest

import pyburn
from pyburn.data.datasets import CsvDataset, JsonlDataset

ROWS = [["name", "age", "note"],
        ["Zoë", "31", 'says "hi", twice'],
        ["Bob", "", "two\nlines"],
        ["", "7", ""]]


def write_csv(path, rows, delimiter=",", bom=False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as file:
        csv.writer(file, delimiter=delimiter).writerows(rows)


def test_csv_rows_match_the_csv_module_and_pandas(tmp_path):
    path = tmp_path / "t.csv"
    write_csv(path, ROWS, bom=True)
    with open(path, "a", encoding="utf-8") as file:
        file.write("\r\n")  # a blank line at the end
    ds = CsvDataset(path)
    with open(path, newline="", encoding="utf-8-sig") as file:
        expected = list(csv.DictReader(file))
    frame = pandas.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert ds.columns == ROWS[0] == list(frame.columns)
    assert len(ds) == 3 and list(ds) == expected == frame.to_dict("records")
    assert ds[-1] == {"name": "", "age": "7", "note": ""}
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        ds[3]


def test_csv_types_and_delimiter(tmp_path):
    path = tmp_path / "t.csv"
    write_csv(path, [["x", "y"], ["1", "2.5"], ["-3", "1e3"]], delimiter=";")
    ds = CsvDataset(path, delimiter=";", types={"x": int, "y": float})
    assert list(ds) == [{"x": 1, "y": 2.5}, {"x": -3, "y": 1000.0}]
    frame = pandas.read_csv(path, sep=";")
    assert list(ds) == frame.to_dict("records")


@pytest.mark.parametrize(("text", "kwargs", "error", "message"), [
    ("a,b\n1,2\n3\n", {}, pyburn.FormatError, r"t\.csv, line 3: 1 fields where the header "
                                              "has 2"),
    ("a,b\n1,2\nx,4\n", {"types": {"a": int}}, pyburn.FormatError,
     "line 3: column 'a' holds 'x', which int refuses"),
    ("a,a\n1,2\n", {}, pyburn.FormatError, r"column\(s\) \['a'\] more than once"),
    ("", {}, pyburn.FormatError, "is empty"),
    ("a\n1\n", {"types": {"b": int}}, pyburn.ArgumentError, r"column\(s\) \['b'\]"),
    ("a\n1\n", {"types": {"a": 3}}, pyburn.ArgumentError, "must be a callable"),
    ("a\n1\n", {"delimiter": "::"}, pyburn.ArgumentError, "one character"),
    ('a\n"1\n', {}, pyburn.FormatError, "line 2: unexpected end of data"),
    ('a\n"1"x\n', {}, pyburn.FormatError, "line 2: ',' expected after '\"'"),
])
def test_bad_csv_input(tmp_path, text, kwargs, error, message):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=message):
        CsvDataset(path, **kwargs)


def test_jsonl_rows_match_json_line_by_line(tmp_path):
    values = [{"a": 1, "b": [1, 2]}, {"text": "ünï\u2028code"}, [1, "two"], None, 3.5]
    lines = [json.dumps(v, ensure_ascii=False) for v in values]
    path = tmp_path / "t.jsonl"
    path.write_bytes(("\n".join(lines[:2]) + "\n\n  \r\n" + "\r\n".join(lines[2:]) + "\n")
                     .encode("utf-8"))
    ds = JsonlDataset(path)
    assert len(ds) == 5 and list(ds) == values
    assert ds[1]["text"] == "ünï\u2028code"  # a line separator inside a string is no line end
    with pytest.raises(pyburn.IndexOutOfRange):
        ds[-6]


def test_bad_jsonl_names_the_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2,}\n', encoding="utf-8")
    with pytest.raises(pyburn.FormatError, match=r"t\.jsonl, line 3: not JSON"):
        JsonlDataset(path)
    path.write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(pyburn.FormatError, match="not UTF-8 text"):
        JsonlDataset(path)


def test_missing_files(tmp_path):
    for make in (CsvDataset, JsonlDataset):
        with pytest.raises(pyburn.ArgumentError, match=r"none\.txt is no such file"):
            make(tmp_path / "none.txt")
        with pytest.raises(pyburn.ArgumentError, match="a folder, not a file"):
            make(tmp_path)
