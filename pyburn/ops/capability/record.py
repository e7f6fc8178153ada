"""What one optional capability is (`Capability`), and the one place that decides between a
capability and its composite (`offered`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._tensor import Tensor
    from ...tape import Rule

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


@dataclass(frozen=True)
class Capability:
    """One optional capability, in every column: the name a backend lists in its ``caps`` to
    offer it, the Backend methods that obliges it to implement and what they compute, the
    public function whose composite runs where no backend offers it, the backward rule of
    each op it records, and the ONNX operators the exporter writes each of those ops as."""

    name: str
    # the Backend methods a backend listing `name` implements (a capability may extend
    # another's method, as "conv_bias" adds an argument to "conv"'s)
    methods: tuple[str, ...]
    # what those methods take and return: the contract a backend implements against
    contract: str
    # the dotted name of the public function that runs the composite otherwise
    fallback: str
    # recorded op -> its backward rule, written in tensor ops (gradients of gradients work);
    # an op that is never recorded under grad mode (the Adam update) has none
    rules: Mapping[str, Rule] = field(default_factory=dict)
    # recorded op -> the ONNX operators the exporter writes it as; an op only backward
    # passes record (conv_weight, nll_loss_grad) is not exported
    onnx: Mapping[str, str] = field(default_factory=dict)


def offered(capability: Capability, *tensors: Tensor) -> bool:
    """Whether `capability` runs these tensors: their backend lists it, and they share one
    device and one floating-point dtype (anything else takes the composite, which promotes
    dtypes, handles integers and reports tensors on different devices)."""
    first = tensors[0]
    return (capability.name in first.device.backend.caps and first.dtype.is_floating_point
            and all(t.dtype is first.dtype and t.device is first.device for t in tensors))


def windowed(sizes: Ints, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints) -> tuple:
    """The output sizes of a sliding window over `sizes` (convolution and pooling)."""
    return tuple((n + b + a - d * (k - 1) - 1) // s + 1
                 for n, k, s, (b, a), d in zip(sizes, kernel, stride, padding, dilation))
