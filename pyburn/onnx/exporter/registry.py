"""The table of module exporters: which `pyburn.nn` layers become ONNX nodes as a whole.

An exporter is a function registered for one or more exact module types. While tracing, a
call of such a module gives the exporter the module, the target opset and the call's
arguments; it answers with a `Plan` (the
tensors that become the node's inputs, the settings it needs, and the function that writes
the nodes) or None to decline, and then the layer's forward pass is traced op by op instead.
Declining is how a layer in an unusual configuration (a convolution with circular padding, a
LayerNorm below opset 17) still exports correctly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._tensor import Tensor

#: an exporter: (module, opset, *call args, **call kwargs) -> Plan, or None to trace the layer
Accept = Callable[..., "Plan | None"]


@dataclass(frozen=True)
class Plan:
    """What a module exporter will write for one call: its `inputs` (tensors, or None for an
    omitted optional one), the `settings` it needs later (plain values; the ints among them
    are fitted to the dynamic axes like any size), and `emit(builder, event, outputs)`,
    which writes the nodes whose results are named `outputs` (one per tensor the layer
    returns, in the order of its nested result)."""

    inputs: tuple[Tensor | None, ...]
    emit: Callable[..., None]
    settings: dict[str, Any] = field(default_factory=dict)


MODULES: dict[type, Accept] = {}


def exports(*types: type) -> Callable[[Accept], Accept]:
    """Register the decorated function as the exporter of each module type in `types`
    (exact types: a subclass may change forward, so it is traced instead)."""
    def register(fn: Accept) -> Accept:
        for t in types:
            MODULES[t] = fn
        return fn
    return register


class Unsupported(Exception):
    """Raised while writing nodes for something ONNX (at this opset) cannot express; the
    exporter collects them all into one `ArgumentError`."""
