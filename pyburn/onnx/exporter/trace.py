"""One traced forward pass: the primitives and exported layers it ran, as events on values.

The tensor layer reports every primitive result from one place (`pyburn._tensor.result`, the
site autodiff records from) and `Module.__call__` reports every layer call, each to the
tracer installed in the ``_tracer`` slot of pyburn/_tensor.py and pyburn/nn/module.py (None,
and so free, when not exporting). A call
of a layer that has an exporter (`registry.MODULES`) becomes one "module" event and the ops
inside it are not traced; every other primitive becomes one "op" event.

Values are told apart by their backend handle (handles are immutable, so ``t += 1``, which
gives `t` a new handle, is a new value) together with shape and dtype. A tensor the tracer
has not seen before is a constant: a parameter, a buffer, a number in an expression, a
tensor created during the forward pass. An op or layer whose inputs are all constants is
folded: its result is one more constant (a transposed weight, a causal mask).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ... import _tensor as tensor_layer
from ..._tensor import Tensor
from ...dtypes import DType
from ...errors import ArgumentError
from ...nn import module as module_layer
from ...tape import no_grad
from .dims import Dim
from .registry import MODULES


@dataclass
class Value:
    """One tensor of the traced computation: a graph input, a constant or an event result."""

    kind: str  # "input", "const" or "op"
    shape: tuple[int, ...]
    dtype: DType
    #: the tensor itself (kept alive while tracing, so that handle ids stay unique)
    tensor: Tensor | None = None
    #: constants: the qualified name of the parameter or buffer it is ("" otherwise)
    origin: str = ""
    #: the shape as Dims (set when the traces are aligned)
    dims: tuple[Dim, ...] = ()
    #: constants whose elements are all equal and whose shape or value follows the dynamic
    #: axes (set when aligned): one element's bytes, or the value as a Dim (a size used as
    #: a number, as mean's count is)
    fill: bytes | Dim | None = None


@dataclass
class Event:
    """One primitive ("op": `name` is its autodiff rule, such as "binary:add") or one
    exported layer call ("module": `name` is the layer's type), on values numbered as in
    `Trace.values`."""

    kind: str
    name: str
    inputs: list[int | None]
    outputs: list[int | None]
    #: a primitive's saved arguments, or a module exporter's settings
    ctx: dict[str, Any]
    module: Any = None
    emit: Any = None
    #: `ctx` with every int fitted as a Dim (set when the traces are aligned)
    dims: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    """Everything one forward pass did, in order."""

    values: list[Value] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


def key_of(t: Tensor) -> tuple[int, tuple[int, ...], str]:
    """How the tracer tells values apart: the handle's identity, the shape and the dtype."""
    return id(t._h), t.shape, t.dtype.name


class Tracer:
    """Records one forward pass (see the module docstring) for an export at `opset`;
    `names` maps the key of each parameter and buffer to its qualified name."""

    def __init__(self, names: dict[tuple, str], opset: int):
        self.trace = Trace()
        self.opset = opset
        self._names = names
        self._refs: dict[tuple, int] = {}
        self._depth = 0
        self._thread = threading.get_ident()

    def run(self, module: Any, inputs: list[Tensor]) -> Trace:
        """Trace ``module(*inputs)`` in inference mode and return what it did."""
        for t in inputs:
            if key_of(t) in self._refs:
                raise ArgumentError("the example inputs must be distinct tensors (one was "
                                    "passed twice)")
            self.trace.inputs.append(self._add(Value("input", t.shape, t.dtype, t)))
        if tensor_layer._tracer is not None:
            raise ArgumentError("pyburn.onnx.export is already tracing a model")
        tensor_layer._tracer = module_layer._tracer = self
        try:
            with no_grad():
                result = module(*inputs)
        finally:
            tensor_layer._tracer = module_layer._tracer = None
        for t in flatten(result, "the model's forward"):
            if t is not None:
                self.trace.outputs.append(self.ref(t))
        if not self.trace.outputs:
            raise ArgumentError("the model's forward returned no tensor to export")
        return self.trace

    # ---- the two hooks -----------------------------------------------------------------------
    def primitive(self, out: Tensor, rule: str, inputs: tuple[Tensor, ...],
                  ctx: dict[str, Any]) -> None:
        """Called by `pyburn._tensor.result` for every primitive result."""
        if self._depth or threading.get_ident() != self._thread:
            return
        refs = [self.ref(t) for t in inputs]
        # a broadcast stays an op: folded, it would store a constant at the full size (and
        # one whose shape may follow a dynamic axis); the ops that broadcast read around it
        if rule != "expand" and all(self.trace.values[r].kind == "const" for r in refs):
            # folded: named after the parameter it is made from (a transposed weight)
            origin = self.trace.values[refs[0]].origin
            self._add(Value("const", out.shape, out.dtype, out,
                            origin and f"{origin}_{rule.split(':')[-1]}"))
            return
        saved = {k: v for k, v in ctx.items() if not isinstance(v, Tensor)}
        self._event(Event("op", rule, refs, [], saved), [out])

    def call(self, module: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """Called by `Module.__call__`: one event for a layer with an exporter that accepts
        this call, else the layer's forward, traced op by op."""
        accept = MODULES.get(type(module))
        if self._depth or threading.get_ident() != self._thread or accept is None:
            return module.forward(*args, **kwargs)
        plan = accept(module, self.opset, *args, **kwargs)
        if plan is None:
            return module.forward(*args, **kwargs)
        refs = [None if t is None else self.ref(t) for t in plan.inputs]
        self._depth += 1
        try:
            result = module.forward(*args, **kwargs)
        finally:
            self._depth -= 1
        outs = flatten(result, type(module).__name__)
        if all(r is None or self.trace.values[r].kind == "const" for r in refs):
            for t in outs:
                if t is not None:
                    self._add(Value("const", t.shape, t.dtype, t))
        else:
            self._event(Event("module", type(module).__name__, refs, [], plan.settings, module,
                              plan.emit), outs)
        return result

    # ---- values ------------------------------------------------------------------------------
    def ref(self, t: Tensor) -> int:
        """The number of the value `t` holds, registering an unseen tensor as a constant."""
        found = self._refs.get(key_of(t))
        if found is not None:
            return found
        return self._add(Value("const", t.shape, t.dtype, t, self._names.get(key_of(t), "")))

    def _add(self, value: Value) -> int:
        self.trace.values.append(value)
        ref = self._refs[key_of(value.tensor)] = len(self.trace.values) - 1
        return ref

    def _event(self, event: Event, outs: list[Tensor | None]) -> None:
        for t in outs:
            event.outputs.append(None if t is None else
                                 self._add(Value("op", t.shape, t.dtype, t)))
        self.trace.events.append(event)


def flatten(result: Any, what: str) -> list[Tensor | None]:
    """The tensors of a (nested) tuple or list result, in order; None stays None."""
    if result is None or isinstance(result, Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in flatten(item, what)]
    raise ArgumentError(f"{what} returned a {type(result).__name__}: only tensors and (nested) "
                        f"tuples or lists of them can be exported")
