"""The backward pass and the functional autodiff API: the one walk over the recorded graph
(`run_backward`), ``Tensor.backward``, `grad` and gradient checkpointing. It sits above the
rule table (``rules.RULES``, written in tensor ops) and the ops, and installs ``backward`` as
a Tensor method: the tensor layer below it imports none of this."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._tensor import Tensor, install
from ..errors import ArgumentError, ShapeError
from ..ops.math_ops import constant
from ..precision import autocast_state, swap_autocast
from ..tape import (
    AccumulateGrad,
    Node,
    check_root,
    enable_grad,
    is_grad_enabled,
    leaf_node,
    no_grad,
    record,
    swap_grad_mode,
)
from .rules import RULES, Grads


def _topological(roots: Iterable[Node]) -> list[Node]:
    """Nodes reachable from `roots`, each after every node that consumes it (iterative DFS)."""
    order: list[Node] = []
    seen: set[Node] = set()  # nodes hash by identity
    stack: list[tuple[Node, bool]] = [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for p in node.parents:
            if p is not None and p not in seen:
                stack.append((p, False))
    order.reverse()
    return order


def run_backward(outputs: Sequence[Tensor], grad_outputs: Sequence[Tensor], *,
                 retain_graph: bool, create_graph: bool,
                 capture: Sequence[Node] | None = None) -> dict[int, Tensor]:
    """Propagate `grad_outputs` from `outputs` to every node they reach.

    Gradients arriving at AccumulateGrad nodes are added to their leaf's ``.grad`` unless
    `capture` is given, in which case the summed gradient arriving at each captured node is
    returned (by ``id(node)``) and no leaf is touched.
    """
    pending: dict[Node, Tensor] = {}  # the gradient summed so far at each node (by identity)
    for out, g in zip(outputs, grad_outputs):
        node = out._node
        pending[node] = pending[node] + g if node in pending else g
    wanted = set(capture) if capture is not None else None
    captured: dict[int, Tensor] = {}
    previous = swap_grad_mode(bool(create_graph))
    # gradients take their forward values' dtypes: no autocast while the rules run
    previous_autocast = swap_autocast({})
    try:
        for node in _topological(out._node for out in outputs):
            g = pending.pop(node, None)
            if g is None:
                continue
            if wanted is not None and node in wanted:
                captured[id(node)] = g
            if isinstance(node, AccumulateGrad):
                if wanted is None:
                    _accumulate(node, g, create_graph)
                continue
            if node.inputs is None:
                raise ArgumentError("backward through a graph that was already freed: pass "
                                    "retain_graph=True to the first backward() to run it twice")
            grads = _RULES[node.rule](g, node.inputs, node.ctx)
            if not retain_graph:
                node.inputs, node.ctx = None, {}
            for parent, pg in zip(node.parents, grads):
                if parent is not None and pg is not None:
                    pending[parent] = pending[parent] + pg if parent in pending else pg
    finally:
        swap_grad_mode(previous)
        swap_autocast(previous_autocast)
    return captured


def _accumulate(node: AccumulateGrad, g: Tensor, create_graph: bool) -> None:
    """Add `g`, the whole gradient this pass sends the leaf (the walk sums every path's
    before it gets here), to ``leaf.grad``; then run the leaf's post-accumulate hooks."""
    leaf = node.leaf()
    if leaf is None:
        return
    if not create_graph:
        g = g.detach()
    leaf.grad = g if leaf.grad is None else leaf.grad + g
    if node.hooks:
        for hook in list(node.hooks.values()):  # a hook may remove itself
            hook(leaf)




def default_grad(t: Tensor, what: str) -> Tensor:
    """The implicit gradient of a one-element output: ones."""
    if t.numel() != 1:
        raise ShapeError(f"{what} of a tensor of shape {t.shape} needs a gradient argument "
                         "(only one-element outputs get an implicit gradient of 1)")
    # the layer's shared one-element constant: `ones_like` would allocate (or upload) a new
    # handle per backward call, and handles are immutable, so one serves every call
    return constant(1.0, t.dtype, t.shape, t.device)


def backward(self: Tensor, gradient: Tensor | None = None, retain_graph: bool | None = None,
             create_graph: bool = False) -> None:
    """Add the gradient of this tensor to ``.grad`` of every leaf it depends on.

    `gradient` defaults to 1 for one-element tensors. The graph is freed afterwards unless
    `retain_graph`; `create_graph` records the backward pass itself, for higher-order
    derivatives.
    """
    check_root(self, "backward()")
    g = default_grad(self, "backward()") if gradient is None else gradient
    run_backward([self], [g], retain_graph=create_graph if retain_graph is None
                 else retain_graph, create_graph=create_graph)


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
        record(out, "checkpoint", tensors, {"fn": fn, "args": args,
                                             "autocast": autocast_state()})
    return out


def recompute_grads(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
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
    # under the forward pass's autocast, so that the values recomputed are the same
    outer_autocast = swap_autocast(ctx["autocast"])
    try:
        with enable_grad():
            out = ctx["fn"](*args)
    finally:
        swap_autocast(outer_autocast)
    wanted = [f for f, t in zip(fresh, inputs) if t.requires_grad]
    found = iter(grad(out, wanted, g, create_graph=create, allow_unused=True) if wanted else ())
    return tuple(next(found) if t.requires_grad else None for t in inputs)


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


#: every backward rule: the table's, and checkpoint's, which runs this walk again
_RULES = {**RULES, "checkpoint": recompute_grads}
install({"backward": backward})

