"""Window geometry shared by the convolution and pooling operators.

ONNX describes a sliding window by `kernel_shape`, `strides`, `dilations`, `pads` (all the
"before" pads, then all the "after" pads) or `auto_pad`, and, for pools, `ceil_mode`.
`Geometry` turns those into (before, after) pairs per spatial dim, the output sizes, and the
right pad the last window actually needs (more than `pads` when `ceil_mode` lets a window
hang past the padding, less when the last elements fall outside every window).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from ...nn.functional.windows import output_size
from ..registry import check

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def per_dim(values: Sequence[int] | None, nd: int, default: int, name: str,
            op: str) -> tuple[int, ...]:
    """An attribute with one int per spatial dim (`default` for each when absent)."""
    if not values:
        return (default,) * nd
    check(len(values) == nd, f"{op}: {name} must have {nd} values (one per spatial dim), got "
                             f"{list(values)}")
    return tuple(int(v) for v in values)


def split_pads(pads: Sequence[int] | None, nd: int, op: str) -> list[tuple[int, int]]:
    """ONNX's `pads` ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]) as (before, after)
    pairs."""
    if not pads:
        return [(0, 0)] * nd
    check(len(pads) == 2 * nd, f"{op}: pads must have {2 * nd} values (a begin and an end "
                               f"per spatial dim), got {list(pads)}")
    return [(int(pads[i]), int(pads[nd + i])) for i in range(nd)]


def same_pads(total: int, auto_pad: str) -> tuple[int, int]:
    """A total pad split as SAME_UPPER (the odd element at the end) or SAME_LOWER (at the
    beginning) say."""
    small = total // 2
    return (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)


@dataclass(frozen=True)
class Geometry:
    """The checked geometry of one windowed operator over the trailing dims."""

    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    #: (before, after) explicit or automatic padding per spatial dim
    pads: tuple[tuple[int, int], ...]
    #: output size per spatial dim
    out: tuple[int, ...]

    @property
    def window_pads(self) -> list[tuple[int, int]]:
        """(before, after) pads giving exactly the input the windows cover: the "after" part
        is negative where trailing elements lie outside every window."""
        return [(b, (o - 1) * s + d * (k - 1) + 1 - n - b)
                for n, k, s, d, (b, _), o in zip(self.spatial, self.kernel, self.strides,
                                                 self.dilations, self.pads, self.out)]


def geometry(op: str, spatial: Sequence[int], kernel: Sequence[int],
             strides: Sequence[int] | None, dilations: Sequence[int] | None,
             pads: Sequence[int] | None, auto_pad: str = "NOTSET",
             ceil_mode: int = 0) -> Geometry:
    """Resolve ONNX's window attributes for an input whose spatial sizes are `spatial`.

    SAME_UPPER/SAME_LOWER give ``ceil(n / stride)`` outputs and pad just enough for them;
    VALID pads nothing; NOTSET uses `pads`. `ceil_mode` keeps a last, partial window that
    starts inside the input or its leading padding.
    """
    # a model calls each operator with the same attributes and, mostly, the same sizes:
    # the resolved geometry is remembered rather than worked out again on every run
    return _geometry(op, tuple(spatial), tuple(kernel), _frozen(strides), _frozen(dilations),
                     _frozen(pads), auto_pad, ceil_mode)


def _frozen(values: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


@functools.lru_cache(maxsize=512)
def _geometry(op: str, spatial: tuple[int, ...], kernel: tuple[int, ...],
              strides: tuple[int, ...] | None, dilations: tuple[int, ...] | None,
              pads: tuple[int, ...] | None, auto_pad: str, ceil_mode: int) -> Geometry:
    nd = len(spatial)
    check(len(kernel) == nd, f"{op}: kernel_shape {list(kernel)} must have {nd} values for "
                             f"an input with {nd} spatial dims")
    check(all(k > 0 for k in kernel), f"{op}: kernel_shape must be positive, got {list(kernel)}")
    strides = per_dim(strides, nd, 1, "strides", op)
    dilations = per_dim(dilations, nd, 1, "dilations", op)
    check(all(s > 0 for s in strides), f"{op}: strides must be positive, got {list(strides)}")
    check(all(d > 0 for d in dilations),
          f"{op}: dilations must be positive, got {list(dilations)}")
    check(auto_pad in AUTO_PADS, f"{op}: auto_pad must be one of {', '.join(AUTO_PADS)}, got "
                                 f"{auto_pad!r}")
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-n // s) for n, s in zip(spatial, strides)]
        pairs = [same_pads(max(0, (o - 1) * s + w - n), auto_pad)
                 for n, s, w, o in zip(spatial, strides, spans, out)]
    else:
        pairs = [(0, 0)] * nd if auto_pad == "VALID" else split_pads(pads, nd, op)
        out = [output_size(n, k, s, d, b, a, bool(ceil_mode))
               for n, k, s, d, (b, a) in zip(spatial, kernel, strides, dilations, pairs)]
    check(all(o > 0 for o in out),
          f"{op}: the window (kernel_shape {list(kernel)}, dilations {list(dilations)}) does "
          f"not fit the padded input: spatial sizes {list(spatial)}, pads {pairs}")
    return Geometry(tuple(spatial), tuple(kernel), tuple(strides), tuple(dilations),
                    tuple(pairs), tuple(out))
