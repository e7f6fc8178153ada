"""Turning a pending graph into one generated kernel, cached by signature.

A graph is computed by one kernel. Without an anchor it is a map kernel (``map.wgsl``):
one statement per elementwise step, the root stored. With one, it is the anchor's kernel
(``reduce.wgsl``, ``matmul.wgsl`` or ``conv.wgsl``) with two fragments of elementwise code: for a
reduction, the *producers* (the graph of its input, computed as the reduction reads it,
in the input's space), and for each, the *epilogue* (the steps from the anchor up to the
root, computed from the anchor's result before it is stored, in the result's space).

Planning a kernel (`_plan`) may find that something must be computed first, by a kernel of
its own (`First`): another anchor (one kernel computes one), an anchor whose result the
root broadcasts (its result is needed at more points than the kernel computes it at), an
anchor met among a reduction's producers, or a reshape whose input's strides cannot be
read in the reshaped space. Each is computed, then the plan is made again.

Every ready tensor the walk reaches is a kernel input, read through its strides in the
kernel's iteration space: each view between it and the root (`lazy.VIEWS`) turns the
strides (an expand zeroes the broadcast dims'; a reshape re-reads them in the new shape),
so views inside the graph stay views; a ready tensor that is a scalar the host knows (a
Python number in the expression) is a word of the kernel's one table of constants instead
(`constants`), so that all of them take one binding. Each step becomes one WGSL statement
computing its value in the compute type of its dtype (`kinds`); the value is then rounded as
the stored dtype would round it (float16, uint8, bool), so a fused graph gives what the
same ops give one kernel at a time: exactly for integers and bools, and for floats up to
what a shader compiler may do inside one kernel (contracting a multiply and an add into one
rounding).

Besides the root, an anchored kernel stores what something outside it may still ask for
(`LazyTensor.needed_outside`), so that nothing costly is ever computed twice: a
reduction's input (as it reads it) and the anchor's result (the steps above it are cheap to
compute again from it, the anchor is not). An elementwise step that a live handle holds
(an optimizer's moments, a tensor autodiff saved) is stored too, as an output of its own,
when it is in the root's iteration space (`plan.held_stored`); otherwise it gets a kernel of its
own first (`plan.held_first`). Other intermediates are never stored: a step shared with another
pending tensor is computed again by that tensor's kernel.

The *signature* of a kernel is its structure: step kinds, op names, dtypes, which inputs
are the same read, the anchor's kind, what it stores. Values, shapes and strides are not in
it: they travel in the kernel's metadata. The generated code is cached by signature, so a
training loop generates each kernel once, and the pipeline cache (keyed by the final text)
compiles it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ....dtypes import bool_
from ....ops.elementwise import BINARY, UNARY
from ....shape import contiguous_strides
from ...fusion import plan
from ...fusion.lazy import ANCHORS, VIEWS, LazyTensor, Node, reshape_strides
from ...fusion.plan import (
    Chain,
    CodeCache,
    First,
    Walk,
    held_first,
    held_stored,
    largest_pending,
)
from ..conv import conv
from ..elementwise import ANCHOR, Epilogue, Fragment, Read, _conversion, expression, launch_map
from ..handle import GpuTensor, Shape
from ..kinds import Kind, kind_of
from ..launch import Gpu, Operand
from ..matmul import matmul
from ..reduce import reduce_fused
from . import constants
from .constants import Table

#: kernels kept, least recently used dropped first
CACHE_SIZE = 1024

#: the anchors over two computed operands (a product), and how each is launched with an
#: epilogue
PRODUCTS: dict[str, Callable[[Gpu, GpuTensor, GpuTensor, Node, Epilogue], object]] = {
    "matmul": lambda gpu, a, b, node, tail: matmul(gpu, a, b, tail=tail),
    "conv": lambda gpu, x, w, node, tail: conv(gpu, x, w, *node.params, tail=tail),
}


@dataclass
class FusionStats:
    """Counters of the fusion backend (see ``pyburn.backends.wgpu.stats``)."""

    #: fused kernels launched (each is one kernel, however many steps it computes)
    fused_kernels: int = 0
    #: elementwise steps those kernels computed
    fused_steps: int = 0
    #: kernels whose code came from the signature cache
    cache_hits: int = 0
    #: kernels whose code was generated
    cache_misses: int = 0


STATS = FusionStats()
_CODE = CodeCache(CACHE_SIZE)

def _value(expr: str, kind: Kind, truth: bool) -> str:
    """`expr` (a compute-type value, or a WGSL bool when `truth`) rounded as storing it in
    `kind` would, and read back in the compute type."""
    stored = kind.store_truth(expr) if truth else kind.store(expr)
    return kind.load(stored)


def _step(kind: str, op: str, arg_kinds: list[Kind], out: Kind) -> tuple[tuple[str, ...], str]:
    """(names the arguments are bound to, WGSL over them in `out`'s compute type) of a step."""
    if kind == "where":
        return ("c", "a", "b"), "select(b, a, c != 0u)"
    if kind == "cast":
        return ("x",), _value(_conversion(arg_kinds[0], out), out, out.dtype is bool_)
    entry = (UNARY if kind == "unary" else BINARY)[op]
    names = ("x",) if kind == "unary" else ("a", "b")
    return names, _value(expression(entry, arg_kinds[0]), out, entry.returns_bool)


class _Walk(Walk):
    """One walk of a graph in the iteration space `shape` (its root's): the kernel's inputs,
    WGSL statements and signature. Inputs are named ``<prefix><k>`` and values
    ``<prefix>v<n>``. The value of `anchor`, when given, is the variable `ANCHOR` (an
    epilogue's walk); any other anchor met must be computed first."""

    ANCHOR = ANCHOR

    def __init__(self, shape: Shape, prefix: str, anchor: LazyTensor | None = None):
        super().__init__(shape, prefix, anchor)
        #: the table words of the constants read (`constants`), one per leaf
        self.constants: list[bytes] = []
        self.lines: list[str] = []

    def emit(self, var: str, t: LazyTensor, names: list[str]) -> None:
        node = t.computed_by
        out = kind_of(t.dtype)
        params, code = _step(node.kind, node.op, [kind_of(a.dtype) for a in node.args], out)
        # A block of its own binds the op table's argument names (x, a, b) to this
        # step's inputs without rewriting the expression.
        lets = " ".join(f"let {p} = {n};" for p, n in zip(params, names))
        self.lines.append(f"var {var}: {out.compute};\n{{ {lets} {var} = {code}; }}")
        self.signature.append((node.kind, node.op, t.dtype.name, *names))

    def read(self, value: GpuTensor, chain: Chain) -> str:
        word = constants.word(value)
        if word is not None:  # one word of the kernel's table, whatever the views
            self.constants.append(word)
            self.signature.append(("const", value.dtype.name))
            return constants.value(value.kind, f"{self.prefix}k[{len(self.constants) - 1}]")
        k, new = self.input(value, chain)
        if new:
            self.signature.append(("in", value.dtype.name))
        return f"{self.prefix}{k}"

    def fragment(self, value: str, body: str, table: Table | None, first: int = 0,
                 space: Shape | None = None) -> Fragment:
        """The walk's reads with `body` (its statements, from the cache) and `value` as a
        `Fragment` whose reads are over `space` (the root's shape unless given: one with
        the same elements in row-major order, each read's strides re-read in it, which the
        caller has checked they can be); its constants are words ``first ..`` of
        `table`."""
        reads = []
        if self.constants:
            reads.append(table.read(f"{self.prefix}k", first, len(self.constants),
                                    len(space or self.shape)))
        for k, (v, strides) in enumerate(self.reads):
            if space is not None:
                strides = reshape_strides(self.shape, strides, space)
            reads.append(Read(f"{self.prefix}{k}",
                              Operand(v.storage, v.offset, strides, v.kind.itemsize),
                              v.kind.storage, v.kind.load("{buf}[{at}]")))
        return Fragment(tuple(reads), body, value)

    @property
    def body(self) -> str:
        """The statements."""
        return "\n".join(self.lines)

    @property
    def bindings(self) -> int:
        """The buffers its reads take: one per input, one for all its constants."""
        return len(self.reads) + bool(self.constants)


def _choose_anchor(root: LazyTensor) -> LazyTensor | None:
    """The anchor whose kernel computes `root`: the first one met (depth first) whose
    result has as many elements as the root and is reached by one chain of views (so the
    root's points are its result's, renumbered); None for a map kernel."""
    if root.computed_by.kind in ANCHORS:
        return root
    chains: dict[int, set[tuple]] = {}
    order: list[LazyTensor] = []
    seen: set[tuple] = set()
    stack: list[tuple[LazyTensor, tuple]] = [(root, ())]
    while stack:
        t, chain = stack.pop()
        if t.node is None or (id(t), chain) in seen:
            continue
        seen.add((id(t), chain))
        node = t.node
        if node.kind in ANCHORS:
            if id(t) not in chains:
                chains[id(t)] = set()
                order.append(t)
            chains[id(t)].add(chain)
        elif node.kind in VIEWS:
            stack.append((node.args[0], ((node.kind, t.shape),) + chain))
        else:
            stack.extend((a, chain) for a in reversed(node.args))
    return next((t for t in order if t.numel == root.numel and len(chains[id(t)]) == 1), None)


def _count(hit: bool, *walks: _Walk) -> None:
    """Count a launched kernel in `STATS` if it computes elementwise steps (a plain
    reduction or matmul is not a fused kernel)."""
    steps = sum(len(w.lines) for w in walks)
    if steps:
        STATS.fused_kernels += 1
        STATS.fused_steps += steps
        if hit:
            STATS.cache_hits += 1
        else:
            STATS.cache_misses += 1


def _plan(gpu: Gpu, root: LazyTensor) -> Callable[[], None]:
    """The launch that computes `root` (resolving it, and what it keeps), or `First`."""
    limit = gpu.runtime.limits.max_storage_buffers_per_shader_stage
    anchor = _choose_anchor(root)
    if anchor is None:
        walk = _Walk(root.shape, "l")
        value = walk.visit(root)
        stored = held_stored(walk, root, walk.inside.values())
        held_first(walk, (root, *stored))
        _fits(stored, limit - 2 - walk.bindings, lambda: largest_pending(root))  # meta, out
        return lambda: _launch_map(gpu, root, walk, value, stored)
    epilogue = _Walk(root.shape, "e", anchor)
    value = epilogue.visit(root)
    for _, strides in epilogue.reads:
        if reshape_strides(root.shape, strides, anchor.shape) is None:
            raise First(anchor)  # read in the root's space only: the anchor becomes a read
    node = anchor.computed_by
    # The held steps computed from the anchor are stored by its kernel (not by a
    # convolution's, which stores nothing but its result and the anchor: those are left
    # pending, to be computed again from the kept anchor).
    stored = [] if node.kind == "conv" else held_stored(epilogue, root, epilogue.from_anchor)
    pending = epilogue.from_anchor if node.kind == "conv" else stored
    held_first(epilogue, (root, anchor, *pending))
    inside = set(epilogue.inside)
    # (when the root is the anchor's result renumbered, the anchor is a view of it: free)
    keep = value != ANCHOR and any(t.needed_outside(inside)
                                   for t in (anchor, *epilogue.from_anchor)
                                   if t is not root and t not in stored)
    if node.kind in PRODUCTS:
        # metadata, out, a, b, kept, epilogue
        spare = limit - 4 - keep - epilogue.bindings
        _fits(stored, spare, lambda: anchor)
        return lambda: _launch_product(gpu, root, anchor, epilogue, value, keep, stored)
    source = node.args[0]
    producers = _Walk(source.shape, "p")
    source_value = producers.visit(source)
    held_first(producers, (source,))
    keep_source = source.pending and source.needed_outside({id(anchor)})
    # (the producers and the epilogue read their constants from one table)
    reads = len(producers.reads) + len(epilogue.reads) + bool(producers.constants
                                                              or epilogue.constants)
    spare = limit - 2 - keep - keep_source - reads
    _fits(stored, spare, lambda: anchor if anchor is not root else largest_pending(anchor))
    return lambda: _launch_reduce(gpu, root, anchor, epilogue, value, keep, stored, producers,
                                  source_value, keep_source)


def _fits(stored: list[LazyTensor], spare: int, first: Callable[[], LazyTensor]) -> None:
    """Raise `First` unless the `stored` steps fit the `spare` bindings: for ``first()``
    when none is left even for the kernel without them, else for the first step that does
    not fit (it gets a kernel of its own)."""
    if spare < 0:
        raise First(first())
    if len(stored) > spare:
        raise First(stored[spare])


def materialize(gpu: Gpu, root: LazyTensor) -> GpuTensor:
    """Compute pending `root` with one kernel (after what it needs computed first), make it
    ready, and return its value."""
    return plan.materialize(root, lambda t: _plan(gpu, t))


def _launch_map(gpu: Gpu, root: LazyTensor, walk: _Walk, value: str,
                stored: list[LazyTensor]) -> None:
    """Compute `root`, and store the steps in `stored` as they are computed."""
    (body,), hit = _CODE.get(("map", root.dtype.name, value, *walk.signature,
                            *_stores(walk, stored)), lambda: (walk.body,))
    names = [walk.done[(id(t), ())] for t in stored]
    result = gpu.empty(root.shape, root.dtype)
    also = [(gpu.empty(t.shape, t.dtype), kind_of(t.dtype).store(name))
            for t, name in zip(stored, names)]
    fragment = walk.fragment(value, body, Table.of(gpu, walk.constants))
    launch_map(gpu, result, fragment.reads, kind_of(root.dtype).store(value), body, also)
    _count(hit, walk)
    root.resolve(result)
    for t, (value_of_t, _) in zip(stored, also):
        t.resolve(value_of_t)


def _stores(walk: _Walk, stored: list[LazyTensor]) -> tuple:
    """The signature of what a kernel stores besides its root: the variables, as stored."""
    return ("stores", *((walk.done[(id(t), ())], t.dtype.name) for t in stored))


def _tail(gpu: Gpu, root: LazyTensor, anchor: LazyTensor, epilogue: _Walk, value: str,
          body: str, keep: bool, stored: list[LazyTensor], table: Table | None,
          first: int = 0) -> tuple[list[GpuTensor], Epilogue]:
    """(the new values of the root and of the `stored` steps, the epilogue writing them),
    over the anchor's space; the epilogue's constants are words ``first ..`` of `table`."""
    values = [gpu.empty(t.shape, t.dtype) for t in (root, *stored)]
    out, *also = (v.view(anchor.shape, contiguous_strides(anchor.shape), v.offset)
                  for v in values)
    kept = gpu.empty(anchor.shape, anchor.dtype) if keep else None
    fragment = epilogue.fragment(value, body, table, first, anchor.shape)
    stores = tuple((view, kind_of(t.dtype).store(epilogue.done[(id(t), ())]))
                   for view, t in zip(also, stored))
    return values, Epilogue(fragment, out, kept, stores)


def _resolve(root: LazyTensor, anchor: LazyTensor, stored: list[LazyTensor],
             values: list[GpuTensor], tail: Epilogue) -> None:
    """Make the root and the `stored` steps ready with `values`, and the anchor, where the
    kernel stored its result too (or the root is that result, renumbered)."""
    for t, v in zip((root, *stored), values):
        t.resolve(v)
    if tail.keep is not None:
        anchor.resolve(tail.keep)
    elif anchor.pending and tail.fragment.value == ANCHOR:
        anchor.resolve(tail.out)


def _launch_product(gpu: Gpu, root: LazyTensor, anchor: LazyTensor, epilogue: _Walk,
                    value: str, keep: bool, stored: list[LazyTensor]) -> None:
    node = anchor.computed_by
    a, b = (t.value for t in node.args)
    (body,), hit = _CODE.get((node.kind, a.dtype.name, root.dtype.name, keep, value,
                            *epilogue.signature, *_stores(epilogue, stored)),
                           lambda: (epilogue.body,))
    values, tail = _tail(gpu, root, anchor, epilogue, value, body, keep, stored,
                         Table.of(gpu, epilogue.constants))
    PRODUCTS[node.kind](gpu, a, b, node, tail)
    _count(hit, epilogue)
    _resolve(root, anchor, stored, values, tail)


def _launch_reduce(gpu: Gpu, root: LazyTensor, anchor: LazyTensor, epilogue: _Walk, value: str,
                   keep: bool, stored: list[LazyTensor], producers: _Walk, source_value: str,
                   keep_source: bool) -> None:
    node = anchor.computed_by
    source = node.args[0]
    (body, source_body), hit = _CODE.get(
        (node.kind, node.op, source.dtype.name, root.dtype.name, keep, keep_source, value,
         *epilogue.signature, *_stores(epilogue, stored), source_value, *producers.signature),
        lambda: (epilogue.body, producers.body))
    # one table for both fragments: a reduction in one kernel binds it once
    table = Table.of(gpu, producers.constants + epilogue.constants)
    values, tail = _tail(gpu, root, anchor, epilogue, value, body, keep, stored, table,
                         len(producers.constants))
    kept = gpu.empty(source.shape, source.dtype) if keep_source else None
    reduce_fused(gpu, node.op, producers.fragment(source_value, source_body, table),
                 source.shape, source.dtype, node.axes, tail, kept)
    _count(hit, producers, epilogue)
    _resolve(root, anchor, stored, values, tail)
    if kept is not None:
        source.resolve(kept)
