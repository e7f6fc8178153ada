"""The ONNX operator implementations, one module per family; importing this package
registers them all in `pyburn.onnx.registry`, whose `lookup` it gives (look operators up
through here, where the table is complete), and whose `index_dtype` generated code reads."""

from __future__ import annotations

from typing import Any

from ..registry import (
    index_dtype,  # noqa: F401 - generated code reads it here
    lookup,
)
from . import (
    activation,  # noqa: F401
    attention,  # noqa: F401
    cast,  # noqa: F401
    control,  # noqa: F401
    conv,  # noqa: F401
    creation,  # noqa: F401
    detection,  # noqa: F401
    elementwise,  # noqa: F401
    fused,  # noqa: F401
    indexing,  # noqa: F401
    linalg,  # noqa: F401
    loss,  # noqa: F401
    normalization,  # noqa: F401
    pool,  # noqa: F401
    quantize,  # noqa: F401
    recurrent,  # noqa: F401
    reduce,  # noqa: F401
    resize,  # noqa: F401
    sampling,  # noqa: F401
    scatter,  # noqa: F401
    sequence,  # noqa: F401
    shape,  # noqa: F401
    signal,  # noqa: F401
    slicing,  # noqa: F401
    spatial,  # noqa: F401
)


def outputs(result: Any, count: int) -> tuple[Any, ...]:
    """An operator function's result as `count` outputs: a tuple gives one per entry, anything
    else (a tensor, a list that is an ONNX sequence, None) is the first; missing trailing
    outputs are None."""
    values = result if isinstance(result, tuple) else (result,)
    return values[:count] + (None,) * (count - len(values))


def operator(op_type: str, opset: int, domain: str = "") -> Any:
    """The function implementing `op_type` at `opset` of `domain` (the generated code's
    name for operators that have no module-level name of their own)."""
    spec = lookup(op_type, opset, domain)
    if spec is None:
        raise KeyError(f"pyburn has no {op_type} for opset {opset}")
    return spec.fn
