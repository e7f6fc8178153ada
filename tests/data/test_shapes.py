"""ShapesDataset: items fixed by the seed and the index alone, the same on every device, batches
equal to their items, and each filled shape where plain geometry puts it (a pure-Python
point-in-polygon reference, away from the anti-aliased edge)."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn.data import DataLoader, ShapesDataset
from pyburn.data.shapes import CLASSES, CORNERS, DRAWS, _Draw
from pyburn.data.shuffle import EPOCH_STRIDE, uniform_floats
from pyburn.errors import ArgumentError, IndexOutOfRange

SIZE = 24
#: float32 rendering on different devices: atan2, sin and cos differ in their last bits
TOLERANCE = 1e-4


def test_items_depend_on_the_seed_and_index_alone(device):
    ds = ShapesDataset(10, size=SIZE, seed=5, device=device)
    image, label = ds[7]
    assert image.shape == (3, SIZE, SIZE) and image.dtype is pyburn.float32
    assert image.device is device and label in range(len(CLASSES))
    longer = ShapesDataset(1000, size=SIZE, seed=5, device=device)
    assert longer[7][0].tolist() == image.tolist() and longer[9][1] == ds[-1][1]
    assert ShapesDataset(10, size=SIZE, seed=6, device=device)[7][0].tolist() != image.tolist()
    assert 0.0 <= image.min().item() and image.max().item() <= 1.0


def test_batches_are_their_items_and_equal_flex(device):
    ds = ShapesDataset(12, size=SIZE, seed=1, device=device)
    images, labels = ds.get_batch([4, 0, 11])
    assert images.shape == (3, 3, SIZE, SIZE) and labels.dtype is pyburn.int32
    assert labels.tolist() == [ds[i][1] for i in (4, 0, 11)]
    flex = ShapesDataset(12, size=SIZE, seed=1, device="flex").get_batch([4, 0, 11])[0]
    difference = (images.to("flex") - flex).abs().max().item()
    assert difference <= TOLERANCE
    # DataLoader takes whole batches from get_batch
    loaded, _ = next(iter(DataLoader(ds, batch_size=5, device=device)))
    assert loaded.tolist() == ds.get_batch(range(5))[0].tolist()


def _corners(draw: _Draw) -> list[tuple[float, float]]:
    """The outline of a polygon item: its outer and inner corners, alternately."""
    n, points = draw.corners, []
    for k in range(n):
        for radius, turn in ((draw.radius, 0.0), (draw.radius * draw.inner, math.pi / n)):
            angle = draw.rotation + 2 * math.pi * k / n + turn
            points.append((draw.x + radius * math.cos(angle), draw.y + radius * math.sin(angle)))
    return points


def _inside(point: tuple[float, float], polygon: list[tuple[float, float]]) -> bool:
    """Whether `point` is inside `polygon` (ray casting, so concave stars count too)."""
    x, y = point
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1]):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


def _edge_distance(point: tuple[float, float], polygon: list[tuple[float, float]]) -> float:
    """The distance from `point` to the nearest side of `polygon`."""
    px, py = point
    best = math.inf
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1]):
        dx, dy = x1 - x0, y1 - y0
        t = min(1.0, max(0.0, ((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy)))
        best = min(best, math.hypot(px - x0 - t * dx, py - y0 - t * dy))
    return best


def test_filled_shapes_are_where_geometry_puts_them():
    seed, checked = 11, set()
    ds = ShapesDataset(200, size=SIZE, seed=seed, device="flex")
    for index in range(200):
        draw = _Draw(uniform_floats(DRAWS, seed, index * EPOCH_STRIDE), SIZE)
        if draw.outlined or draw.label in checked:
            continue
        checked.add(draw.label)
        image = ds[index][0].tolist()
        polygon = _corners(draw) if CORNERS[draw.label] else None
        for row in range(SIZE):
            for column in range(SIZE):
                point = (column + 0.5, row + 0.5)
                if polygon is None:
                    edge = abs(math.dist(point, (draw.x, draw.y)) - draw.radius)
                    inside = math.dist(point, (draw.x, draw.y)) < draw.radius
                else:
                    edge, inside = _edge_distance(point, polygon), _inside(point, polygon)
                if edge > 1.0:  # clear of the anti-aliased edge
                    expected = draw.colour if inside else draw.background
                    pixel = [image[c][row][column] for c in range(3)]
                    assert pixel == pytest.approx(expected, abs=1e-6), (CLASSES[draw.label],
                                                                        point)
    assert checked == set(range(len(CLASSES)))


def test_classes_come_in_equal_shares_and_shapes_differ_in_colour():
    draws = [_Draw(uniform_floats(DRAWS, 0, i * EPOCH_STRIDE), SIZE) for i in range(400)]
    counts = [sum(d.label == k for d in draws) for k in range(len(CLASSES))]
    assert min(counts) > 70
    assert any(d.outlined for d in draws) and not all(d.outlined for d in draws)
    for d in draws:  # a shape's brightness stands apart from its background's
        assert abs(max(d.colour) - max(d.background)) >= 0.35 - 1e-9


def test_bad_arguments_are_refused():
    with pytest.raises(ArgumentError, match="size"):
        ShapesDataset(4, size=4)
    with pytest.raises(ArgumentError, match="seed"):
        ShapesDataset(4, seed="a")
    with pytest.raises(IndexOutOfRange):
        ShapesDataset(4, device="flex")[4]
    assert repr(ShapesDataset(4, seed=2)) == "ShapesDataset(4, size=32, seed=2)"
