"""ONNX to Python source: `convert` writes a `Module` subclass whose ``forward`` calls the
same operator functions the interpreter runs (`pyburn.onnx.ops`), plus its weights as
safetensors. The counterpart of burn-onnx's code generation, for Python.

The code is printed from the loaded `OnnxModule` (so it sees the graph after the passes and
constant folding): each parameter and buffer that a step reads becomes one of the generated
module's, each step one statement (with the inferred shapes of its results as a comment where
they fit), each subgraph a nested function. A constant that an operator reads only as Python
ints (a Reshape's target, Unsqueeze's axes: inputs annotated `registry.Ints`) is written as
them; the int64 tensors that remain are held, as the runner holds them, in the device's index
dtype (`registry.index_dtype`), and the weights file loads through the runner's conversion
(`tensors.load_weights`), so generated code runs wherever the runner does.
"""

from __future__ import annotations

import inspect
import keyword
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from .. import store
from .._tensor import Tensor
from ..backends import cpu
from ..dtypes import int64
from . import ir
from .layers import Layer, raise_step
from .passes import free_inputs
from .program import folded
from .proto import read
from .runner import OnnxModule, Program, Step, constant_name

#: binary operators whose Python operator has exactly ONNX's semantics
_INFIX = {"Add": "+", "Sub": "-", "Mul": "*", "MatMul": "@"}
#: names the generated code uses itself (builtins may be shadowed: it calls none)
_RESERVED = {"self", "pyburn", "nn", "ops", "tensors", "device", "super", "cls", "classmethod"}
#: the longest line generated code has (ruff's limit)
_WIDTH = 100
#: the most elements a constant may have to be written as Python ints
_MAX_LITERAL = 16


class _Names:
    """Readable, unique Python names for ONNX values: a value is named after the operator
    that makes it (``conv``, ``conv_2``, ``relu``), graph inputs after themselves."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}
        self.taken: set[str] = set(_RESERVED)

    def new(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_").lower() or "value"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def bind(self, onnx_name: str, hint: str) -> str:
        self.of[onnx_name] = self.new(hint)
        return self.of[onnx_name]


def _snake(op_type: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()


class _Printer:
    def __init__(self, module: OnnxModule) -> None:
        self.module = module
        self.names = _Names()
        #: tensors the generated module may hold: attribute name -> tensor
        self.state: dict[str, Tensor] = {}
        #: the attribute names of those that the generated code reads
        self.read: set[str] = set()
        #: the constants among the values: ONNX name -> tensor
        self.constants: dict[str, Tensor] = {}
        #: layers the generated module holds: attribute name -> Layer
        self.layers: dict[str, Layer] = {}
        #: the step each raised layer replaces -> the layer's attribute name
        self.raised: dict[int, str] = {}
        #: inferred types of the values (`passes.prepare` put them in value_info)
        graph = module.model.graph
        self.types: dict[str, ir.ValueInfo] = {v.name: v for v in graph.inputs}
        self.types.update(graph.value_info)
        for onnx_name, attr in module._slots.items():
            self.names.taken.add(attr)
            self.hold(onnx_name, attr, getattr(module, attr))
        self._raise_layers(module._program)

    def _raise_layers(self, program: Program) -> None:
        """Turn the main graph's steps that a `pyburn.nn` layer computes exactly into
        layers, taking their parameters and buffers out of the module's loose state."""
        readers: Counter[str] = Counter(program.outputs)
        for step in program.steps:
            readers.update(n for n in step.node.inputs if n)
            for body in step.bodies.values():
                readers.update(free_inputs(body.graph))
        for step in program.steps:
            owned = {n: getattr(self.module, self.module._slots[n]) for n in step.node.inputs
                     if n in self.module._slots and readers[n] == 1}
            layer = raise_step(step, owned, self.types) if owned else None
            if layer is None:
                continue
            attr = self.names.new(_layer_name(layer.absorbs[0], layer.kind))
            self.layers[attr] = layer
            self.raised[id(step)] = attr
            for name in layer.absorbs:
                if name:
                    del self.state[self.module._slots[name]]
            for key, tensor in layer.state.items():
                self.state[f"{attr}.{key}"] = tensor

    def hold(self, onnx_name: str, attr: str, tensor: Tensor) -> None:
        """Let the generated module's `attr` stand for the constant value `onnx_name` (it
        holds the tensor once the code reads it)."""
        self.names.of[onnx_name] = f"self.{attr}"
        self.state[attr] = tensor
        self.constants[onnx_name] = tensor

    def held(self) -> dict[str, Tensor]:
        """The tensors the generated module holds: its layers' and those its code reads."""
        return {attr: t for attr, t in self.state.items() if "." in attr or attr in self.read}

    def constant(self, hint: str, value: Tensor) -> str:
        attr = self.names.new(constant_name(hint))
        self.state[attr] = value
        self.read.add(attr)
        return f"self.{attr}"

    def value(self, name: str) -> str:
        """How the generated code reads the value `name`."""
        text = self.names.of[name]
        if text.startswith("self."):
            self.read.add(text.removeprefix("self."))
        return text

    def argument(self, step: Step, position: int, name: str) -> str:
        """How the generated code passes `step` its input `name` at `position`: a small
        integer constant that the operator reads only as ints is written as them."""
        if not name:
            return "None"
        tensor = self.constants.get(name)
        if (tensor is not None and position in step.spec.static_inputs
                and tensor.dtype.is_integer and tensor.ndim <= 1
                and tensor.numel() <= _MAX_LITERAL):
            return repr(tensor.tolist())
        return self.value(name)

    def literal(self, key: str, value: Any) -> str:
        if isinstance(value, Tensor):
            return self.constant(key, value)
        if isinstance(value, list) and value and isinstance(value[0], Tensor):
            return "[" + ", ".join(self.constant(key, v) for v in value) + "]"
        return repr(value)

    def body(self, program: Program, indent: str, nested: bool = True) -> list[str]:
        out = []
        # a subgraph's own initializers become buffers (the main graph's already are)
        for name, tensor in (program.constants() if nested else {}).items():
            self.hold(name, self.names.new(constant_name(name)), tensor)
        if nested:
            self.types.update(program.graph.value_info)
        for step in program.steps:
            out.extend(self.statement(step, indent))
        return out

    def statement(self, step: Step, indent: str) -> Iterator[str]:
        node = step.node
        bodies = {}
        for key, sub in step.bodies.items():
            fn_name = bodies[key] = self.names.new(f"{_snake(node.op_type)}_{key}")
            params = [self.names.bind(n, n) for n in sub.inputs]
            yield f"{indent}def {fn_name}({', '.join(params)}):"
            yield from self.body(sub, indent + "    ")
            outs = ", ".join(self.value(n) for n in sub.outputs)
            yield f"{indent}    return [{outs}]"
        args = [self.argument(step, i, n) for i, n in enumerate(node.inputs)]
        while args and args[-1] == "None":
            args.pop()
        # a node's memo is the runner's (generated code prepares its weights each call)
        kwargs = [f"{k}={'self.device' if k == 'device' else self.literal(k, v)}"
                  for k, v in step.attrs.items() if k != "memo"]
        kwargs += [f"{k}={fn_name}" for k, fn_name in bodies.items()]
        outputs = [self.names.bind(n, _snake(node.op_type)) if n else "_"
                   for n in node.outputs]
        if step.spec.fn is folded:
            call = self.literal("value", step.attrs["value"])
        elif id(step) in self.raised:
            layer = self.layers[self.raised[id(step)]]
            call = f"self.{self.raised[id(step)]}({self.value(layer.inputs[0])})"
        elif node.op_type in _INFIX and len(args) == 2 and not kwargs:
            call = f"{args[0]} {_INFIX[node.op_type]} {args[1]}"
        elif node.op_type == "Neg" and len(args) == 1:
            call = f"-{args[0]}"
        else:
            fn = step.spec.fn
            call = f"{_reference(step)}({', '.join(args + kwargs)})"
            if not _returns_one_tensor(fn):
                if len(outputs) == 1:
                    outputs = [outputs[0] + ","]
                call = f"ops.outputs({call}, {len(node.outputs)})"
        line = f"{indent}{', '.join(outputs)} = {call}"
        comment = self.shapes(node.outputs)
        yield line + comment if comment and len(line + comment) <= _WIDTH else line

    def shapes(self, names: list[str]) -> str:
        """``  # (batch, 8, 28, 28)``: the inferred shapes of `names` ("?" for what is
        unknown), or "" when none is known."""
        found = [self.types.get(n) for n in names if n]
        if not any(v is not None and v.shape is not None for v in found):
            return ""
        texts = []
        for v in found:
            if v is None or v.shape is None:
                texts.append("?")
                continue
            dims = ["?" if d is None else str(d) for d in v.shape]
            texts.append(f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})")
        return "  # " + ", ".join(texts)


def _layer_name(weight: str, kind: str) -> str:
    """A layer's attribute name from its weight's ONNX name ("features.4.weight" ->
    "features_4"); generic names ("onnx::Conv_30") give the layer kind ("conv2d")."""
    stem = re.sub(r"[._]?(weight|kernel|W)$", "", weight)
    if not stem or stem.startswith("onnx::") or not re.search(r"[A-Za-z]", stem):
        return _snake(kind)
    return stem


def _reference(step: Step) -> str:
    """How the generated code names `step`'s operator function: ``ops.<family>.<name>``
    when its module holds it under a name, else a registry lookup."""
    fn = step.spec.fn
    module = sys.modules.get(fn.__module__)
    family = fn.__module__.rsplit(".", 1)[-1]
    for name, value in vars(module).items() if module else ():
        if value is fn and not name.startswith("_"):
            return f"ops.{family}.{name}"
    spec = step.spec
    domain = f", {spec.domain!r}" if spec.domain else ""
    return f"ops.operator({spec.op_type!r}, {spec.since}{domain})"


def _returns_one_tensor(fn: Any) -> bool:
    annotation = inspect.signature(fn).return_annotation
    return annotation in ("Tensor", Tensor)


def generate(module: OnnxModule, class_name: str = "Model", source: str = "") -> \
        tuple[str, dict[str, Tensor]]:
    """Python source for `module`'s graph and the tensors its weights file must hold."""
    printer = _Printer(module)
    program = module._program
    params = [printer.names.bind(n, n) for n in module.input_names]
    body = printer.body(program, "        ", nested=False)
    outs = [printer.value(n) for n in program.outputs]
    returns = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    model = module.model
    producer = f", producer {model.producer_name}" if model.producer_name else ""
    origin = os.path.basename(source) or "an ONNX model"
    header = [
        f'"""{class_name}: generated by `pyburn onnx convert` from {origin}',
        f"(ai.onnx opset {model.opset}{producer}).",
        "",
        "Weights: the .safetensors file written next to this one;",
        f"``{class_name}.load(path, device)`` builds the module and loads them.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import pyburn",
        "from pyburn import nn",
        "from pyburn.onnx import ops, tensors",
        "",
        "",
        f"class {class_name}(nn.Module):",
        f'    """The graph of {os.path.basename(source) or "the model"} as a pyburn module."""',
        "",
        "    def __init__(self, device=None):",
        "        super().__init__()",
        "        device = pyburn.device(device)",
        "        self.device = device",
    ]
    for attr, layer in printer.layers.items():
        header.append(f"        self.{attr} = {layer.constructor()[:-1]}, device=device)"
                      if layer.args else f"        self.{attr} = nn.{layer.kind}(device=device)")
    held = printer.held()
    own = {attr: t for attr, t in held.items() if "." not in attr}  # not a layer's
    if any(t.dtype is int64 for t in own.values()):
        header.append("        index = ops.index_dtype(device)  # ONNX's int64 as the device "
                      "holds it")
    for attr, tensor in own.items():
        shape = tuple(tensor.shape)
        dtype = "index" if tensor.dtype is int64 else f"pyburn.{tensor.dtype.name}"
        make = f"pyburn.zeros({shape!r}, dtype={dtype}, device=device)"
        if tensor.dtype.is_floating_point and attr in dict(module.named_parameters()):
            header.append(f"        self.{attr} = nn.Parameter({make})")
        else:
            header.append(f"        self.register_buffer({attr!r}, {make})")
    if any(layer.needs_eval for layer in printer.layers.values()):
        header.append("        self.eval()  # batch norm layers compute the ONNX operator in "
                      "evaluation mode")
    lines = header + [
        "",
        "    @classmethod",
        "    def load(cls, path, device=None):",
        '        """The module with the weights in the safetensors file at `path`."""',
        "        model = cls(device)",
        "        model.load_state_dict(tensors.load_weights(path, model.device))",
        "        return model",
        "",
        f"    def forward(self, {', '.join(params)}):",
        *body,
        f"        return {returns}",
    ]
    code = "\n".join(_wrap(line) for line in lines) + "\n"
    return code, held


def _wrap(line: str, width: int = _WIDTH) -> str:
    """A long call (or ``def``) split after its opening parenthesis, one argument per line,
    so the generated file stays ruff-clean."""
    if len(line) <= width or "(" not in line:
        return line
    indent = line[:len(line) - len(line.lstrip())]
    head, rest = line.split("(", 1)
    inside, tail = rest.rsplit(")", 1)  # tail: "" after a call, ":" after a def
    inner = indent + "    "
    lines = [_wrap(inner + a, width - 1) + "," for a in _split_args(inside)]
    return head + "(\n" + "\n".join(lines) + f"\n{indent}){tail}"


def _split_args(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def convert(source: Any, out_dir: str | os.PathLike[str], *, class_name: str = "Model",
            name: str | None = None) -> tuple[str, str]:
    """Write `source` (an ONNX path, bytes or `ir.Model`) as ``<name>.py`` and
    ``<name>.safetensors`` in `out_dir`; returns their paths."""
    # unfused: the generated code raises each Conv and batch norm to its own layer
    module = OnnxModule(read(source), "flex" if cpu.unavailable_reason() else "cpu",
                        fuse=False)
    label = os.fspath(source) if isinstance(source, (str, os.PathLike)) else ""
    name = name or (os.path.splitext(os.path.basename(label))[0] if label else "model")
    name = re.sub(r"\W", "_", name)
    code, state = generate(module, class_name, label)
    os.makedirs(out_dir, exist_ok=True)
    code_path = os.path.join(out_dir, f"{name}.py")
    weights_path = os.path.join(out_dir, f"{name}.safetensors")
    store.save(state, weights_path, metadata={"generated_by": "pyburn onnx convert"})
    with open(code_path, "w", encoding="utf-8") as f:
        f.write(code)
    return code_path, weights_path



__all__ = ["convert", "generate"]
