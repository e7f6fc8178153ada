"""Hand-built safetensors files for the store tests, written without pyburn's encoder so that
the tests check pyburn against the format itself."""

from __future__ import annotations

import json
import struct
from typing import Any

import pyburn

#: one tensor of every pyburn dtype, as (dtype, struct format of one element, values):
#: extremes, signed zeros, subnormals, infinities and NaN where the dtype has them
SAMPLES: dict[str, tuple[str, list[Any]]] = {
    "bool": ("?", [True, False, False, True, True, False]),
    "uint8": ("B", [0, 1, 127, 128, 254, 255]),
    "int32": ("i", [-2**31, -1, 0, 1, 12345, 2**31 - 1]),
    "int64": ("q", [-2**63, -1, 0, 1, 2**40 + 3, 2**63 - 1]),
    "float16": ("e", [-0.0, 65504.0, 2.0**-24, float("inf"), float("-inf"), float("nan")]),
    "float32": ("f", [-0.0, 3.4028234663852886e38, 2.0**-149, float("inf"), -1.5,
                      float("nan")]),
    "float64": ("d", [-0.0, 1.7976931348623157e308, 5e-324, float("-inf"), 0.1,
                      float("nan")]),
}


def sample(dtype: str, device: Any, shape: tuple[int, ...] = (2, 3)) -> pyburn.Tensor:
    """The SAMPLES tensor of `dtype` on `device`, built from its bytes (shape has 6
    elements, or fewer: the values are cut to fit)."""
    fmt, values = SAMPLES[dtype]
    count = 1
    for s in shape:
        count *= s
    data = struct.pack(f"<{count}{fmt}", *values[:count])
    return pyburn.tensor(data, shape=shape, dtype=dtype, device=device)


def raw_file(header: Any, data: bytes = b"", *, length: int | None = None,
             pad: bool = True) -> bytes:
    """A file of `header` (a JSON value, or bytes used as they are) and `data`; `length`
    overrides the 8-byte header length."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def entry(dtype: str, shape: list[Any], begin: int, end: int) -> dict[str, Any]:
    """One tensor's header entry."""
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
