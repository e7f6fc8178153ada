"""`Optimizer`: the base class every optimizer in `pyburn.optim` derives from (PyTorch's API).

An optimizer holds parameter groups (the parameters plus their options: lr, betas, ...) and a
per-parameter state (moment estimates, step counts). ``step()`` updates each parameter that has
a gradient *in place*, with ``assign_``: modules keep references to their parameter tensors, so
the Tensor objects must survive every step. A subclass only writes `update`, the rule for one
parameter; the walk over groups, gradient checks, `maximize`, `state_dict` and the rest are here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, DeviceError, ShapeError
from ..tape import enable_grad, no_grad

#: what the optimizers accept: tensors, or dicts with "params" (tensors) and per-group options
Params = Iterable[Tensor] | Iterable[dict[str, Any]]


def check_option(name: str, value: Any, ok: bool, expected: str) -> None:
    """Raise ArgumentError naming the option `name` and its `value` unless `ok`."""
    if not ok:
        raise ArgumentError(f"invalid {name} {value!r}: expected {expected}")


def check_betas(betas: Any) -> None:
    """Check a pair of decay rates, each in [0, 1)."""
    check_option("betas", betas, isinstance(betas, (tuple, list)) and len(betas) == 2,
                 "a pair (beta1, beta2)")
    for i, beta in enumerate(betas):
        check_option(f"beta{i + 1}", beta, 0.0 <= beta < 1.0, "a number in [0, 1)")


class Optimizer:
    """Base class of the optimizers: parameter groups, per-parameter state, ``step()``,
    ``zero_grad()``, ``state_dict()`` / ``load_state_dict()`` in PyTorch's layout.

    `params` is an iterable of parameters (floating-point leaf tensors, normally created with
    ``requires_grad=True`` on an autodiff device) or of dicts, each a parameter group with
    the key "params" and any options that override `defaults` for that group:

    >>> import pyburn
    >>> from pyburn.optim import SGD
    >>> dev = pyburn.device("flex").autodiff()
    >>> w = pyburn.tensor([1.0, -2.0], device=dev, requires_grad=True)
    >>> b = pyburn.tensor([0.5], device=dev, requires_grad=True)
    >>> opt = SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.25)
    >>> ((w * w).sum() + (b * b).sum()).backward()
    >>> opt.step()
    >>> w.tolist(), b.tolist()
    ([0.5, -1.0], [0.0])
    """

    def __init__(self, params: Params, defaults: dict[str, Any]):
        self.defaults = dict(defaults)
        #: per-parameter state, keyed by the parameter tensor (filled by the first step)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        #: the parameter groups: dicts with "params" (a list of tensors) and the options
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise ArgumentError("params should be an iterable of tensors or of dicts (parameter "
                                "groups), got a single tensor: pass [tensor]")
        groups = _ordered(params)
        if not groups:
            raise ArgumentError("the optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ---- groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing ones come from the
        defaults), e.g. to unfreeze layers while training goes on."""
        if not isinstance(param_group, dict):
            raise ArgumentError(f"a parameter group is a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ArgumentError("a parameter group needs the key 'params'")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else _ordered(params)
        for p in params:
            _check_parameter(p)
        seen: set[int] = set()
        for p in params:
            if id(p) in seen:
                raise ArgumentError("a parameter appears twice in one parameter group")
            seen.add(id(p))
        if any(id(p) in seen for group in self.param_groups for p in group["params"]):
            raise ArgumentError("some parameters appear in more than one parameter group")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self.param_groups.append(group)

    # ---- the update -----------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient (parameters whose ``.grad`` is None are
        skipped). `closure`, if given, re-evaluates the model and returns the loss; it runs
        first, with gradients on, and its result is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        state, update = self.state, self.update  # bound once: this loop runs every step
        with no_grad():
            for group in self.param_groups:
                maximize = group.get("maximize", False)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = _grad_of(p)
                    if maximize:
                        grad = -grad
                    p.assign_(update(p, grad, state[p], group))
        return loss

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """The new value of one parameter (subclasses implement this).

        `grad` is the parameter's gradient, already negated for ``maximize``; `state` is the
        parameter's state dict, to read and fill (empty on the first step); `group` holds the
        options. Runs under ``no_grad``; the caller writes the result into the parameter."""
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set ``.grad`` to None (the default, which frees memory), or
        fill the existing gradient tensors with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.requires_grad:  # a gradient recorded with create_graph: cut it loose
                    p.grad = p.grad.detach()
                with no_grad():
                    p.grad.zero_()

    # ---- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout: ``{"state": {index: {name: tensor or
        number}}, "param_groups": [{option: value, ..., "params": [index, ...]}]}``, where
        parameters are numbered in group order. The tensors are snapshots: later steps do
        not change a state dict already taken."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if self.state.get(p):
                    state[index[id(p)]] = {k: _snapshot(v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state taken with `state_dict` (from an optimizer of the same kind over
        parameters of the same shapes, in the same group order). State tensors move to each
        parameter's device and floating ones take its dtype."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
            raise ArgumentError("an optimizer state dict has the keys 'state' and 'param_groups'")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ArgumentError(f"the state dict has {len(saved_groups)} parameter groups, the "
                                f"optimizer {len(self.param_groups)}")
        params: dict[Any, Tensor] = {}
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ArgumentError(f"parameter group {i} has {len(group['params'])} parameters, "
                                    f"its saved state {len(saved['params'])}")
            params.update(zip(saved["params"], group["params"]))
        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, values in state_dict["state"].items():
            if key not in params:
                raise ArgumentError(f"the state dict has state for parameter {key!r}, which no "
                                    "parameter group lists")
            p = params[key]
            state[p] = {name: _restore(value, p) for name, value in values.items()}
        self.param_groups = [
            {**{k: v for k, v in saved.items() if k != "params"}, "params": group["params"]}
            for group, saved in zip(self.param_groups, saved_groups)]
        self.state = state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]!r}" for k in sorted(group) if k != "params")
        lines.append(")")
        return "\n".join(lines)


def _ordered(items: Iterable[Any]) -> list[Any]:
    if isinstance(items, (set, frozenset)):
        raise ArgumentError("parameters must come in an ordered collection (a list): the "
                            "order of a set changes between runs, and so would state_dict")
    return list(items)


def _check_parameter(p: Any) -> None:
    if not isinstance(p, Tensor):
        raise ArgumentError(f"an optimizer can only optimize tensors, got {type(p).__name__}")
    if not p.dtype.is_floating_point:
        raise ArgumentError(f"only floating-point tensors can be optimized, got a {p.dtype.name} "
                            f"tensor of shape {p.shape}")
    if not p.is_leaf:
        raise ArgumentError("cannot optimize a tensor computed from others (a non-leaf): "
                            "optimize the leaf tensors it was computed from")


def _grad_of(p: Tensor) -> Tensor:
    """p's gradient, checked against p, on p's device and in p's dtype, as a new Tensor
    object (so that state kept from it never aliases ``p.grad``, which the user may change
    in place)."""
    g = p.grad
    if not isinstance(g, Tensor):
        raise ArgumentError(f"the gradient of a parameter of shape {p.shape} is a "
                            f"{type(g).__name__}, not a tensor")
    if g.shape != p.shape:
        raise ShapeError(f"a parameter of shape {p.shape} has a gradient of shape {g.shape}")
    if g.device is not p.device:
        if g.device.backend is not p.device.backend:  # the autodiff and plain forms share one
            raise DeviceError(f"a parameter on {p.device.name} has a gradient on "
                              f"{g.device.name}")
        g = g.to(p.device)
    return g.detach().cast(p.dtype)


def _snapshot(value: Any) -> Any:
    return value.detach() if isinstance(value, Tensor) else value


def _restore(value: Any, param: Tensor) -> Any:
    if not isinstance(value, Tensor):
        return value
    value = value.detach().to(param.device)
    return value.cast(param.dtype) if value.dtype.is_floating_point else value
