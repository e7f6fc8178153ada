"""Steps the code generator writes as `pyburn.nn` layers: a Conv whose weights are the
model's own becomes ``self.conv1 = nn.Conv2d(...)`` and ``y = self.conv1(x)``, so generated
code reads like a hand-written model. A step is raised only where the layer computes exactly
what the operator does (symmetric padding, Gemm without scaling, ...); everything else stays
an operator call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..tensor import Tensor
from .runner import Step


@dataclass
class Layer:
    """A step as a layer: its constructor call, the data inputs it is called with, and its
    state (the layer's parameter name -> tensor, transformed as the layer stores it)."""

    kind: str  # e.g. "Conv2d"
    args: list[str]  # constructor arguments, as source text
    inputs: list[str]  # ONNX names of the inputs the layer is called with
    state: dict[str, Tensor]
    #: ONNX names of the initializers the layer absorbs
    absorbs: list[str] = field(default_factory=list)

    def constructor(self) -> str:
        """``nn.Kind(args)`` as source text."""
        return f"nn.{self.kind}({', '.join(self.args)})"


#: (step, ONNX name -> tensor of parameters only this step reads) -> Layer or None
Raiser = Callable[[Step, dict[str, Tensor]], Layer | None]


def _weights(step: Step, owned: dict[str, Tensor], positions: range) -> list[Tensor] | None:
    """The step's inputs at `positions` when each is a parameter it owns (else None)."""
    names = [step.node.inputs[i] if i < len(step.node.inputs) else "" for i in positions]
    if not all(n in owned for n in names):
        return None
    return [owned[n] for n in names]


def _conv(step: Step, owned: dict[str, Tensor]) -> Layer | None:
    node, attrs = step.node, step.attrs
    found = _weights(step, owned, range(1, len(node.inputs)))
    if found is None or attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return None
    w = found[0]
    dims = w.ndim - 2
    if not 1 <= dims <= 3 or list(attrs.get("kernel_shape") or w.shape[2:]) != list(w.shape[2:]):
        return None
    pads = list(attrs.get("pads") or [0] * 2 * dims)
    if attrs.get("auto_pad") == "VALID":
        pads = [0] * 2 * dims
    if pads[:dims] != pads[dims:]:
        return None  # asymmetric padding: nn.ConvNd pads both sides alike
    group = attrs.get("group", 1)
    args = [str(w.shape[1] * group), str(w.shape[0]), f"kernel_size={tuple(w.shape[2:])}"]
    for key, value, default in (("stride", attrs.get("strides"), 1),
                                ("padding", pads[:dims], 0),
                                ("dilation", attrs.get("dilations"), 1)):
        if value and any(v != default for v in value):
            args.append(f"{key}={tuple(value)}")
    if group != 1:
        args.append(f"groups={group}")
    state = {"weight": w}
    if len(found) > 1:
        state["bias"] = found[1]
    else:
        args.append("bias=False")
    return Layer(f"Conv{dims}d", args, [node.inputs[0]], state, node.inputs[1:])


def _gemm(step: Step, owned: dict[str, Tensor]) -> Layer | None:
    node, attrs = step.node, step.attrs
    found = _weights(step, owned, range(1, len(node.inputs)))
    if (found is None or attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0
            or attrs.get("beta", 1.0) != 1.0):
        return None
    w = found[0] if attrs.get("transB", 0) else found[0].T.contiguous()
    state = {"weight": w}
    if len(found) > 1:
        if tuple(found[1].shape) != (w.shape[0],):
            return None
        state["bias"] = found[1]
    args = [str(w.shape[1]), str(w.shape[0])] + ([] if len(found) > 1 else ["bias=False"])
    return Layer("Linear", args, [node.inputs[0]], state, node.inputs[1:])


def _linear(step: Step, owned: dict[str, Tensor]) -> Layer | None:
    # pyburn.Linear (passes.fuse_linear): x @ W + b with W stored (in, out)
    found = _weights(step, owned, range(1, len(step.node.inputs)))
    if found is None:
        return None
    w = found[0].T.contiguous()
    state = {"weight": w} | ({"bias": found[1]} if len(found) > 1 else {})
    args = [str(w.shape[1]), str(w.shape[0])] + ([] if len(found) > 1 else ["bias=False"])
    return Layer("Linear", args, [step.node.inputs[0]], state, step.node.inputs[1:])


def _layer_norm(step: Step, owned: dict[str, Tensor]) -> Layer | None:
    node, attrs = step.node, step.attrs
    found = _weights(step, owned, range(1, len(node.inputs)))
    if found is None or attrs.get("axis", -1) != -1 or len([o for o in node.outputs if o]) > 1:
        return None
    scale = found[0]
    if scale.ndim != 1:
        return None
    args = [str(scale.shape[0]), f"eps={attrs.get('epsilon', 1e-5)!r}"]
    state = {"weight": scale}
    if len(found) > 1:
        state["bias"] = found[1]
    else:
        args.append("bias=False")
    return Layer("LayerNorm", args, [node.inputs[0]], state, node.inputs[1:])


RAISERS: dict[tuple[str, str], Raiser] = {
    ("", "Conv"): _conv,
    ("", "Gemm"): _gemm,
    ("pyburn", "Linear"): _linear,
    ("", "LayerNormalization"): _layer_norm,
}


def raise_step(step: Step, owned: dict[str, Tensor]) -> Layer | None:
    """`step` as a layer, or None when no layer computes exactly what it does."""
    raiser = RAISERS.get((step.node.domain, step.node.op_type))
    return raiser(step, owned) if raiser else None

