"""What the sliding-window kernels (``conv.wgsl``, ``conv_weight.wgsl``, ``max_pool.wgsl``,
``avg_pool.wgsl``) share: spatial geometry made three-dimensional, operands whose strides
never go backwards, and the cutting of an invocation's loops into pieces within the loop
budget.

The kernels always see three spatial dims: a 1-d or 2-d window is a 3-d one whose leading
dims have size 1 (stride 0, no padding), so there is one kernel per family rather than one
per rank, and the extra dims cost one trip through a loop of length 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .elementwise import contiguous
from .handle import GpuTensor, Shape
from .launch import Gpu, loop_budget

#: spatial dims every window kernel works in
SPATIAL = 3

Box = tuple[Shape, Shape]


def spatial(values: Sequence[int], fill: int) -> list[int]:
    """`values` (one per spatial dim) led by `fill` up to three dims."""
    return [fill] * (SPATIAL - len(values)) + list(values)


def span(sizes: Sequence[int], strides: Sequence[int]) -> int:
    """How many elements past its first a block of `sizes` with (non-negative) `strides`
    reaches: the `tail` of an operand whose kernel walks the block itself."""
    return sum((n - 1) * s for n, s in zip(sizes, strides) if n > 0)


def unflipped(gpu: Gpu, t: GpuTensor) -> GpuTensor:
    """`t`, or a contiguous copy when some stride is negative (a flipped view): the window
    kernels bind the range from an operand's first element to its last."""
    return contiguous(gpu, t) if any(s < 0 for s in t.strides) else t


def pieces(sizes: Sequence[int], cost: Callable[[Shape], int]) -> list[Box]:
    """(starts, extents) of boxes covering ``range(sizes)`` whose loops cost at most the loop
    budget (`cost` of a box's extents counts the iterations of an invocation's loops, inner
    loops included): halves of the longest dim until each fits. The box at the origin comes
    first (kernels store there and add everywhere else)."""
    limit = loop_budget(1)
    found: list[Box] = []
    pending: list[Box] = [((0,) * len(sizes), tuple(sizes))]
    while pending:
        starts, extents = pending.pop()
        if cost(extents) <= limit or max(extents) <= 1:
            found.append((starts, extents))
            continue
        d = max(range(len(extents)), key=lambda i: extents[i])
        half = extents[d] // 2
        pending.append((starts[:d] + (starts[d] + half,) + starts[d + 1:],
                        extents[:d] + (extents[d] - half,) + extents[d + 1:]))
        pending.append((starts, extents[:d] + (half,) + extents[d + 1:]))
    return found


def tiles(rows: int, columns: int) -> tuple[int, int]:
    """Invocations of a 64-invocation workgroup along rows and columns for a register-blocked
    window kernel (4 x 4 results each) with `rows` by `columns` results: the arrangement whose
    tiles cover the fewest results past the edges, the squarest among equals (8 x 8 measured
    best on llvmpipe when nothing is wasted)."""
    def cost(along_rows: int) -> tuple[int, int]:
        tile_r, tile_c = 4 * along_rows, 4 * (64 // along_rows)
        covered = -(-rows // tile_r) * tile_r * -(-columns // tile_c) * tile_c
        return covered, abs(math.log2(along_rows) - 3)

    along_rows = min((1 << i for i in range(7)), key=cost)
    return along_rows, 64 // along_rows
