"""The runner's fusion: a Conv and what alone reads its output (a BatchNormalization in
inference, an activation, or both in that order) become one ``pyburn.FusedConv`` step.

onnxruntime does the same when it loads a model (its Conv+BatchNormalization folding and
FusedConv): an image network spends most of its time in convolutions whose output goes
straight through a batch norm and an activation, and each of those is a full pass over a
large tensor, with a fresh output to fill. Fused, the batch norm is folded into the
convolution's weights and bias (once, remembered while the weights stay the same) and the
activation is written over the convolution's fresh output where the device offers the
"conv_activation" capability (`pyburn.ops.capability`). The activations fused are those
the capability computes: Relu, Clip with constant bounds, Sigmoid, HardSigmoid with
PyTorch's slope (1/6, 1/2), HardSwish, and SiLU written as ``Mul(v, Sigmoid(v))``.

Only the runner fuses (`OnnxModule(fuse=True)`, the default of `pyburn.onnx.load`): the code
generator writes each node as the file has it. A fused step still computes node by node
where that is recorded (gradients, an export), see `pyburn.onnx.ops.fused.fused_conv`.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Callable

from . import ir
from .passes import free_inputs, subgraphs
from .tensors import to_tensor

#: float32's largest finite value: Clip-6's default bounds
_FLT_MAX = 3.4028234663852886e38

Bounds = tuple[float, float]


def fuse(graph: ir.Graph, opset: int) -> ir.Graph:
    """`graph` (prepared: sorted, simplified) with each Conv [-> BatchNormalization] [->
    activation] chain whose intermediate values nothing else reads made one
    ``pyburn.FusedConv`` node (its output the chain's last). `opset` is the model's ai.onnx
    opset (Clip's bounds moved from attributes to inputs in 11)."""
    readers: Counter[str] = Counter(v.name for v in graph.outputs)
    users: dict[str, list[ir.Node]] = {}
    for node in graph.nodes:
        for name in node.inputs:
            readers[name] += 1
            users.setdefault(name, []).append(node)
        for sub in subgraphs(node):
            readers.update(free_inputs(sub))

    def only(name: str) -> ir.Node | None:
        # the one node that reads `name`, when `name` is no graph output
        found = users.get(name, [])
        return found[0] if readers[name] == 1 and len(found) == 1 else None

    constants = dict(graph.initializers)
    constants.update((n.outputs[0], n.attrs["value"]) for n in graph.nodes
                     if n.op_type == "Constant" and isinstance(n.attrs.get("value"), ir.TensorData))
    gone: set[int] = set()  # ids of the nodes a fused node replaces
    # id of a chain's last node -> the fused node, which takes its place: every input of
    # the chain is computed by then
    fused: dict[int, ir.Node] = {}
    for node in graph.nodes:
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or len(node.outputs) != 1:
            continue
        chain, inputs = [node], list(node.inputs) + [""] * (3 - len(node.inputs))
        attrs = dict(node.attrs)
        end = node.outputs[0]
        norm = only(end)
        if norm is not None and _is_inference_norm(norm):
            chain.append(norm)
            inputs += norm.inputs[1:5]
            attrs["epsilon"] = norm.attrs.get("epsilon", 1e-5)
            end = norm.outputs[0]
        found = _activation(end, only, users, readers, constants, opset)
        if found is not None:
            name, bounds, nodes = found
            chain += nodes
            attrs["activation"] = name
            if bounds is not None:
                attrs["bounds"] = list(bounds)
            end = nodes[-1].outputs[0]
        if len(chain) == 1:
            continue
        gone.update(id(n) for n in chain)
        fused[id(chain[-1])] = ir.Node("FusedConv", inputs, [end], attrs, node.name, "pyburn")
    if not fused:
        return graph
    nodes = [fused.get(id(n), n) for n in graph.nodes if id(n) not in gone or id(n) in fused]
    # Clip's bounds, when Constant nodes gave them, are now read by nobody
    read = {v.name for v in graph.outputs} | {name for n in nodes for name in n.inputs}
    read |= {name for n in nodes for sub in subgraphs(n) for name in free_inputs(sub)}
    out = copy.copy(graph)
    out.nodes = [n for n in nodes if n.op_type != "Constant" or n.outputs[0] in read]
    return out


def _is_inference_norm(node: ir.Node) -> bool:
    """A BatchNormalization that normalizes with its given statistics, per channel, and
    gives only its first output."""
    return (node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx")
            and len(node.inputs) == 5 and all(node.inputs)
            and not node.attrs.get("training_mode") and node.attrs.get("spatial", 1) == 1
            and not any(node.outputs[1:]))


def _activation(value: str, only: Callable[[str], ir.Node | None],
                users: dict[str, list[ir.Node]], readers: Counter[str],
                constants: dict[str, ir.TensorData], opset: int,
                ) -> tuple[str, Bounds | None, list[ir.Node]] | None:
    """The activation that `value` alone goes through: its name for the "conv_activation"
    capability, Clip's bounds, and its nodes; None when there is none to fuse."""
    node = only(value)
    if node is not None and node.domain in ("", "ai.onnx"):
        kind = node.op_type
        if kind == "Relu":
            return "clip", (0.0, math.inf), [node]
        if kind == "Clip":
            bounds = _clip_bounds(node, constants, opset)
            return None if bounds is None else ("clip", bounds, [node])
        if kind in ("Sigmoid", "HardSwish"):
            return kind.lower(), None, [node]
        if kind == "HardSigmoid" and _is_pytorch_hardsigmoid(node):
            return "hardsigmoid", None, [node]
        return None
    # SiLU: v read by a Sigmoid and by the Mul of v and that Sigmoid's output, nothing else
    found = users.get(value, [])
    if readers[value] != 2 or len(found) != 2:
        return None
    sigmoid = next((n for n in found if n.op_type == "Sigmoid"), None)
    mul = next((n for n in found if n.op_type == "Mul"), None)
    if (sigmoid is None or mul is None or sigmoid.domain not in ("", "ai.onnx")
            or mul.domain not in ("", "ai.onnx") or only(sigmoid.outputs[0]) is not mul
            or sorted(mul.inputs) != sorted([value, sigmoid.outputs[0]])):
        return None
    return "silu", None, [sigmoid, mul]


def _is_pytorch_hardsigmoid(node: ir.Node) -> bool:
    """HardSigmoid with PyTorch's alpha 1/6 and beta 1/2 (as float32 attributes hold them),
    the capability's hardsigmoid."""
    alpha, beta = node.attrs.get("alpha", 0.2), node.attrs.get("beta", 0.5)
    return abs(alpha - 1 / 6) <= 1e-7 and abs(beta - 0.5) <= 1e-7


def _clip_bounds(node: ir.Node, constants: dict[str, ir.TensorData],
                 opset: int) -> Bounds | None:
    """Clip's (min, max) as floats (infinite where absent), or None where a bound is not a
    one-element float constant (an initializer or a Constant node's value)."""
    if opset < 11:
        return (node.attrs.get("min", -_FLT_MAX), node.attrs.get("max", _FLT_MAX))
    bounds = []
    for k, missing in ((1, -math.inf), (2, math.inf)):
        name = node.inputs[k] if len(node.inputs) > k else ""
        if not name:
            bounds.append(missing)
            continue
        data = constants.get(name)
        if data is None or data.numel != 1 or not data.dtype.startswith("float"):
            return None
        bounds.append(float(to_tensor(data, "flex").item()))
    return bounds[0], bounds[1]
