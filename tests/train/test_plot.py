"""`pyburn plot`: the SVG is well-formed XML with one panel per metric and the expected
series, its points follow the logged values, and the command line writes it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import pyburn.nn.functional as F
from pyburn import cli
from pyburn.train import Accuracy, ConfusionMatrix, Learner, Renderer, plot_run
from pyburn.train.plot import (
    COLUMNS,
    LEFT,
    PANEL_H,
    PANEL_W,
    RIGHT,
    TOP,
    curves,
    nice_ticks,
    render_svg,
)
from pyburn.train.runlog import read_metrics

from .helpers import make_setup

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    import pyburn

    folder = tmp_path_factory.mktemp("run")
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"))
    Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy(), ConfusionMatrix(3)],
            run_dir=folder, log_every=4, renderer=Renderer()).fit(train, valid, epochs=3)
    return folder


def panels(path):
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    found = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "panel":
            found[group.get("data-metric")] = {
                line.get("data-series"): line.get("points")
                for line in group.iter(f"{SVG}polyline")}
    return root, found


def test_svg_has_a_panel_per_scalar_metric_with_train_and_valid(run_dir):
    path = plot_run(run_dir)
    assert path == str(run_dir / "curves.svg")
    root, found = panels(path)
    assert set(found) == {"loss", "accuracy"}  # the confusion matrix is not a curve
    for series in found.values():
        assert set(series) == {"train", "valid", "train (running)"}
        assert len(series["train"].split()) == len(series["valid"].split()) == 3
        assert len(series["train (running)"].split()) == 6  # batches 4 and 8 of 3 epochs
    assert root.get("width") == str(PANEL_W * COLUMNS)


def test_points_follow_the_logged_values(run_dir):
    data = curves(read_metrics(run_dir))
    valid = [value for _, value in data["loss"]["valid"]]
    svg = render_svg({"loss": data["loss"]})
    root = ET.fromstring(svg)
    line = next(e for e in root.iter(f"{SVG}polyline") if e.get("data-series") == "valid")
    ys = [float(p.split(",")[1]) for p in line.get("points").split()]
    xs = [float(p.split(",")[0]) for p in line.get("points").split()]
    # y is a decreasing linear map of the value, x an increasing one of the epoch
    scale = (ys[0] - ys[-1]) / (valid[0] - valid[-1])
    for y, value in zip(ys, valid):
        assert y - ys[0] == pytest.approx(scale * (value - valid[0]), abs=1e-2)
    assert xs == sorted(xs) and LEFT <= xs[0] and xs[-1] <= PANEL_W - RIGHT
    assert all(TOP <= y <= PANEL_H for y in ys)


def test_nice_ticks_cover_the_range():
    assert nice_ticks(0.0, 1.0) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0.13, 0.91) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ticks = nice_ticks(3.0, 3.0)
    assert ticks[0] < 3.0 < ticks[-1]


def test_names_are_escaped():
    svg = render_svg({"a<b & c": {"train": [(1.0, 2.0), (2.0, 1.0)]}}, title="x & y")
    ET.fromstring(svg)
    assert "a&lt;b &amp; c" in svg


def test_cli_writes_svg(run_dir, tmp_path, capsys):
    out = tmp_path / "plot.svg"
    assert cli.main(["plot", str(run_dir), "-o", str(out), "--metric", "accuracy"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    _, found = panels(out)
    assert set(found) == {"accuracy"}


def test_cli_errors(tmp_path, run_dir, capsys):
    assert cli.main(["plot", str(tmp_path)]) == 1
    assert "has no events.jsonl" in capsys.readouterr().err
    assert cli.main(["plot", str(run_dir), "--metric", "f1"]) == 1
    assert "no values of f1" in capsys.readouterr().err


def test_png_needs_matplotlib(run_dir, tmp_path):
    pytest.importorskip("matplotlib")
    path = plot_run(run_dir, tmp_path / "curves.png")
    with open(path, "rb") as file:
        assert file.read(8) == b"\x89PNG\r\n\x1a\n"
