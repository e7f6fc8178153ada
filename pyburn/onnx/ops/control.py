"""Control flow: If, Loop and Scan. Their subgraphs arrive as callables
(``body(*inputs) -> outputs``) that the runner (or the generated code) provides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyburn

from ..._tensor import Tensor
from ...errors import ArgumentError
from ..registry import check, index_dtype, onnx_op

Body = Callable[..., list[Any]]


def _truth(value: Tensor, what: str) -> bool:
    check(value.numel() == 1, f"{what} must hold one element, got shape {tuple(value.shape)}")
    return bool(value.reshape(()).item())


@onnx_op("If", since=1)
def if_(cond: Tensor, *, then_branch: Body, else_branch: Body) -> tuple[Any, ...]:
    """If: the outputs of `then_branch` when `cond` is true, else of `else_branch`."""
    return tuple((then_branch if _truth(cond, "If's condition") else else_branch)())


@onnx_op("Loop", since=1)
def loop(max_trip: Tensor | None = None, cond: Tensor | None = None, *initial: Any,
         body: Body, device: Any = None) -> tuple[Any, ...]:
    """Loop: run `body(i, cond, *state)` while `i < max_trip` and the condition holds;
    returns the final loop-carried values, then each per-iteration output stacked."""
    trip = None if max_trip is None else int(max_trip.reshape(()).item())
    going = True if cond is None else _truth(cond, "Loop's condition")
    state = list(initial)
    scans: list[list[Tensor]] = []
    step = 0
    index = index_dtype(device)
    while going and (trip is None or step < trip):
        outs = body(pyburn.tensor(step, dtype=index, device=device),
                    pyburn.tensor(going, dtype=pyburn.bool_, device=device), *state)
        if len(outs) < 1 + len(state):
            raise ArgumentError(f"Loop's body returned {len(outs)} values, it must return "
                                f"the condition and {len(state)} loop-carried values")
        going = _truth(outs[0], "Loop's body condition")
        state = list(outs[1:1 + len(state)])
        extra = outs[1 + len(state):]
        if not scans:
            scans = [[] for _ in extra]
        for acc, value in zip(scans, extra):
            acc.append(value)
        step += 1
    return (*state, *(pyburn.stack(acc) for acc in scans))


@onnx_op("Scan", since=9)
def scan(*inputs: Tensor, body: Body, num_scan_inputs: int,
         scan_input_axes: list[int] | None = None,
         scan_input_directions: list[int] | None = None,
         scan_output_axes: list[int] | None = None,
         scan_output_directions: list[int] | None = None) -> tuple[Tensor, ...]:
    """Scan: run `body(*state, *slices)` over slices of the scan inputs along their scan
    axes; returns the final states, then each per-step output stacked along its axis."""
    n_state = len(inputs) - num_scan_inputs
    check(n_state >= 0, f"Scan has {len(inputs)} inputs but num_scan_inputs="
          f"{num_scan_inputs}")
    state, xs = list(inputs[:n_state]), inputs[n_state:]
    axes = [a % x.ndim for a, x in zip(scan_input_axes or [0] * len(xs), xs)]
    backwards = scan_input_directions or [0] * len(xs)
    lengths = {x.shape[a] for x, a in zip(xs, axes)}
    check(len(lengths) <= 1, f"Scan's inputs have different lengths along their scan axes: "
          f"{sorted(lengths)}")
    steps = lengths.pop() if lengths else 0
    collected: list[list[Tensor]] = []
    for t in range(steps):
        slices = [x.narrow(a, steps - 1 - t if back else t, 1).squeeze(a)
                  for x, a, back in zip(xs, axes, backwards)]
        outs = body(*state, *slices)
        state = list(outs[:n_state])
        extra = outs[n_state:]
        if not collected:
            collected = [[] for _ in extra]
        for acc, value in zip(collected, extra):
            acc.append(value)
    out_axes = scan_output_axes or [0] * len(collected)
    out_back = scan_output_directions or [0] * len(collected)
    stacked = []
    for acc, axis, back in zip(collected, out_axes, out_back):
        if back:
            acc = acc[::-1]
        stacked.append(pyburn.stack(acc, dim=axis % (acc[0].ndim + 1)))
    return (*state, *stacked)


@onnx_op("SequenceMap", since=17)
def sequence_map(sequence: list[Tensor], *others: Any, body: Body) -> tuple[list[Any], ...]:
    """SequenceMap: `body` applied to each element of `sequence` (with the matching element
    of each other sequence, or a tensor as is); each body output becomes a sequence."""
    for other in others:
        if isinstance(other, list):
            check(len(other) == len(sequence), f"SequenceMap's sequences differ in length: "
                  f"{len(sequence)} and {len(other)}")
    results: list[list[Any]] = []
    for i, item in enumerate(sequence):
        outs = body(item, *(o[i] if isinstance(o, list) else o for o in others))
        if not results:
            results = [[] for _ in outs]
        for acc, value in zip(results, outs):
            acc.append(value)
    return tuple(results)


@onnx_op("Scan", since=8)
def scan_v8(sequence_lens: Tensor | None = None, *inputs: Tensor, body: Body,
            num_scan_inputs: int,
            directions: list[int] | None = None) -> tuple[Tensor, ...]:
    """Scan, opset 8: like Scan 9 along axis 1, for each batch entry (axis 0) separately,
    each entry's scan stopping at its `sequence_lens` (the rest of its outputs are zeros)."""
    n_state = len(inputs) - num_scan_inputs
    check(n_state >= 0, f"Scan has {len(inputs)} inputs but num_scan_inputs="
          f"{num_scan_inputs}")
    batch = inputs[0].shape[0] if inputs else 0
    lengths = [None] * batch if sequence_lens is None else \
        [int(v) for v in sequence_lens.reshape(-1).tolist()]
    per_entry = []
    for b in range(batch):
        states = [x[b] for x in inputs[:n_state]]
        xs = [x[b] for x in inputs[n_state:]]
        if lengths[b] is not None:
            xs = [x.narrow(0, 0, lengths[b]) for x in xs]
        per_entry.append(scan(*states, *xs, body=body, num_scan_inputs=num_scan_inputs,
                              scan_input_directions=directions))
    full = max((x.shape[1] for x in inputs[n_state:]), default=0)
    outs = []
    for k in range(len(per_entry[0]) if per_entry else 0):
        values = []
        for entry in per_entry:
            value = entry[k]
            if k >= n_state and value.shape[0] < full:  # a shorter sequence: zero rest
                rest = pyburn.zeros((full - value.shape[0], *value.shape[1:]),
                                    dtype=value.dtype, device=value.device)
                value = pyburn.cat([value, rest])
            values.append(value)
        outs.append(pyburn.stack(values))
    return tuple(outs)
