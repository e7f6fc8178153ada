"""`SumTree`: priorities in the leaves of a binary tree whose inner nodes hold the sums (and
the minimum) of their subtrees, so that changing a priority and finding the item where a
running total of priorities passes a given mass both take O(log n) steps: the sampling
structure of prioritized experience replay (Schaul et al., 2016). Pure Python.

>>> tree = SumTree(4)
>>> for i, p in enumerate([1.0, 0.0, 2.0, 1.0]):
...     tree.update(i, p)
>>> tree.total, tree.find(0.5), tree.find(1.5), tree.find(3.5)
(4.0, 0, 2, 3)
"""

from __future__ import annotations

import math

from ..errors import ArgumentError


class SumTree:
    """`capacity` priorities, all 0 and not yet set at first. The leaves sit at ``size ..
    2 size - 1`` of a flat array (`size` the power of two at or above `capacity`), node
    ``k``'s children at ``2k`` and ``2k + 1``; a node holds its subtree's sum, and in a
    second array the minimum of the priorities set in its subtree (infinite where none)."""

    def __init__(self, capacity: int):
        if not isinstance(capacity, int) or capacity < 1:
            raise ArgumentError(f"a SumTree holds a positive number of items, got {capacity!r}")
        self.capacity = capacity
        self.size = 1 << (capacity - 1).bit_length()
        self.sums = [0.0] * (2 * self.size)
        self.mins = [math.inf] * (2 * self.size)

    def __getitem__(self, i: int) -> float:
        """The priority of item `i`."""
        return self.sums[self.size + self._checked(i)]

    def _checked(self, i: int) -> int:
        if not 0 <= i < self.capacity:
            raise ArgumentError(f"item {i} is outside a SumTree of {self.capacity}")
        return i

    @property
    def total(self) -> float:
        """The sum of all priorities."""
        return self.sums[1]

    @property
    def min(self) -> float:
        """The smallest priority set so far (infinite before the first)."""
        return self.mins[1]

    def update(self, i: int, priority: float) -> None:
        """Set item `i`'s priority (finite, not negative) and the sums above it."""
        if not 0.0 <= priority < math.inf:
            raise ArgumentError(f"a priority is finite and not negative, got {priority!r}")
        node = self.size + self._checked(i)
        self.sums[node] = self.mins[node] = float(priority)
        node //= 2
        while node:  # each sum anew from its children: no rounding error builds up
            left, right = 2 * node, 2 * node + 1
            self.sums[node] = self.sums[left] + self.sums[right]
            self.mins[node] = min(self.mins[left], self.mins[right])
            node //= 2

    def find(self, mass: float) -> int:
        """The item ``i`` whose priorities up to it first exceed `mass` (not negative):
        ``sum(p[:i]) <= mass < sum(p[:i + 1])``. A mass at or past the total (rounding) gives
        the last item of nonzero priority, so an item of priority 0 is never found."""
        if not self.total > 0 or mass < 0:
            raise ArgumentError(f"find needs a mass >= 0 and a SumTree with some nonzero "
                                f"priority, got mass {mass!r} and total {self.total!r}")
        node = 1
        while node < self.size:
            left = 2 * node
            if mass < self.sums[left] or self.sums[left + 1] == 0.0:
                node = left
            else:
                mass -= self.sums[left]
                node = left + 1
        return node - self.size
