"""The functional autodiff API: `grad` and gradient checkpointing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError
from .graph import (
    Node,
    check_root,
    default_grad,
    enable_grad,
    is_grad_enabled,
    leaf_node,
    no_grad,
    record,
    run_backward,
)

if TYPE_CHECKING:
    from .._tensor import Tensor


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of `outputs` with respect to `inputs`, returned instead of added to
    ``.grad``. With `create_graph` the result is itself differentiable (Hessian-vector
    products, gradient penalties).

    >>> import pyburn
    >>> dev = pyburn.device("flex").autodiff()
    >>> x = pyburn.tensor(3.0, device=dev, requires_grad=True)
    >>> (dx,) = pyburn.autodiff.grad(x ** 3, x, create_graph=True)
    >>> dx.item(), pyburn.autodiff.grad(dx, x)[0].item()
    (27.0, 18.0)
    """
    outs, ins = _as_list(outputs), _as_list(inputs)
    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise ArgumentError(f"grad: {len(outs)} outputs but {len(gos)} grad_outputs")
    for out in outs:
        check_root(out, "grad()")
    gos = [default_grad(o, "grad()") if g is None else g for o, g in zip(outs, gos)]
    nodes: list[Node] = []
    for i, x in enumerate(ins):
        if not x.requires_grad:
            raise ArgumentError(f"grad(): input {i} does not require grad")
        nodes.append(leaf_node(x) if x.is_leaf else x._node)
    found = run_backward(outs, gos, retain_graph=create_graph if retain_graph is None
                         else retain_graph, create_graph=create_graph, capture=nodes)
    grads = tuple(found.get(id(n)) for n in nodes)
    for i, g in enumerate(grads):
        if g is None and not allow_unused:
            raise ArgumentError(f"grad(): input {i} was not used to compute the outputs "
                                "(pass allow_unused=True to get None for it)")
    return grads


def checkpoint(fn: Callable[..., Tensor], *args: Any) -> Tensor:
    """``fn(*args)`` without keeping its intermediate activations: the backward pass runs
    `fn` again to recompute them. Trades compute for memory on deep models."""
    tensors = tuple(a for a in args if _is_tensor(a))
    needs_graph = is_grad_enabled() and any(t.requires_grad for t in tensors)
    if not needs_graph:
        return fn(*args)
    with no_grad():
        out = fn(*args)
    if not _is_tensor(out):
        raise ArgumentError("checkpoint: the function must return a single tensor")
    if out.device.is_autodiff and out.dtype.is_floating_point:
        record(out, "checkpoint", tensors, {"fn": fn, "args": args})
    return out


def recompute_grads(g: Tensor, inputs: tuple[Tensor, ...],
                    ctx: dict[str, Any]) -> tuple[Tensor | None, ...]:
    """The backward rule of `checkpoint`: run the function again with gradients on and
    differentiate its output. For a first-order backward it runs on detached inputs; when
    the backward is itself recorded (create_graph) it runs on the recorded inputs, so the
    result stays connected to them and second derivatives are right."""
    create = is_grad_enabled()  # the outer backward runs with grad on only for create_graph
    if create:
        fresh = list(inputs)
    else:
        fresh = [t.detach().requires_grad_() if t.requires_grad else t.detach() for t in inputs]
    replacements = iter(fresh)  # the tensors of args, in order, are the recorded inputs
    args = tuple(next(replacements) if _is_tensor(a) else a for a in ctx["args"])
    with enable_grad():
        out = ctx["fn"](*args)
    wanted = [f for f, t in zip(fresh, inputs) if t.requires_grad]
    found = iter(grad(out, wanted, g, create_graph=create, allow_unused=True) if wanted else ())
    return tuple(next(found) if t.requires_grad else None for t in inputs)


def _is_tensor(value: Any) -> bool:
    from .._tensor import Tensor

    return isinstance(value, Tensor)

