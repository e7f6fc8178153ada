"""Values crossing between Python and a web page's JavaScript (the loader's ``py.call``).

A page's typed arrays arrive as memoryviews (``pyburn.tensor(view)`` makes a tensor of the
matching dtype); what a function returns goes back through `for_page`, which turns each
tensor into its dtype, shape and bytes, and the loader into a typed array of that dtype.
"""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor

#: the key that marks an encoded tensor (the loader's wire.js reads it)
TENSOR_KEY = "__pyburn_tensor__"


async def for_page(value: Any) -> Any:
    """`value` with every tensor in it (in lists, tuples and dicts too) replaced by
    ``{TENSOR_KEY: dtype name, "shape": [...], "data": bytes}``; read with the `_async` form,
    so that it works on WebGPU without JSPI."""
    if isinstance(value, Tensor):
        return {TENSOR_KEY: value.dtype.name, "shape": list(value.shape),
                "data": await value.to_bytes_async()}
    if isinstance(value, (list, tuple)):
        return [await for_page(item) for item in value]
    if isinstance(value, dict):
        return {key: await for_page(item) for key, item in value.items()}
    return value
