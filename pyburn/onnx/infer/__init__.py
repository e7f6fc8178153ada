"""Shape and dtype inference over ONNX graphs, in pure Python.

`infer` gives every value of a graph its ONNX dtype name and its shape: a tuple of ints,
symbolic dimension names (str, as declared on the graph inputs, e.g. "batch", carried along
wherever a dimension provably stays the same) and None (unknown). It starts from the graph
inputs' declared types and the initializers, and applies one rule per operator (`RULES`,
the one table, written by family in this package's modules); small integer constants are
read to follow shape arithmetic (``Reshape(x, Concat(Shape(x)[:1], [-1]))``). What a rule
cannot derive is None, never a guess.

`passes.prepare` stores the result in each graph's ``value_info``; ``pyburn onnx info
--shapes`` prints it and the code generator writes it as comments.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import ir
from . import control, elementwise, nn, shapes  # noqa: F401 - they fill RULES
from .core import RULES, Known, annotated, infer_all, value_info


def infer(graph: ir.Graph, opsets: Mapping[str, int]) -> dict[str, ir.ValueInfo]:
    """The type of every value of `graph` (its inputs, initializers and node outputs; the
    values local to subgraphs are not included), declared intermediate types refined. The
    nodes are read in order: a graph out of topological order (`passes.sort_graph` puts it
    in one) leaves what a node reads too early unknown.

    >>> from pyburn.onnx import ir
    >>> g = ir.Graph([ir.Node("Relu", ["x"], ["y"])],
    ...              [ir.ValueInfo("x", "float32", ("batch", 3))], [ir.ValueInfo("y")])
    >>> infer(g, {"": 17})["y"]
    ValueInfo(name='y', dtype='float32', shape=('batch', 3), kind='tensor', doc='')
    """
    own = infer_all(graph, opsets)[id(graph)]
    return {name: value_info(name, known) for name, known in own.items()}


def annotate(graph: ir.Graph, opsets: Mapping[str, int]) -> ir.Graph:
    """A copy of `graph` whose ``value_info`` (and its subgraphs') holds the inferred type
    of every value a node computes (`graph` itself is not modified)."""
    return annotated(graph, infer_all(graph, opsets))


__all__ = ["RULES", "Known", "annotate", "infer"]
