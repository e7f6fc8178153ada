"""AGNews from tiny CSV files written as the release's are (every field quoted, no header),
against pandas.read_csv of the same files."""

from __future__ import annotations

import csv

import pandas
import pytest

import pyburn
from pyburn.data.datasets import AGNews, DatasetUnavailableError

TRAIN = [["3", "Wall St. Bears Claw Back", "Reuters - Short-sellers, Wall Street's dwindling\\"
          "band of ultra-cynics, are seeing green again."],
         ["1", 'Talks "stall" in Zürich', "First line.\\nSecond line; 1,000 said \\\"no\\\"."],
         ["4", "Title ends in a backslash\\", "no newline between these"],
         ["2", "", "An empty title"]]
TEST = [["3", "Fears for T N pension after talks", "Unions representing workers."]]


def write_split(path, rows):
    """`rows` as the release's CSV files hold them: every field quoted, lines ending in \\n."""
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)


def expected_items(path):
    """What each record should give, read by pandas."""
    frame = pandas.read_csv(path, header=None, dtype=str, keep_default_na=False)
    return [(f"{title} {description}".replace("\\n", "\n"), int(index) - 1)
            for index, title, description in frame.itertuples(index=False)]


def test_items_match_pandas(tmp_path):
    write_split(tmp_path / "train.csv", TRAIN)
    write_split(tmp_path / "test.csv", TEST)
    assert (tmp_path / "train.csv").read_text().startswith('"3","Wall St. Bears Claw Back",')
    ds = AGNews(tmp_path)
    assert len(ds) == 4 and list(ds) == expected_items(tmp_path / "train.csv")
    assert ds[1] == ('Talks "stall" in Zürich First line.\nSecond line; 1,000 said \\"no\\".',
                     0)
    assert "dwindling\\band" in ds[0][0]  # a backslash before another letter stays
    assert ds[2][0] == "Title ends in a backslash\\ no newline between these"
    assert [AGNews.classes[label] for _, label in ds] == ["Business", "World", "Sci/Tech",
                                                         "Sports"]
    test = AGNews(tmp_path, train=False)
    assert list(test) == expected_items(tmp_path / "test.csv") == [
        ("Fears for T N pension after talks Unions representing workers.", 2)]
    assert repr(test) == f"AGNews({str(tmp_path / 'test.csv')!r}, 1 rows)"
    with pytest.raises(pyburn.IndexOutOfRange, match="length 4"):
        ds[4]


def test_default_root_and_missing_files(tmp_path, monkeypatch):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    root = tmp_path / "ag_news_csv"
    with pytest.raises(DatasetUnavailableError, match=rf"{root}.*train\.csv missing"):
        AGNews()
    root.mkdir()
    write_split(root / "train.csv", TRAIN)
    assert AGNews().root == root and len(AGNews()) == 4
    with pytest.raises(DatasetUnavailableError, match=r"test\.csv missing.*CharCnn_Keras"):
        AGNews(train=False)


@pytest.mark.parametrize(("text", "message"), [
    ('"1","a","b"\n"2","c"\n', r"line 2: 2 fields where AG News has 3"),
    ('"1","a","b"\n\n"0","c","d"\n', r"line 3: class index '0' is not one of 1, 2, 3, 4"),
    ('"5","a","b"\n', r"line 1: class index '5'"),
    ('"1","a","b"\n"1","a","b\n', r"line 2: unexpected end of data"),
])
def test_bad_records(tmp_path, text, message):
    (tmp_path / "train.csv").write_text(text, encoding="utf-8")
    with pytest.raises(pyburn.FormatError, match=rf"train\.csv, {message}"):
        AGNews(tmp_path)
