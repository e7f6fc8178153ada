"""Steps the code generator writes as `pyburn.nn` layers: a Conv whose weights are the
model's own becomes ``self.conv1 = nn.Conv2d(...)`` and ``y = self.conv1(x)``, so generated
code reads like a hand-written model. A step is raised only where the layer computes exactly
what the operator does (symmetric padding, Gemm without scaling, ...); everything else stays
an operator call. BatchNormalization becomes ``nn.BatchNorm1d/2d/3d`` by its input's rank
(from shape inference); those layers compute the operator in evaluation mode, so a generated
module holding one calls ``self.eval()`` when it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .._tensor import Tensor
from ..nn.parameter import Parameter
from ..ops.creation import zeros
from . import ir
from .registry import index_dtype
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
    #: whether the layer computes the operator only in evaluation mode (batch norm)
    needs_eval: bool = False

    def constructor(self) -> str:
        """``nn.Kind(args)`` as source text."""
        return f"nn.{self.kind}({', '.join(self.args)})"


#: (step, ONNX name -> tensor of the constants only this step reads, inferred types of the
#: graph's values) -> Layer or None
Raiser = Callable[[Step, dict[str, Tensor], Mapping[str, ir.ValueInfo]], Layer | None]


def _weights(step: Step, owned: dict[str, Tensor], positions: range, learned: bool = True
             ) -> list[Tensor] | None:
    """The step's inputs at `positions` when it owns each (and each is a parameter, where
    `learned`), else None."""
    names = [step.node.inputs[i] if i < len(step.node.inputs) else "" for i in positions]
    if not all(n in owned and (isinstance(owned[n], Parameter) or not learned)
               for n in names):
        return None
    return [owned[n] for n in names]


def _conv(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
          ) -> Layer | None:
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


def _gemm(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
          ) -> Layer | None:
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


def _linear(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
            ) -> Layer | None:
    # pyburn.Linear (passes.fuse_linear): x @ W + b with W stored (in, out)
    found = _weights(step, owned, range(1, len(step.node.inputs)))
    if found is None:
        return None
    w = found[0].T.contiguous()
    state = {"weight": w} | ({"bias": found[1]} if len(found) > 1 else {})
    args = [str(w.shape[1]), str(w.shape[0])] + ([] if len(found) > 1 else ["bias=False"])
    return Layer("Linear", args, [step.node.inputs[0]], state, step.node.inputs[1:])


def _layer_norm(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
                ) -> Layer | None:
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


#: batch norm layer by input rank ((N, C) and (N, C, L) are both BatchNorm1d's)
_BATCH_NORMS = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}


def _batch_norm(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
                ) -> Layer | None:
    # in evaluation mode nn.BatchNormNd computes (x - running_mean) / sqrt(running_var + eps)
    # * weight + bias: the operator without training_mode, for per-channel statistics
    node, attrs = step.node, step.attrs
    x = types.get(node.inputs[0])
    kind = _BATCH_NORMS.get(len(x.shape)) if x is not None and x.shape is not None else None
    affine = _weights(step, owned, range(1, 3))
    stats = _weights(step, owned, range(3, 5), learned=False)
    if (kind is None or affine is None or stats is None or attrs.get("training_mode", 0)
            or len([o for o in node.outputs if o]) > 1):
        return None
    tensors = affine + stats
    if any(t.ndim != 1 or t.shape != tensors[0].shape for t in tensors):
        return None
    args = [str(tensors[0].shape[0])]
    eps, momentum = attrs.get("epsilon", 1e-5), attrs.get("momentum", 0.9)
    if eps != 1e-5:
        args.append(f"eps={eps!r}")
    if momentum != 0.9:  # ONNX weighs the running value by momentum, pyburn the new one
        args.append(f"momentum={round(1.0 - momentum, 12)!r}")
    counter = zeros((), dtype=index_dtype(tensors[0].device), device=tensors[0].device)
    state = dict(zip(("weight", "bias", "running_mean", "running_var"), tensors))
    state["num_batches_tracked"] = counter
    return Layer(kind, args, [node.inputs[0]], state, node.inputs[1:5], needs_eval=True)


RAISERS: dict[tuple[str, str], Raiser] = {
    ("", "Conv"): _conv,
    ("", "Gemm"): _gemm,
    ("pyburn", "Linear"): _linear,
    ("", "LayerNormalization"): _layer_norm,
    ("", "BatchNormalization"): _batch_norm,
}


def raise_step(step: Step, owned: dict[str, Tensor], types: Mapping[str, ir.ValueInfo]
               ) -> Layer | None:
    """`step` as a layer, or None when no layer computes exactly what it does. `owned` holds
    the parameters and buffers only this step reads, `types` the inferred value types."""
    raiser = RAISERS.get((step.node.domain, step.node.op_type))
    return raiser(step, owned, types) if raiser else None

