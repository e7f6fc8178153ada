"""The autodiff graph: nodes recorded by the tensor layer, and the one backward walk.

Recording happens at the tensor layer's primitive calls, and only on an autodiff device
(``pyburn.device("cpu").autodiff()``), only while grad mode is on, and only when an input
requires grad: inference on an autodiff device keeps no bookkeeping. A node keeps snapshots of
its inputs (tensors that share their immutable handles), so rebinding a tensor in place later
(``t[k] = v``, an optimizer step) never changes a recorded value. Leaves that require grad own
an `AccumulateGrad` node; snapshots of a leaf share it, so gradients reach the leaf itself.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError, DTypeError, ShapeError

if TYPE_CHECKING:
    from .._tensor import Tensor

class _GradState(threading.local):
    """Grad mode of each thread; the class attribute is the default a new thread sees (a plain
    attribute read: `link` checks it on every recorded op)."""

    enabled = True


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations on autodiff devices are being recorded (per thread)."""
    return _state.enabled


class _GradMode:
    """Context manager and decorator that sets grad mode, restoring it afterwards."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(is_grad_enabled())
        _state.enabled = self.enabled

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._previous.pop()

    def __call__(self, fn: Callable) -> Callable:
        def run(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(self.enabled):
                return fn(*args, **kwargs)

        run.__name__, run.__doc__ = fn.__name__, fn.__doc__
        return run


def no_grad() -> _GradMode:
    """Record nothing inside: ``with pyburn.no_grad(): ...`` or ``@pyburn.no_grad()``."""
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """Record again inside a `no_grad` region."""
    return _GradMode(True)


class Node:
    """One recorded primitive: its backward rule, its inputs' snapshots and saved arguments."""

    __slots__ = ("rule", "parents", "inputs", "ctx", "__weakref__")

    def __init__(self, rule: str, parents: tuple[Node | None, ...], inputs: tuple[Tensor, ...],
                 ctx: dict[str, Any]):
        self.rule = rule
        self.parents = parents
        self.inputs: tuple[Tensor, ...] | None = inputs
        self.ctx = ctx

    def __repr__(self) -> str:
        return f"<{self.rule} backward>"


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: gradients arriving here go to ``leaf.grad``."""

    __slots__ = ("leaf",)

    def __init__(self, leaf: Tensor):
        super().__init__("accumulate", (), (), {})
        self.leaf = weakref.ref(leaf)

    def __repr__(self) -> str:
        return "<accumulate grad>"


def snapshot(t: Tensor) -> Tensor:
    """A tensor with t's handle, dtype, device and graph position, unaffected by later
    in-place rebinding of t."""
    s = object.__new__(type(t))  # a bare copy of the slots: no import of the tensor module
    s._h, s.shape, s.dtype, s.device = t._h, t.shape, t.dtype, t.device
    s.requires_grad, s.grad, s._node = t.requires_grad, None, t._node
    return s


def record(out: Tensor, rule: str, inputs: Sequence[Tensor], ctx: dict[str, Any]) -> None:
    """Make `out` the result of `rule` applied to `inputs`, if grad mode is on and some input
    requires grad (called by the tensor layer on autodiff devices, float results only)."""
    for t in inputs:
        if t.requires_grad:
            link(out, rule, inputs, ctx)
            return


def link(out: Tensor, rule: str, inputs: Sequence[Tensor], ctx: dict[str, Any]) -> None:
    """`record` for a caller that has seen an input that requires grad (the tensor layer's
    `result`): the same, without looking for one again."""
    if not _state.enabled or out.dtype.kind != "f":  # float results only
        return
    # list displays: this runs for every recorded op, and generators cost more
    out.requires_grad = True
    out._node = Node(rule, tuple([t._node if t.requires_grad else None for t in inputs]),
                     tuple([snapshot(t) for t in inputs]), ctx)


def leaf_node(t: Tensor) -> AccumulateGrad:
    """The AccumulateGrad node of leaf `t`, made on first use."""
    if t._node is None:
        t._node = AccumulateGrad(t)
    return t._node  # type: ignore[return-value]


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
    rules = _late().rules
    pending: dict[Node, Tensor] = {}  # the gradient summed so far at each node (by identity)
    for out, g in zip(outputs, grad_outputs):
        node = out._node
        pending[node] = pending[node] + g if node in pending else g
    wanted = set(capture) if capture is not None else None
    captured: dict[int, Tensor] = {}
    # the mode is set directly rather than with `enable_grad()` / `no_grad()`: the same
    # save and restore, without a context object per backward pass
    previous, _state.enabled = _state.enabled, bool(create_graph)
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
            grads = rules[node.rule](g, node.inputs, node.ctx)
            if not retain_graph:
                node.inputs, node.ctx = None, {}
            for parent, pg in zip(node.parents, grads):
                if parent is not None and pg is not None:
                    pending[parent] = pending[parent] + pg if parent in pending else pg
    finally:
        _state.enabled = previous
    return captured


class _Late:
    """Names from modules that import this one (the rule table needs the tensor ops, which
    need this module), bound by `_late` on first use: an import statement per backward
    pass costs a microsecond each."""

    rules: dict[str, Callable] = {}
    constant: Callable[..., Tensor]


def _late() -> type[_Late]:
    """`_Late`, its names bound."""
    if not _Late.rules:
        from ..math_ops import constant
        from .rules import RULES

        _Late.rules, _Late.constant = RULES, constant
    return _Late


def _accumulate(node: AccumulateGrad, g: Tensor, create_graph: bool) -> None:
    leaf = node.leaf()
    if leaf is None:
        return
    if not create_graph:
        g = g.detach()
    leaf.grad = g if leaf.grad is None else leaf.grad + g


def check_root(t: Tensor, what: str) -> None:
    """Raise a clear error if `t` cannot start a backward pass."""
    if not t.device.is_autodiff:
        raise ArgumentError(f"{what}: the tensor is on {t.device.name!r}, which records no "
                            f"graph; create tensors on pyburn.device({t.device.name!r})"
                            ".autodiff() to get gradients")
    if not t.dtype.is_floating_point:
        raise DTypeError(f"{what}: a {t.dtype.name} tensor has no gradient; only float results "
                         "are differentiable (comparisons, argmax, integer ops are not)")
    if not t.requires_grad:
        raise ArgumentError(f"{what}: this tensor does not require grad: none of the tensors it "
                            "was computed from requires grad, or it was computed under no_grad")


def default_grad(t: Tensor, what: str) -> Tensor:
    """The implicit gradient of a one-element output: ones."""
    if t.numel() != 1:
        raise ShapeError(f"{what} of a tensor of shape {t.shape} needs a gradient argument "
                         "(only one-element outputs get an implicit gradient of 1)")
    # the layer's shared one-element constant: `ones_like` would allocate (or upload) a new
    # handle per backward call, and handles are immutable, so one serves every call
    return _late().constant(1.0, t.dtype, t.shape, t.device)
