"""ONNX's sequence and optional operators. A sequence is a plain Python list of tensors, an
empty optional is None (a present one is its value)."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...errors import ArgumentError, IndexOutOfRange
from ...ops.creation import tensor as make_tensor
from ...ops.movement import cat, stack
from ...shape import norm_dim
from ..registry import check, index_dtype, ints, onnx_op


def _position(position: Tensor | None, length: int, default: int, extra: int, op: str) -> int:
    """A possibly negative position in a sequence of `length` (`extra`=1 where the end
    itself is allowed)."""
    p = default if position is None else ints(position)[0]
    if not -length <= p < length + extra:
        raise IndexOutOfRange(f"{op}: position {p} is out of range for a sequence of "
                              f"length {length}")
    return p + length if p < 0 else p


@onnx_op("SequenceEmpty", since=11)
def sequence_empty(*, dtype: int = 1) -> list[Tensor]:
    """SequenceEmpty: an empty sequence (its element type does not matter to pyburn)."""
    return []


@onnx_op("SequenceConstruct", since=11)
def sequence_construct(*inputs: Tensor) -> list[Tensor]:
    """SequenceConstruct: the inputs as a sequence."""
    return list(inputs)


@onnx_op("SequenceInsert", since=11)
def sequence_insert(input_sequence: list[Tensor], tensor: Tensor,
                    position: Tensor | None = None) -> list[Tensor]:
    """SequenceInsert: a new sequence with `tensor` inserted at `position` (appended
    without one)."""
    seq = list(input_sequence)
    seq.insert(_position(position, len(seq), len(seq), 1, "SequenceInsert"), tensor)
    return seq


@onnx_op("SequenceAt", since=11)
def sequence_at(input_sequence: list[Tensor], position: Tensor) -> Tensor:
    """SequenceAt: the tensor at `position` (negative counts from the end)."""
    return input_sequence[_position(position, len(input_sequence), 0, 0, "SequenceAt")]


@onnx_op("SequenceErase", since=11)
def sequence_erase(input_sequence: list[Tensor],
                   position: Tensor | None = None) -> list[Tensor]:
    """SequenceErase: a new sequence without the tensor at `position` (the last one
    without a position)."""
    seq = list(input_sequence)
    del seq[_position(position, len(seq), -1, 0, "SequenceErase")]
    return seq


@onnx_op("SequenceLength", since=11)
def sequence_length(input_sequence: list[Tensor], *, device: Any) -> Tensor:
    """SequenceLength: the number of tensors, as a 0-d int64 tensor."""
    return make_tensor(len(input_sequence), dtype=index_dtype(device), device=device)


@onnx_op("SplitToSequence", since=11)
def split_to_sequence(input: Tensor, split: Tensor | None = None, *,  # noqa: A002
                      axis: int = 0, keepdims: int = 1) -> list[Tensor]:
    """SplitToSequence: pieces of size 1 without `split` (with the axis dropped when
    keepdims=0), of ``split`` elements (the last smaller) for a scalar, of the listed sizes
    for a 1-d `split`."""
    d = norm_dim(axis, input.ndim)
    if split is None:
        pieces = input.split(1, d)
        return pieces if keepdims else [p.squeeze(d) for p in pieces]
    sizes = ints(split)
    if split.ndim == 0:
        check(sizes[0] > 0, f"SplitToSequence: split size must be positive, got {sizes[0]}")
        return input.split(sizes[0], d)
    return input.split(sizes, d)


@onnx_op("ConcatFromSequence", since=11)
def concat_from_sequence(input_sequence: list[Tensor], *, axis: int,
                         new_axis: int = 0) -> Tensor:
    """ConcatFromSequence: the tensors joined along `axis`, or stacked along a new `axis`
    with new_axis=1."""
    check(bool(input_sequence), "ConcatFromSequence needs a non-empty sequence")
    rank = input_sequence[0].ndim
    if new_axis:
        return stack(input_sequence, norm_dim(axis, rank, extra=1))
    return cat(input_sequence, norm_dim(axis, rank))


@onnx_op("Optional", since=15)
def optional(input: Any = None, *, type: Any = None) -> Any:  # noqa: A002 - ONNX's names
    """Optional: the input itself as a present optional, or an empty one (None)."""
    return input


@onnx_op("OptionalHasElement", since=15)
def optional_has_element(input: Any = None, *, device: Any) -> Tensor:  # noqa: A002
    """OptionalHasElement: a 0-d bool tensor, true when the optional holds a value."""
    return make_tensor(input is not None, device=device)


@onnx_op("OptionalGetElement", since=15)
def optional_get_element(input: Any) -> Any:  # noqa: A002 - ONNX's name
    """OptionalGetElement: the value an optional holds (a tensor or sequence passes
    through from opset 18)."""
    if input is None:
        raise ArgumentError("OptionalGetElement: the optional is empty")
    return input
