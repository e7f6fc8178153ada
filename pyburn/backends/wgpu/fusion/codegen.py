"""Turning a pending graph into one generated ``map.wgsl`` kernel, cached by signature.

The graph is walked once from its root. Each ready tensor it reaches is a kernel input, read
through its strides in the root's iteration space: an `expand` step zeroes the strides of the
dims it broadcasts, for every input below it, so broadcasting inside the graph stays a view.
Each step becomes one WGSL statement computing its value in the compute type of its dtype
(`kinds`); the value is then rounded as the stored dtype would round it (float16, uint8,
bool), so a fused chain gives what the same ops give one kernel at a time: exactly for
integers and bools, and for floats up to what a shader compiler may do inside one kernel
(contracting a multiply and an add into one rounding, an ulp).

The *signature* of a graph is its structure: step kinds, op names, dtypes, and which inputs
are the same read. Values, shapes and strides are not in it: they travel in the kernel's
metadata. Kernels are cached by signature, so a training loop generates each one once and
the pipeline cache (keyed by the final text) compiles it once.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ....dtypes import bool_
from ....elementwise import BINARY, UNARY
from ..elementwise import Read, _conversion, expression, launch_map
from ..handle import GpuTensor
from ..kinds import Kind, kind_of
from ..launch import Gpu, Operand
from .lazy import LazyTensor, read_key

#: kernels kept, least recently used dropped first
CACHE_SIZE = 1024


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
_KERNELS: OrderedDict[tuple, tuple[str, str]] = OrderedDict()


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


class _Walk:
    """One walk of a graph: its inputs, statements and signature."""

    def __init__(self, rank: int):
        self.rank = rank
        self.reads: list[tuple[GpuTensor, tuple[int, ...]]] = []
        self.read_index: dict[tuple, int] = {}
        self.lines: list[str] = []
        self.signature: list[tuple] = []
        self.done: dict[tuple[int, tuple[bool, ...]], str] = {}

    def visit(self, root: LazyTensor, mask: tuple[bool, ...]) -> str:
        """The variable holding `root`'s value (`mask`: dims broadcast above it), emitting
        the statements that compute it. Iterative: graphs may be deep."""
        stack: list[tuple[LazyTensor, tuple[bool, ...], bool]] = [(root, mask, False)]
        while stack:
            t, m, expanded = stack.pop()
            key = (id(t), m)
            if key in self.done:
                continue
            node = t.node
            if node is None:
                self.done[key] = self._read(t.value, m)
                continue
            children = [(a, self._mask(t, a, m) if node.kind == "expand" else m)
                        for a in node.args]
            if not expanded:
                stack.append((t, m, True))
                stack.extend((a, am, False) for a, am in reversed(children))
                continue
            names = [self.done[(id(a), am)] for a, am in children]
            if node.kind == "expand":
                self.done[key] = names[0]
                continue
            var = f"v{len(self.lines)}"
            out = kind_of(t.dtype)
            params, code = _step(node.kind, node.op, [kind_of(a.dtype) for a in node.args], out)
            # A block of its own binds the op table's argument names (x, a, b) to this
            # step's inputs without rewriting the expression.
            lets = " ".join(f"let {p} = {n};" for p, n in zip(params, names))
            self.lines.append(f"    var {var}: {out.compute};\n    {{ {lets} {var} = {code}; }}")
            self.signature.append((node.kind, node.op, t.dtype.name, *names))
            self.done[key] = var
        return self.done[(id(root), mask)]

    @staticmethod
    def _mask(t: LazyTensor, arg: LazyTensor, m: tuple[bool, ...]) -> tuple[bool, ...]:
        return tuple(b or (small == 1 and big != 1)
                     for b, small, big in zip(m, arg.shape, t.shape))

    def _read(self, value: GpuTensor, mask: tuple[bool, ...]) -> str:
        strides = tuple(0 if b else s for b, s in zip(mask, value.strides))
        key = read_key(value, strides)
        k = self.read_index.get(key)
        if k is None:
            k = self.read_index[key] = len(self.reads)
            self.reads.append((value, strides))
            self.signature.append(("in", value.dtype.name))
        return f"l{k}"


def materialize(gpu: Gpu, t: LazyTensor) -> GpuTensor:
    """Compute pending `t` with one kernel, make it ready, and return its value."""
    walk = _Walk(len(t.shape))
    root = walk.visit(t, (False,) * len(t.shape))
    out_kind = kind_of(t.dtype)
    signature = (t.dtype.name, root, *walk.signature)
    found = _KERNELS.get(signature)
    if found is None:
        STATS.cache_misses += 1
        found = ("\n".join(walk.lines), out_kind.store(root))
        _KERNELS[signature] = found
        if len(_KERNELS) > CACHE_SIZE:
            _KERNELS.popitem(last=False)
    else:
        STATS.cache_hits += 1
        _KERNELS.move_to_end(signature)
    body, value = found
    result = gpu.empty(t.shape, t.dtype)
    reads = [Read(f"l{k}", Operand(v.storage, v.offset, strides, v.kind.itemsize),
                  v.kind.storage, v.kind.load("{buf}[{at}]"))
             for k, (v, strides) in enumerate(walk.reads)]
    launch_map(gpu, result, reads, value, body)
    STATS.fused_kernels += 1
    STATS.fused_steps += len(walk.lines)
    t.value, t.node = result, None
    return result
