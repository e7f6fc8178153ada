"""Running an ONNX graph eagerly: `OnnxModule`, the Module that `pyburn.onnx.load` returns.

A graph becomes a `Program`: its nodes in order, each bound to its operator function from
the registry. Float initializers become the module's parameters (so an imported model
fine-tunes like any other), other initializers its buffers, and nodes whose inputs are all
fixed constants are computed once at load time (constant folding) and kept as buffers.
"""

from __future__ import annotations

import keyword
import re
from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..device import Device
from ..device import device as as_device
from ..errors import ArgumentError, FormatError, PyburnError
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from . import ir
from .ops import outputs
from .passes import is_foldable, prepare
from .registry import OpSpec, lookup
from .tensors import to_tensor


class OperatorError(PyburnError, RuntimeError):
    """An operator failed while running a model; the message names the node."""


@dataclass
class Step:
    """One node bound to its implementation."""

    node: ir.Node
    spec: OpSpec
    #: attributes as the function receives them, except subgraphs (bound per run)
    attrs: dict[str, Any]
    #: attribute name -> compiled subgraph
    bodies: dict[str, Program]


class Program:
    """A graph ready to run on one device: steps in topological order, plus the constants
    it owns (subgraph initializers, Constant nodes folded at load time)."""

    def __init__(self, graph: ir.Graph, opsets: dict[str, int], device: Device) -> None:
        self.graph = graph
        self.device = device
        self.inputs = [v.name for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        self.steps = [self._bind(node, opsets) for node in graph.nodes]
        self._constants: dict[str, Tensor] | None = None

    def constants(self) -> dict[str, Tensor]:
        """The graph's own initializers as tensors (a subgraph's; the main graph's live on
        the module), converted on first use."""
        if self._constants is None:
            self._constants = {name: to_tensor(data, self.device)
                               for name, data in self.graph.initializers.items()}
        return self._constants

    def move(self, device: Device) -> None:
        """Hold this program's own tensors (tensor attributes, subgraph constants) on
        `device` from now on (the module moves its parameters and buffers itself)."""
        self.device = device
        self._constants = None
        for step in self.steps:
            for key, value in step.node.attrs.items():
                if key in step.attrs and not isinstance(value, ir.Graph):
                    step.attrs[key] = _attribute(value, device)
            if "device" in step.spec.given:
                step.attrs["device"] = device
            for body in step.bodies.values():
                body.move(device)

    def _bind(self, node: ir.Node, opsets: dict[str, int]) -> Step:
        domain = "" if node.domain == "ai.onnx" else node.domain
        spec = lookup(node.op_type, opsets.get(domain, opsets.get("ai.onnx", 1)), domain)
        assert spec is not None  # prepare() has named every unsupported operator
        required, most = spec.arity
        given = node.inputs
        if any(not name for name in given[:required]) or len(given) < required:
            raise FormatError(f"{node.label()} needs its first {required} inputs, got "
                              f"{given}")
        if most is not None and len(given) > most:
            raise FormatError(f"{node.label()} takes at most {most} inputs, got {len(given)}")
        attrs, bodies = {}, {}
        for key, value in node.attrs.items():
            if isinstance(value, ir.Graph):
                bodies[key] = Program(value, opsets, self.device)
            else:
                attrs[key] = _attribute(value, self.device)
        if "device" in spec.given:
            attrs["device"] = self.device
        if "outputs_used" in spec.given:
            used = [i for i, name in enumerate(node.outputs) if name]
            attrs["outputs_used"] = used[-1] + 1 if used else 0
        return Step(node, spec, attrs, bodies)

    def fold(self, constants: MutableMapping[str, Any]) -> list[str]:
        """Run, now, every step whose inputs are all in `constants` (and that is
        deterministic), adding its results to `constants` and dropping it from the program.
        Returns the names added."""
        added = []
        kept = []
        for step in self.steps:
            names = [n for n in step.node.inputs if n]
            if is_foldable(step.node) and all(n in constants for n in names):
                for name, value in zip(step.node.outputs, self._call(step, constants)):
                    if name:
                        constants[name] = value
                        added.append(name)
            else:
                kept.append(step)
        self.steps = kept
        return added

    def run(self, env: Mapping[str, Any]) -> list[Any]:
        """The graph's outputs, computed from `env` (inputs, parameters, constants and, for
        a subgraph, every value of the enclosing scopes)."""
        # a plain dict where it can be (ChainMap lookups run in Python, a dict's in C)
        values: MutableMapping[str, Any] = dict(env) if isinstance(env, dict) else \
            ChainMap({}, env)  # type: ignore[arg-type]
        for step in self.steps:
            for name, value in zip(step.node.outputs, self._call(step, values)):
                if name:
                    values[name] = value
        try:
            return [values[name] for name in self.outputs]
        except KeyError as missing:
            raise OperatorError(f"graph output {missing.args[0]!r} was not produced") from None

    def _call(self, step: Step, values: Mapping[str, Any]) -> list[Any]:
        node = step.node
        args = [values[n] if n else None for n in node.inputs]
        kwargs = step.attrs
        if step.bodies:
            kwargs = {**kwargs, **{key: _closure(body, values)
                                   for key, body in step.bodies.items()}}
        try:
            out = step.spec.fn(*args, **kwargs)
        except PyburnError as exc:
            raise type(exc)(f"{node.label()}: {exc}") from exc
        except Exception as exc:
            # an operator given values its model should never give it (a malformed file)
            raise OperatorError(f"{node.label()} failed: {type(exc).__name__}: {exc}") from exc
        return list(outputs(out, len(node.outputs)))


def _attribute(value: Any, device: Device) -> Any:
    """An attribute value as operator functions receive it: tensors on `device`."""
    if isinstance(value, ir.TensorData):
        return to_tensor(value, device)
    if isinstance(value, list) and value and isinstance(value[0], ir.TensorData):
        return [to_tensor(v, device) for v in value]
    return value


def _closure(body: Program, scope: Mapping[str, Any]) -> Callable[..., list[Any]]:
    """A subgraph as the callable its operator receives: ``body(*inputs) -> outputs``."""
    def run(*inputs: Any) -> list[Any]:
        if len(inputs) != len(body.inputs):
            raise ArgumentError(f"a subgraph takes {len(body.inputs)} inputs, got "
                                f"{len(inputs)}")
        local = dict(zip(body.inputs, inputs))
        return body.run(ChainMap(local, body.constants(), scope))  # type: ignore[arg-type]
    return run


class OnnxModule(Module):
    """An ONNX model as a pyburn Module: call it with the graph's inputs (positionally in
    the graph's order, or by name) and it returns its output, or a tuple of outputs.

    Float initializers are parameters (``parameters()``, ``state_dict()``, fine-tuning on
    an autodiff device), named after the ONNX names made into identifiers
    (`onnx_names` maps them back); those that only feed statistics or settings (batch-norm
    running mean and variance, Resize scales, quantization scales, ...) are buffers.
    """

    def __init__(self, model: ir.Model, device: Any = None) -> None:
        super().__init__()
        model = prepare(model)
        dev = as_device(device)
        graph = model.graph
        # ONNX names -> attribute names on this module
        slots: dict[str, str] = {}
        taken: set[str] = set()
        fixed_inputs = _fixed_inputs(graph)
        for name, data in graph.initializers.items():
            attr = _identifier(name, taken)
            tensor = to_tensor(data, dev)
            if tensor.dtype.is_floating_point and name not in fixed_inputs:
                self.register_parameter(attr, Parameter(tensor))
            else:
                self.register_buffer(attr, tensor)
            slots[name] = attr
        program = Program(graph, model.opsets, dev)
        fixed = {name: getattr(self, slots[name]) for name in slots
                 if not isinstance(getattr(self, slots[name]), Parameter)}
        for name in program.fold(fixed):
            attr = _identifier(constant_name(name), taken)
            value = fixed[name]
            if isinstance(value, Tensor):
                self.register_buffer(attr, value, persistent=False)
                slots[name] = attr
            else:  # a folded sequence or empty optional: held as is
                program.steps.insert(0, _constant_step(name, value))
        object.__setattr__(self, "_slots", slots)
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "input_names",
                           [n for n in program.inputs if n not in graph.initializers])
        object.__setattr__(self, "output_names", list(program.outputs))

    @property
    def onnx_names(self) -> dict[str, str]:
        """Attribute name of each parameter and buffer -> its name in the ONNX file."""
        return {attr: name for name, attr in self._slots.items()}

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the graph: inputs positionally in `input_names` order and/or by name."""
        if len(args) > len(self.input_names):
            raise ArgumentError(f"the model takes {len(self.input_names)} inputs "
                                f"({', '.join(self.input_names)}), got {len(args)}")
        feed = dict(zip(self.input_names, args))
        for name, value in kwargs.items():
            if name not in self.input_names:
                raise ArgumentError(f"the model has no input {name!r}; its inputs are "
                                    f"{', '.join(self.input_names)}")
            if name in feed:
                raise ArgumentError(f"input {name!r} given twice")
            feed[name] = value
        missing = [n for n in self.input_names if n not in feed]
        if missing:
            raise ArgumentError(f"missing model inputs: {', '.join(missing)}")
        env = {name: getattr(self, attr) for name, attr in self._slots.items()}
        env.update(feed)
        outputs = self._program.run(env)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def to(self, *args: Any, device: Device | str | None = None, dtype: Any = None) -> Module:
        """`Module.to`, moving the graph's own tensors along with the parameters."""
        super().to(*args, device=device, dtype=dtype)
        tensors = self._tensors()
        if tensors:
            self._program.move(tensors[0].device)
        elif device is not None:
            self._program.move(as_device(device))
        return self

    def run(self, feed: Mapping[str, Any]) -> dict[str, Any]:
        """onnxruntime's calling style: ``{input name: value}`` in, ``{output name: value}``
        out."""
        outputs = self(**feed)
        if len(self.output_names) == 1:
            outputs = (outputs,)
        return dict(zip(self.output_names, outputs))

    def extra_repr(self) -> str:
        graph = self.model.graph
        return (f"{graph.name or 'graph'}: {len(self._program.steps)} nodes, opset "
                f"{self.model.opset}, inputs {self.input_names}, outputs {self.output_names}")


#: inputs (by position) that hold statistics, settings or quantization parameters rather
#: than learned weights: float initializers there become buffers, not parameters
_FIXED_INPUTS = {
    "BatchNormalization": (3, 4), "Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 2, 3),
    "Clip": (1, 2), "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2),
    "ConstantOfShape": (0,), "Range": (0, 1, 2),
}


def _fixed_inputs(graph: ir.Graph) -> set[str]:
    """Names of the initializers that `graph` reads only where `_FIXED_INPUTS` says."""
    fixed, learned = set(), set()
    for node in graph.nodes:
        positions = _FIXED_INPUTS.get(node.op_type, ()) if node.domain in ("", "ai.onnx") \
            else ()
        for i, name in enumerate(node.inputs):
            (fixed if i in positions else learned).add(name)
    return fixed - learned


def _constant_step(name: str, value: Any) -> Step:
    node = ir.Node("Constant", [], [name], name=f"folded {name}")
    spec = OpSpec("Constant", 1, lambda: value)
    return Step(node, spec, {}, {})


def constant_name(value: str) -> str:
    """An attribute name for a constant value: exporters' long value names
    ("/features/features.5/Constant_output_0") shortened to their last two parts
    ("const_features_5_Constant")."""
    parts = [p for p in re.sub(r"_output_\d+$", "", value).split("/") if p]
    return "const_" + "_".join(parts[-2:]) if parts else "const"


def _identifier(name: str, taken: set[str]) -> str:
    """`name` made into a Python identifier not in `taken` (and added to it)."""
    base = re.sub(r"\W", "_", name) or "value"
    if base[0].isdigit() or keyword.iskeyword(base) or base.startswith("_"):
        base = "v_" + base.lstrip("_")
    out, k = base, 1
    while out in taken or hasattr(Module, out):
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out
