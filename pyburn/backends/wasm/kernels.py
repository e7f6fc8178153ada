"""The wasm backend's kernels, compiled on the engine when first called: the fixed library
(creation, strided copies, reductions, sorts and scans, indexing, casts, matmul) as one
module, the first
time any of it is needed; each elementwise kernel (an op on a dtype, generated from the op
table) as a module of its own, the first time that op meets that dtype. A call is a plain
call of an export with numbers."""

from __future__ import annotations

from ...dtypes import DType
from ...ops.elementwise import ElementwiseOp
from . import creation, elementwise, indexing, matmul, movement, order, reduce
from .assemble import Function, Module
from .engine import Engine, Export
from .kinds import KINDS

#: the element sizes the strided copy handles
COPY_SIZES = (1, 4)


def library() -> list[Function]:
    """The fixed kernels, every one exported."""
    return [*creation.kernels(), *(movement.copy_kernel(size) for size in COPY_SIZES),
            movement.copy_kernel(4, accumulate=True),
            *(reduce.kernel(op, dtype) for op, dtypes in reduce.DTYPES.items()
              for dtype in dtypes),
            *order.kernels(), *indexing.kernels(), matmul.kernel(), matmul.nt_kernel(),
            matmul.int_kernel()]


class Kernels:
    """The exports of `engine`'s kernel modules, compiled on first use."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._library: dict[str, Export] | None = None
        self._elementwise: dict[tuple[str, DType, DType, tuple[bool, ...]], Export] = {}

    def __getitem__(self, name: str) -> Export:
        """A kernel of the fixed library by name (``copy_4``, ``reduce_sum_float32``)."""
        if self._library is None:
            with self.engine.lock:  # compiled once, whichever thread asks first
                if self._library is None:
                    self._library = self.engine.instantiate(Module(library()).binary())
        return self._library[name]

    def elementwise(self, op: ElementwiseOp, dtype: DType, out: DType,
                    broadcast: tuple[bool, ...]) -> Export:
        """The kernel of `op` on `dtype` operands giving `out`, each operand broadcast
        along the rows where `broadcast` says so (`elementwise.kernel`)."""
        key = (op.name, dtype, out, broadcast)
        found = self._elementwise.get(key)
        if found is None:
            functions = elementwise.kernel(op, KINDS[dtype], KINDS[out], broadcast)
            exports = self.engine.instantiate(Module(functions).binary())
            found = self._elementwise[key] = exports[functions[0].name]
        return found
