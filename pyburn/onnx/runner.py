"""Running an ONNX graph eagerly: `OnnxModule`, the Module that `pyburn.onnx.load` returns.

A graph becomes a `Program` (program.py): its nodes in order, each bound to its operator
function from the registry. Float initializers become the module's parameters (so an
imported model fine-tunes like any other), other initializers its buffers, and nodes whose
inputs are all fixed constants are computed once at load time (constant folding) and kept
as buffers. Where shape inference knows the shapes that Shape nodes read, a second program
has that shape arithmetic folded too (specialize.py); calls whose inputs have the declared
shapes run it, others the general one.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator, Mapping
from itertools import chain
from typing import Any

from .._tensor import Tensor
from ..capture import Captured
from ..devices import Device
from ..devices import device as as_device
from ..errors import ArgumentError
from ..nn.module import Module
from ..nn.parameter import Parameter
from . import fusion, ir
from .passes import prepare
from .program import GuardFailed, OperatorError, Program, Step, constant_step
from .specialize import Specialized, specialize
from .tensors import to_tensor

__all__ = ["OnnxModule", "OperatorError", "Program", "Step", "constant_name"]


class OnnxModule(Module):
    """An ONNX model as a pyburn Module: call it with the graph's inputs (positionally in
    the graph's order, or by name) and it returns its output, or a tuple of outputs.

    Float initializers are parameters (``parameters()``, ``state_dict()``, fine-tuning on
    an autodiff device), named after the ONNX names made into identifiers
    (`onnx_names` maps them back); those that only feed statistics or settings (batch-norm
    running mean and variance, Resize scales, quantization scales, ...) are buffers.

    With `fuse` (the default) each Conv runs as one step with the batch norm and the
    activation that alone read its output (`pyburn.onnx.fusion`); False runs every node
    as the file has it.
    """

    def __init__(self, model: ir.Model, device: Any = None, fuse: bool = True) -> None:
        super().__init__()
        model = prepare(model)
        dev = as_device(device)
        graph = fusion.fuse(model.graph, model.opset) if fuse else model.graph
        # ONNX names -> attribute names on this module
        slots: dict[str, str] = {}
        taken: set[str] = set()
        fixed_inputs = _fixed_inputs(model.graph)  # as the file has them, unfused
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
        self._hold(program, {name: fixed[name] for name in program.fold(fixed)}, slots,
                   taken)
        input_names = [n for n in program.inputs if n not in graph.initializers]
        found = specialize(program, graph, input_names, fixed)
        special = found[0] if found is not None else None
        # the values only the specialized program reads: ONNX names -> attribute names
        special_slots: dict[str, str] = {}
        if found is not None:
            self._hold(found[0].program, found[1], special_slots, taken)
        object.__setattr__(self, "_slots", slots)
        object.__setattr__(self, "_special_slots", special_slots)
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "_special", special)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "input_names", input_names)
        object.__setattr__(self, "output_names", list(program.outputs))
        object.__setattr__(self, "_captured", Captured(self._run, self._state, self._mode))

    def _hold(self, program: Program, values: dict[str, Any], slots: dict[str, str],
              taken: set[str]) -> None:
        """Keep folded `values` for `program`: tensors as (non-persistent) buffers named in
        `slots`, anything else as a step that gives it."""
        for name, value in values.items():
            if isinstance(value, Tensor):
                attr = _identifier(constant_name(name), taken)
                self.register_buffer(attr, value, persistent=False)
                slots[name] = attr
            else:  # a folded sequence or empty optional: held as is
                program.steps.insert(0, constant_step(name, value))

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
        return self._captured(*[feed[name] for name in self.input_names])

    def _state(self) -> Iterator[Tensor]:
        """The tensors a run reads besides its inputs: parameters and buffers."""
        return chain(self._parameters.values(), self._buffers.values())

    def _mode(self) -> tuple[bool, bool]:
        """What decides a run besides its inputs and state: the training flag, and whether
        the specialized program is still used."""
        return self.training, self._special is not None

    def _run(self, *inputs: Any) -> Any:
        """The graph's outputs for `inputs` (in `input_names` order): the output, or a tuple
        of them."""
        feed = dict(zip(self.input_names, inputs))
        state = self._parameters | self._buffers
        env = {name: state[attr] for name, attr in self._slots.items()}
        env.update(feed)
        special: Specialized | None = self._special
        if special is not None and special.accepts(feed):
            env.update((name, state[attr]) for name, attr in self._special_slots.items())
            try:
                outputs = special.program.run(env)
            except GuardFailed:
                # shape inference was wrong about this model: stop specializing it
                object.__setattr__(self, "_special", None)
                outputs = self._program.run(env)
        else:
            outputs = self._program.run(env)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def to(self, *args: Any, device: Device | str | None = None, dtype: Any = None) -> Module:
        """`Module.to`, moving the graph's own tensors along with the parameters."""
        super().to(*args, device=device, dtype=dtype)
        tensors = self._tensors()
        target = tensors[0].device if tensors else as_device(device) if device else None
        if target is not None:
            self._program.move(target)
            if self._special is not None:
                self._special.program.move(target)
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
