"""The autodiff graph: grad mode, and the nodes recorded by the tensor layer (the backward
walk over them is `pyburn.autodiff.api`'s).

Recording happens at the tensor layer's primitive calls, and only on an autodiff device
(``pyburn.device("cpu").autodiff()``), only while grad mode is on, and only when an input
requires grad: inference on an autodiff device keeps no bookkeeping. A node keeps snapshots of
its inputs (tensors that share their immutable handles), so rebinding a tensor in place later
(``t[k] = v``, an optimizer step) never changes a recorded value. Leaves that require grad own
an `AccumulateGrad` node; snapshots of a leaf share it, so gradients reach the leaf itself.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import ArgumentError, DTypeError

if TYPE_CHECKING:
    from ._tensor import Tensor

#: what a backward rule returns: one gradient per input of its node (None: nothing flows)
Grads = tuple["Tensor | None", ...]
#: a node's backward rule: (the output's gradient, the input snapshots, the saved arguments)
Rule = Callable[["Tensor", tuple["Tensor", ...], dict[str, Any]], Grads]

class _GradState(threading.local):
    """Grad mode of each thread; the class attribute is the default a new thread sees (a plain
    attribute read: `link` checks it on every recorded op)."""

    enabled = True


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations on autodiff devices are being recorded (per thread)."""
    return _state.enabled


def swap_grad_mode(enabled: bool) -> bool:
    """Set this thread's grad mode and return the one it replaces (the backward walk's save
    and restore, without a context object per pass)."""
    previous, _state.enabled = _state.enabled, enabled
    return previous


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


#: a leaf's post-accumulate-grad hook: called with the leaf once its ``.grad`` is complete
Hook = Callable[["Tensor"], None]
_hook_keys = itertools.count()


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: gradients arriving here go to ``leaf.grad``,
    after which the leaf's post-accumulate-grad hooks run (by registration order)."""

    __slots__ = ("leaf", "hooks")

    def __init__(self, leaf: Tensor):
        super().__init__("accumulate", (), (), {})
        self.leaf = weakref.ref(leaf)
        self.hooks: dict[int, Hook] | None = None  # made by the first hook: most leaves have none

    def __repr__(self) -> str:
        return "<accumulate grad>"


class RemovableHandle:
    """What registering a hook returns: ``handle.remove()`` unregisters the hook (a second
    call does nothing)."""

    __slots__ = ("_hooks", "_key")

    def __init__(self, hooks: dict[int, Hook], key: int):
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        """Unregister the hook."""
        self._hooks.pop(self._key, None)


def add_post_accumulate_hook(node: AccumulateGrad, hook: Hook) -> RemovableHandle:
    """Register `hook` on a leaf's node (``Tensor.register_post_accumulate_grad_hook``)."""
    if node.hooks is None:
        node.hooks = {}
    key = next(_hook_keys)
    node.hooks[key] = hook
    return RemovableHandle(node.hooks, key)


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
