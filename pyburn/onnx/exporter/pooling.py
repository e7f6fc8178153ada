"""Module exporters for the pooling layers of `pyburn.nn`: MaxPool, AvgPool and the adaptive
pools whose windows are all alike (output size 1, or sizes that divide the input's)."""

from __future__ import annotations

from typing import Any

from ... import nn
from ...nn.functional.windows import ntuple
from .builder import Builder
from .layers import floating
from .registry import Plan, exports
from .trace import Event


def _geometry(m: Any, nd: int, op: str) -> dict[str, list[int]]:
    """kernel_shape, strides and pads of a sliding-window pooling layer."""
    kernel = ntuple(m.kernel_size, nd, "kernel_size", op, 1)
    stride = kernel if m.stride is None or m.stride == () else ntuple(m.stride, nd, "stride",
                                                                        op, 1)
    pad = ntuple(m.padding, nd, "padding", op, 0)
    return {"kernel_shape": list(kernel), "strides": list(stride), "pads": list(pad) * 2}


_MAX = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3}
_AVG = {nn.AvgPool1d: 1, nn.AvgPool2d: 2, nn.AvgPool3d: 3}
_ADAPTIVE = {nn.AdaptiveAvgPool1d: ("GlobalAveragePool", 1),
             nn.AdaptiveAvgPool2d: ("GlobalAveragePool", 2),
             nn.AdaptiveAvgPool3d: ("GlobalAveragePool", 3),
             nn.AdaptiveMaxPool1d: ("GlobalMaxPool", 1),
             nn.AdaptiveMaxPool2d: ("GlobalMaxPool", 2),
             nn.AdaptiveMaxPool3d: ("GlobalMaxPool", 3)}


@exports(*_MAX)
def _max_pool(m: Any, opset: int, input: Any) -> Plan | None:
    nd = _MAX[type(m)]
    if m.return_indices or not floating(input, nd + 2):
        return None
    settings = _geometry(m, nd, type(m).__name__)
    settings["dilations"] = list(ntuple(m.dilation, nd, "dilation", type(m).__name__, 1))
    settings["ceil_mode"] = int(m.ceil_mode)
    return Plan((input,), _emit_pool, {"op": "MaxPool", **settings})


@exports(*_AVG)
def _avg_pool(m: Any, opset: int, input: Any) -> Plan | None:
    nd = _AVG[type(m)]
    # PyTorch's divisor for windows that hang past the padding (ceil_mode) is not ONNX's
    if m.ceil_mode or getattr(m, "divisor_override", None) is not None or \
            not floating(input, nd + 2):
        return None
    settings = _geometry(m, nd, type(m).__name__)
    settings["count_include_pad"] = int(m.count_include_pad)
    return Plan((input,), _emit_pool, {"op": "AveragePool", **settings})


@exports(*_ADAPTIVE)
def _adaptive_pool(m: Any, opset: int, input: Any) -> Plan | None:
    op, nd = _ADAPTIVE[type(m)]
    if getattr(m, "return_indices", False) or not floating(input, nd + 2):
        return None
    size = m.output_size
    sizes = (size,) * nd if isinstance(size, int) else tuple(size)
    spatial = input.shape[2:]
    if len(sizes) != nd:
        return None
    if all(s == 1 for s in sizes):
        return Plan((input,), _emit_pool, {"op": op})
    # equal windows (the input divides into them) are an ordinary pooling
    kept = [n if s is None else s for s, n in zip(sizes, spatial)]
    if any(s <= 0 or n % s for s, n in zip(kept, spatial)):
        return None
    kernel = [n // s for s, n in zip(kept, spatial)]
    return Plan((input,), _emit_pool, {"op": op.removeprefix("Global"), "kernel_shape": kernel,
                                       "strides": kernel, "pads": [0] * (2 * nd)})


def _emit_pool(b: Builder, ev: Event, outs: list[str]) -> None:
    attrs = {k: b.static(ev, k) for k in ev.ctx if k != "op"}
    b.node(ev.ctx["op"], [b.value(ev.inputs[0])], outs[0], **attrs)
