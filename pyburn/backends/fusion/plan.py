"""What the fusion code generators share: the walk of a pending graph, what a kernel must
store besides its root, the loop that computes first what a kernel cannot, and the cache of
generated code.

A `Walk` visits a graph from its root in one iteration space (the root's shape), depth
first and iteratively (graphs may be deep), and asks its subclass for code: `read` for
every computed tensor it reaches (a kernel input, read through its strides in the kernel's
space: each view between it and the root turns them, see `space_strides`) and `emit` for
every elementwise step. A tensor that the kernel cannot compute (another anchor, a view
whose input must be laid out anew) raises `First`; `materialize` computes it with a kernel
of its own and plans again.

Which steps a kernel stores (`held_stored`, `held_first`): one that a live handle holds
(an optimizer's moments, a tensor autodiff saved) is stored as an output of its own when it
is in the root's iteration space; otherwise it gets a kernel of its own first. Other
intermediates are never stored: a step shared with another pending tensor is computed again
by that tensor's kernel.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from ..strided import Shape
from .lazy import ANCHORS, FULL, VIEWS, LazyTensor, read_key, unit_strides, view_strides

#: views between a tensor and a walk's root, the tensor's first: (kind, shape below, shape
#: above, the view's argument)
Chain = tuple[tuple[str, Shape, Shape, LazyTensor], ...]


class First(Exception):
    """Raised while planning a kernel: `tensor` must be computed first."""

    def __init__(self, tensor: LazyTensor):
        super().__init__()
        self.tensor = tensor


class Walk(ABC):
    """One walk of a graph in the iteration space `shape` (its root's). Values are named
    ``<prefix>v<n>``; the value of `anchor`, when given, is `ANCHOR` (an epilogue's walk),
    and any other anchor met must be computed first."""

    #: the name of the anchor's value in an epilogue
    ANCHOR = "anchor"

    def __init__(self, shape: Shape, prefix: str, anchor: LazyTensor | None = None):
        self.shape = shape
        self.prefix = prefix
        self.anchor = anchor
        #: the kernel's structure, for the code cache (what `read` and `emit` add)
        self.signature: list[tuple] = []
        #: the variable of each (tensor, chain of views) visited
        self.done: dict[tuple, str] = {}
        #: the pending tensors computed here, and those of them computed from the anchor
        self.inside: dict[int, LazyTensor] = {}
        self.from_anchor: list[LazyTensor] = []
        self.steps = 0
        #: the kernel's inputs: computed tensors with their strides in the walk's space
        self.reads: list[tuple[Any, Shape]] = []
        self.read_index: dict[tuple, int] = {}
        self._tainted = {self.ANCHOR}

    # ---- what a code generator provides ---------------------------------------------------
    @abstractmethod
    def read(self, value: Any, chain: Chain) -> str:
        """The name of computed tensor `value` read through the views `chain`."""

    @abstractmethod
    def emit(self, var: str, t: LazyTensor, names: list[str]) -> None:
        """The code computing elementwise step `t` into `var` from its arguments' names."""

    def full(self, t: LazyTensor) -> str:
        """The name of a `FULL` leaf's number; only a backend whose recorder makes such
        leaves (wasm's) has a walk that meets one."""
        raise TypeError(f"{type(self).__name__} reads no number without a buffer (a full): "
                        "its recorder makes none")

    def input(self, value: Any, chain: Chain) -> tuple[int, bool]:
        """The number of computed tensor `value`, read through the views `chain`, among the
        kernel's inputs, and whether it is new (reads of the same buffer, dtype, offset and
        strides are one input)."""
        strides = self.space_strides(value.strides, chain)
        key = read_key(value, strides)
        k = self.read_index.get(key)
        if k is not None:
            return k, False
        k = self.read_index[key] = len(self.reads)
        self.reads.append((value, strides))
        return k, True

    # ---- the walk -------------------------------------------------------------------------
    def visit(self, root: LazyTensor) -> str:
        """The variable holding `root`'s value, emitting the code that computes it."""
        # entries: (tensor, views above it, their key: the chain without its tensors,
        # whether its arguments are done)
        stack: list[tuple[LazyTensor, Chain, tuple, bool]] = [(root, (), (), False)]
        done = self.done
        while stack:
            t, chain, views, expanded = stack.pop()
            key = (id(t), views)
            if key in done:
                continue
            node = t.node
            if t is self.anchor:
                done[key] = self.ANCHOR
                continue
            if node is None:
                done[key] = self.read(t.value, chain)
                continue
            kind = node.kind
            if kind == FULL:
                done[key] = self.full(t)
                continue
            if kind in ANCHORS:
                raise First(t)
            if kind in VIEWS:
                arg = node.args[0]
                children = [(arg, ((kind, arg.shape, t.shape, arg),) + chain,
                             ((kind, arg.shape, t.shape),) + views)]
            else:
                children = [(a, chain, views) for a in node.args]
            if not expanded:
                stack.append((t, chain, views, True))
                stack.extend((a, c, v, False) for a, c, v in reversed(children))
                continue
            names = [done[(id(a), v)] for a, _, v in children]
            self.inside[id(t)] = t
            tainted = any(name in self._tainted for name in names)
            if tainted:
                self.from_anchor.append(t)
            if kind in VIEWS:
                done[key] = names[0]
                continue
            var = f"{self.prefix}v{self.steps}"
            self.steps += 1
            if tainted:
                self._tainted.add(var)
            self.emit(var, t, names)
            done[key] = var
        return done[(id(root), ())]

    def space_strides(self, strides: Shape, chain: Chain) -> Shape:
        """Strides, in the walk's space, of a tensor read with `strides` below the views
        `chain` (size-1 dims' made 0); `First` for a view whose input must be laid out anew
        (views are recorded over pending tensors only, and what a kernel computes is
        contiguous, so their inputs can always be laid out anew)."""
        for kind, below, above, arg in chain:
            turned = view_strides(kind, below, above, strides)
            if turned is None:
                assert arg.pending, "a view of a computed tensor reads it in place"
                raise First(arg)
            strides = turned
        return unit_strides(self.shape, strides)


def held(t: LazyTensor) -> bool:
    """Whether a live handle holds `t` (a tensor of the user's, of autodiff's, of an
    optimizer's state)."""
    return t.handle is not None and t.handle() is not None


def held_stored(walk: Walk, root: LazyTensor, among: Iterable[LazyTensor]) -> list[LazyTensor]:
    """The steps of `walk` `among` those given, other than its root, that a live handle holds
    and that are in the root's iteration space (reached without a view: an expand or a
    reshape in between would give them fewer points than the kernel has), in the order the
    walk computed them: the kernel stores them too, as outputs of their own."""
    found = {id(t): t for t in among if t is not root and held(t) and (id(t), ()) in walk.done}
    return list(found.values())


def held_first(walk: Walk, skip: tuple[LazyTensor, ...]) -> None:
    """Raise `First` for a step of `walk` that a live handle holds, other than those in
    `skip` (the root, and what the kernel stores itself): it gets a kernel of its own, and
    this one reads it.

    Recomputing it here instead would leave it pending, and a value carried from one
    iteration to the next (an optimizer's moments, a running mean) would grow its graph by
    one iteration's steps each time: a new kernel to compile every iteration, and the
    buffers of every earlier iteration held. A held view is computed through its argument.
    """
    skipped = {id(t) for t in skip}
    # the last computed first: a held step that holds others inside it (a parameter's
    # update, its moments) is computed first, by a kernel that stores them too
    for t in reversed(walk.inside.values()):
        if id(t) in skipped or not held(t):
            continue
        while t.node is not None and t.node.kind in VIEWS:
            t = t.node.args[0]
        if t.pending and id(t) not in skipped:
            raise First(t)


def largest_pending(t: LazyTensor) -> LazyTensor:
    """The argument of `t`'s step with the largest pending graph."""
    return max((a for a in t.computed_by.args if a.pending), key=lambda a: a.steps)


def materialize(root: LazyTensor, plan: Callable[[LazyTensor], Callable[[], None]]) -> Any:
    """Compute pending `root` with the launch `plan` makes (after what it raises `First` for,
    computed the same way), make it ready, and return its value."""
    while root.pending:
        try:
            launch = plan(root)
        except First as first:
            materialize(first.tensor, plan)
            continue
        launch()
    return root.value


class CodeCache:
    """Generated code by kernel signature (its structure, never its values or shapes), the
    least recently used dropped past `size`."""

    def __init__(self, size: int = 1024):
        self.size = size
        self._code: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, signature: tuple, make: Callable[[], Any]) -> tuple[Any, bool]:
        """The code of the kernel with `signature` (made by `make` on a miss), and whether it
        came from the cache."""
        found = self._code.get(signature)
        if found is not None:
            self._code.move_to_end(signature)
            return found, True
        found = self._code[signature] = make()
        if len(self._code) > self.size:
            self._code.popitem(last=False)
        return found, False
