"""`repr` of tensors: the values (summarised when large), shape, dtype and device."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._tensor import Tensor

#: tensors with more elements than this show only their edges
SUMMARY_THRESHOLD = 1000
EDGE_ITEMS = 3


def _format_value(value: Any, floating: bool, scientific: bool) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if not floating:
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if scientific:
        return f"{value:.4e}"
    return f"{value:.4f}".rstrip("0")  # 1.0 shows as "1.", like PyTorch


def _edges(x: Tensor, summarise: bool) -> Any:
    """Nested lists of the values to show, with None standing for the elided middle."""
    if x.ndim == 0:
        return x.item()
    n = x.shape[0]
    if summarise and n > 2 * EDGE_ITEMS:
        head = [_edges(x[i], summarise) for i in range(EDGE_ITEMS)]
        tail = [_edges(x[i], summarise) for i in range(n - EDGE_ITEMS, n)]
        return head + [None] + tail
    if x.ndim == 1:
        return x.tolist()
    return [_edges(x[i], summarise) for i in range(n)]


def _leaves(nested: Any) -> list:
    if isinstance(nested, list):
        return [v for item in nested for v in _leaves(item)]
    return [] if nested is None else [nested]


def format_tensor(x: Tensor) -> str:
    """``tensor([...], shape=(..), dtype=float32, device='cpu')``."""
    summarise = x.numel() > SUMMARY_THRESHOLD
    values = _edges(x, summarise) if x.numel() else ([] if x.ndim else None)
    floating = x.dtype.is_floating_point
    magnitudes = [abs(v) for v in _leaves(values) if floating and math.isfinite(v) and v]
    scientific = bool(magnitudes) and (max(magnitudes) >= 1e8 or min(magnitudes) < 1e-4)
    texts = [_format_value(v, floating, scientific) for v in _leaves(values)]
    width = max(map(len, texts), default=0)
    parts = iter(t.rjust(width) for t in texts)

    def render(nested: Any, depth: int) -> str:
        if not isinstance(nested, list):
            return "..." if nested is None else next(parts)
        if nested and isinstance(nested[0], list) or (nested and nested[0] is None
                                                        and x.ndim - depth > 1):
            sep = "," + "\n" * (x.ndim - depth - 1) + " " * (len("tensor([") + depth)
            return "[" + sep.join(render(v, depth + 1) if v is not None else "..."
                                  for v in nested) + "]"
        return "[" + ", ".join(render(v, depth + 1) for v in nested) + "]"

    body = render(values, 0) if x.ndim else next(parts)
    return (f"tensor({body}, shape={x.shape}, dtype={x.dtype.name}, "
            f"device={x.device.name!r})")
