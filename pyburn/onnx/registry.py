"""The one table of ONNX operators: each entry is a plain function on pyburn tensors.

The interpreter (`pyburn.onnx.load`) calls these functions node by node, and the code
generator (`pyburn onnx convert`) writes calls to them, so an operator is implemented once.

The calling convention every operator function follows:

- Positional parameters are the node's inputs in ONNX order, as `pyburn.Tensor`s; an omitted
  optional input is None (trailing ones may be left out). Variadic inputs (Concat, Sum, Max,
  ...) are ``*inputs``.
- Attributes are keyword-only parameters named exactly as in the ONNX spec, with the spec's
  defaults. Values are Python ints, floats, str (STRING attributes decoded as UTF-8), lists,
  `pyburn.Tensor` (TENSOR attributes) or, for GRAPH attributes, a callable
  ``body(*tensors) -> list[Tensor]`` that runs the subgraph.
- A keyword-only parameter named ``device`` receives the device the model runs on (for
  operators that create tensors from nothing, such as RandomNormal); one named
  ``outputs_used`` receives how many outputs the node uses (counting up to its last used
  one), so an operator can skip work for outputs nobody reads (MaxPool's Indices); one
  named ``memo`` receives a dict of the node's own, kept from call to call, for values the
  operator derives from its inputs and may reuse while those stay the same (FusedConv's
  folded weights).
- The result is a Tensor, or a tuple with one entry per declared output (None for an
  output that is not produced). A Python list is an ONNX sequence value (SequenceConstruct,
  SplitToSequence, ...); an empty optional is None.
- Inputs that ONNX defines as data but that are shape-like (Reshape's shape, Slice's starts,
  TopK's k, ...) arrive as tensors; `ints()` reads them. Constant folding makes them cheap.
  A function that reads such an input only through `ints()` annotates it `Ints`: it then
  takes the same values as Python ints too, which is how generated code writes the constant
  ones (``ops.shape.reshape(x, [-1, 392])``).
- int64 is ONNX's index type; on devices without int64 (wgpu) the loader holds int64 tensors
  as int32, so operators must not assume int64 (`index_dtype()` gives the one to create).
- Bad attribute values raise `pyburn.ArgumentError` (or another `PyburnError`); the runner
  adds the node's name to the message.

Operators whose semantics changed across opset versions are registered once per version
range with ``since=``; `lookup` picks the newest registration not newer than the model's
opset for that domain.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..devices import device as as_device
from ..dtypes import DType, int32, int64
from ..errors import ArgumentError

#: the annotation of an input that a function reads only through `ints()`: a tensor, or its
#: values as Python ints (a list, or one int)
Ints = Tensor | Sequence[int] | int

#: The domains whose operators pyburn implements ("" is the default ai.onnx domain;
#: "pyburn" holds the fused operators the passes introduce).
DOMAINS = ("", "ai.onnx", "pyburn")


@dataclass(frozen=True)
class OpSpec:
    """One implementation of an ONNX operator for opsets `since` and later."""

    op_type: str
    since: int
    fn: Callable[..., Any]
    domain: str = ""

    @property
    def attributes(self) -> frozenset[str]:
        """The attribute names the implementation accepts."""
        params = inspect.signature(self.fn).parameters.values()
        return frozenset(p.name for p in params
                         if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in _GIVEN)

    @property
    def arity(self) -> tuple[int, int | None]:
        """(inputs a node must give, inputs it may give at most; None: any number)."""
        params = _positional(self.fn)
        required = sum(1 for p in params if p.default is inspect.Parameter.empty)
        variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL
                       for p in inspect.signature(self.fn).parameters.values())
        return required, None if variadic else len(params)

    @property
    def static_inputs(self) -> frozenset[int]:
        """The positions of the inputs annotated `Ints`, which Python ints may stand for."""
        return frozenset(i for i, p in enumerate(_positional(self.fn))
                         if p.annotation in _INTS_ANNOTATIONS)

    @property
    def given(self) -> frozenset[str]:
        """The keywords the runner supplies (``device``, ``outputs_used``, ``memo``) that the
        function takes."""
        return _GIVEN & frozenset(inspect.signature(self.fn).parameters)


def _positional(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    """The parameters of `fn` that take the node's inputs one by one, in order."""
    return [p for p in inspect.signature(fn).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD)]


#: how `Ints` reads in a signature (as text: operator modules postpone their annotations)
_INTS_ANNOTATIONS = ("Ints", "Ints | None")
#: keyword parameters the runner fills in rather than the node's attributes
_GIVEN = frozenset({"device", "outputs_used", "memo"})
_TABLE: dict[tuple[str, str], list[OpSpec]] = {}


def onnx_op(op_type: str, since: int = 1, domain: str = "") -> Callable[[Callable], Callable]:
    """Register the decorated function as `op_type` for opsets `since` and later."""
    def register(fn: Callable) -> Callable:
        specs = _TABLE.setdefault((_domain(domain), op_type), [])
        specs.append(OpSpec(op_type, since, fn, _domain(domain)))
        specs.sort(key=lambda spec: spec.since)
        return fn
    return register


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def lookup(op_type: str, opset: int, domain: str = "") -> OpSpec | None:
    """The implementation of `op_type` for `opset` of `domain`, or None if pyburn has none
    (among the operators registered so far: ``pyburn.onnx.ops`` registers them all, and
    gives this function once they are)."""
    found = None
    for spec in _TABLE.get((_domain(domain), op_type), ()):
        if spec.since <= opset:
            found = spec
    return found


def ints(value: Any) -> list[int]:
    """A shape-like input (a tensor, list or scalar) as a list of Python ints (a new list,
    which the caller may change)."""
    if value is None:
        return []
    if isinstance(value, Tensor):
        # the same constant tensor (a Reshape's target, an Unsqueeze's axes) is read on
        # every run: remember what each small one holds, by its backend handle. Handles are
        # immutable (an in-place op on a tensor gives it a new one), and the entry's weak
        # reference tells whether its id still names the same handle (without keeping that
        # handle, or the buffer it views, alive)
        shape, handle = value.shape, value._h
        small = len(shape) < 2 and (not shape or shape[0] <= _MAX_REMEMBERED)
        found = _READ.get(id(handle)) if small else None
        if found is not None and found[0]() is handle:
            return list(found[1])
        read = _as_ints(value.tolist())
        if small:
            try:
                entry = (weakref.ref(handle), read)
            except TypeError:  # a handle type without weak references: not remembered
                return list(read)
            if len(_READ) >= _READ_ENTRIES:
                _READ.clear()
            _READ[id(handle)] = entry
        return list(read)
    return _as_ints(value.tolist() if hasattr(value, "tolist") else value)


def _as_ints(value: Any) -> list[int]:
    if isinstance(value, (int, float, bool)):
        return [int(value)]
    return [int(v) for v in value]


#: what `ints` read from recent small tensors: handle id -> (weak reference, its ints)
_READ: dict[int, tuple[weakref.ref, list[int]]] = {}
_READ_ENTRIES = 512
_MAX_REMEMBERED = 64


def index_dtype(device: Any) -> DType:
    """The dtype that stands for ONNX's int64 on `device`: int64 where the device holds it,
    else int32."""
    return int64 if int64 in as_device(device).backend.dtypes else int32


def check(condition: bool, message: str) -> None:
    """Raise `ArgumentError(message)` unless `condition` holds."""
    if not condition:
        raise ArgumentError(message)
