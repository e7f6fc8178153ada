"""Shape specialization: a second program for inputs of the shapes a model declares, with
its shape arithmetic done at load time.

Exporters write the sizes a graph reshapes to as arithmetic on the results of Shape nodes
(PyTorch's multi-head attention: ``Shape -> Slice -> Concat -> Reshape`` for the head split,
``Shape -> Slice -> Cast -> Sqrt -> Div`` for the scale), and load-time folding cannot touch
it, since a Shape node reads a value computed at run time. Where shape inference knows that
value's whole shape, the Shape node's result is known as well, and folding then computes
everything that depends on nothing else: a dozen steps per attention layer disappear.

That program is right only for inputs of the declared shapes, so the module keeps the
general one too and picks per call: `Specialized.accepts` compares the inputs' dims with the
declared ones (a few comparisons). Every folded Shape node leaves a check step in its place,
which compares the shape it would have read with the folded one and raises `GuardFailed` on a
difference (inference completes what it derives with the shapes a file declares for
intermediate values, and a file may declare wrong ones); the module then runs the general
program and stops specializing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..errors import PyburnError
from ..ops.creation import zeros
from . import ir
from .passes import RANDOM_OPS, walk
from .program import GuardFailed, Program, Step
from .registry import OpSpec

#: operators whose result depends only on their input's shape
_SHAPE_OPS = frozenset({"Shape", "Size"})


@dataclass
class Specialized:
    """A program for inputs of the declared shapes."""

    program: Program
    #: per graph input with a declared shape: (name, rank, ((dim, size), ...)) for the dims
    #: declared as numbers
    dims: list[tuple[str, int, tuple[tuple[int, int], ...]]]

    def accepts(self, feed: Mapping[str, Any]) -> bool:
        """Whether the inputs in `feed` have the shapes this program was built for."""
        for name, rank, sizes in self.dims:
            shape = getattr(feed[name], "shape", None)
            if shape is None or len(shape) != rank:
                return False
            for i, size in sizes:
                if shape[i] != size:
                    return False
        return True


def specialize(program: Program, graph: ir.Graph, inputs: list[str],
               constants: Mapping[str, Any]) -> tuple[Specialized, dict[str, Any]] | None:
    """`program` (the general program of main graph `graph`, already folded; `constants`
    the values folding had) specialized to the declared shapes of `inputs`, and the values
    it reads beyond the general program's (the folded results); None when specializing
    computes nothing more at load time."""
    if any(node.op_type in RANDOM_OPS for node in walk(graph)):
        return None  # falling back after a failed check must not draw random numbers twice
    shapes = {v.name: v.shape for v in graph.inputs}
    shapes.update((name, v.shape) for name, v in graph.value_info.items())
    shapes.update((name, tuple(data.dims)) for name, data in graph.initializers.items())
    known = dict(constants)
    steps: list[Step] = []
    for step in program.steps:
        node = step.node
        shape = shapes.get(node.inputs[0]) if node.inputs else None
        if (node.op_type not in _SHAPE_OPS or node.domain not in ("", "ai.onnx")
                or shape is None or not all(isinstance(d, int) and d >= 0 for d in shape)):
            steps.append(step)
            continue
        like = zeros((1,) * len(shape), device=program.device).broadcast_to(tuple(shape))
        try:
            known[node.outputs[0]] = step.spec.fn(like, **step.attrs)
        except PyburnError:  # left for the run to report
            steps.append(step)
            continue
        check = ir.Node(node.op_type, node.inputs[:1], [], {}, node.name)
        steps.append(Step(check, _CHECK, {"shape": tuple(shape)}, {}))
    if len(known) == len(constants):
        return None
    special = program.with_steps(steps)
    added = set(known) - set(constants)
    try:
        added.update(special.fold(known))
    except (GuardFailed, PyburnError):
        # inference was wrong about a constant's shape, or a step fails on these shapes:
        # the general program runs (and reports what fails when it does)
        return None
    needed = {name: known[name] for name in added & special.reads()}
    dims = []
    for v in graph.inputs:
        if v.name in inputs and v.shape is not None:
            dims.append((v.name, len(v.shape), tuple((i, d) for i, d in enumerate(v.shape)
                                                     if isinstance(d, int) and d >= 0)))
    return Specialized(special, dims), needed


def _check_shape(x: Tensor, *, shape: tuple[int, ...]) -> None:
    """A folded Shape node's check: x has the shape folding assumed."""
    if getattr(x, "shape", None) != shape:
        raise GuardFailed(f"expected shape {shape}, got {getattr(x, 'shape', None)}")


_CHECK = OpSpec("Shape", 1, _check_shape)
