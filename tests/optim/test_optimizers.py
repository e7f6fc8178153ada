"""Every optimizer, with each option combination, against PyTorch: the same parameters and the
same gradients for 20 steps give the same trajectory and the same state, on every device."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.optim as optim

from .helpers import (
    STEPS,
    assert_close,
    gradient_sequence,
    initial_values,
    pyburn_params,
    torch_params,
)

torch = pytest.importorskip("torch")


class TorchLion(torch.optim.Optimizer):
    """The reference Lion, written from the paper's Algorithm 2 (PyTorch has none)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                g = -p.grad if group["maximize"] else p.grad
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                update = torch.sign(beta1 * m + (1 - beta1) * g)
                p.mul_(1 - group["lr"] * group["weight_decay"]).sub_(group["lr"] * update)
                m.copy_(beta2 * m + (1 - beta2) * g)


def torch_class(name: str):
    return TorchLion if name == "Lion" else getattr(torch.optim, name)


LR = {"SGD": 0.1, "Adam": 0.05, "AdamW": 0.05, "RMSprop": 0.01, "Adagrad": 0.1,
      "Adamax": 0.05, "Lion": 0.01}

CASES = [
    ("SGD", {}),
    ("SGD", {"momentum": 0.9}),
    ("SGD", {"momentum": 0.9, "dampening": 0.5}),
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"weight_decay": 0.1}),
    ("SGD", {"momentum": 0.5, "weight_decay": 0.1, "nesterov": True, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"amsgrad": True}),
    ("Adam", {"weight_decay": 0.1}),
    ("Adam", {"betas": (0.8, 0.99), "eps": 1e-6, "maximize": True}),
    ("Adam", {"weight_decay": 0.1, "amsgrad": True, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"betas": (0.5, 0.9), "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"centered": True}),
    ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"alpha": 0.9, "eps": 1e-6, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr_decay": 0.1}),
    ("Adagrad", {"initial_accumulator_value": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"eps": 1e-6, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"weight_decay": 0.1}),
    ("Adamax", {"betas": (0.8, 0.9), "eps": 1e-4, "maximize": True}),
    ("Lion", {}),
    ("Lion", {"weight_decay": 0.5}),
    ("Lion", {"betas": (0.95, 0.98), "maximize": True}),
]


def _case_id(case: tuple[str, dict]) -> str:
    name, options = case
    return name + "".join(f"-{k}={v}" for k, v in options.items())


def _run_both(dev, name, options, groups=None):
    """pyburn's and PyTorch's optimizer `name` over the same parameters (one group each, or
    one group per parameter with the options in `groups`), and a function that applies one
    step of gradients to both."""
    values = initial_values()
    ours, theirs = pyburn_params(values, dev), torch_params(torch, values)
    options = {"lr": LR[name], **options}
    if groups is None:
        ours_opt = getattr(optim, name)(ours, **options)
        theirs_opt = torch_class(name)(theirs, **options)
    else:
        ours_opt = getattr(optim, name)([{"params": [p], **g} for p, g in zip(ours, groups)],
                                        **options)
        theirs_opt = torch_class(name)([{"params": [p], **g} for p, g in zip(theirs, groups)],
                                       **options)

    def step(grad):
        for p, q, g in zip(ours, theirs, grad):
            p.grad = pyburn.tensor(g, device=dev)
            q.grad = torch.tensor(g, dtype=torch.float32)
        ours_opt.step()
        theirs_opt.step()

    return ours, theirs, ours_opt, theirs_opt, step


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_trajectory_matches_torch(dev, case):
    name, options = case
    ours, theirs, ours_opt, theirs_opt, step = _run_both(dev, name, options)
    for n, grad in enumerate(gradient_sequence()):
        step(grad)
        for i, (p, q) in enumerate(zip(ours, theirs)):
            assert_close(p, q, f"{name} {options}: parameter {i} after step {n + 1}")
    for p, q in zip(ours, theirs):
        ours_state, theirs_state = ours_opt.state[p], theirs_opt.state[q]
        assert set(ours_state) == set(theirs_state)
        for key, value in ours_state.items():
            if isinstance(value, pyburn.Tensor):
                assert_close(value, theirs_state[key], f"{name} state {key!r}")
            else:
                assert value == float(theirs_state[key]) == STEPS


@pytest.mark.parametrize("name, groups", [
    ("SGD", [{"lr": 0.3, "momentum": 0.9}, {"nesterov": True, "momentum": 0.5}]),
    ("Adam", [{"betas": (0.5, 0.6), "amsgrad": True}, {"lr": 0.01, "weight_decay": 0.2}]),
    ("RMSprop", [{"centered": True}, {"momentum": 0.9, "alpha": 0.5}]),
    ("Lion", [{"lr": 0.1}, {"weight_decay": 1.0}]),
])
def test_parameter_groups_keep_their_options(dev, name, groups):
    ours, theirs, ours_opt, _, step = _run_both(dev, name, {}, groups)
    for n, grad in enumerate(gradient_sequence()):
        step(grad)
        for i, (p, q) in enumerate(zip(ours, theirs)):
            assert_close(p, q, f"{name} group {i} after step {n + 1}")
    assert ours_opt.param_groups[1]["lr"] == groups[1].get("lr", LR[name])


def test_loss_and_backward_training_matches_torch(dev):
    """A linear model fitted by its own gradients (backward each step), in both frameworks."""
    x_data = [[0.1 * (i + j) - 0.3 for j in range(4)] for i in range(6)]
    y_data = [[(-1.0) ** i * 0.5, 0.2 * i, 1.0] for i in range(6)]
    values = [[[0.1 * (i - j) for j in range(3)] for i in range(4)], [0.0, 0.1, -0.1]]
    ours, theirs = pyburn_params(values, dev), torch_params(torch, values)
    x, y = pyburn.tensor(x_data, device=dev), pyburn.tensor(y_data, device=dev)
    tx, ty = torch.tensor(x_data), torch.tensor(y_data)
    ours_opt = optim.Adam(ours, lr=0.05, amsgrad=True)
    theirs_opt = torch.optim.Adam(theirs, lr=0.05, amsgrad=True)
    for step in range(STEPS):
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        (((x @ ours[0] + ours[1]) - y) ** 2).mean().backward()
        (((tx @ theirs[0] + theirs[1]) - ty) ** 2).mean().backward()
        ours_opt.step()
        theirs_opt.step()
        for p, q in zip(ours, theirs):
            assert_close(p, q, f"after step {step + 1}")


def test_step_updates_the_same_tensor_objects(dev):
    p = pyburn.tensor([1.0, 2.0], device=dev, requires_grad=True)
    held = [p]  # as a module holds its parameters
    opt = optim.SGD(held, lr=0.5)
    (p * p).sum().backward()
    opt.step()
    assert held[0] is p and p.is_leaf and p.requires_grad
    assert p.tolist() == [0.0, 0.0]
    (p * 3.0).sum().backward()  # the updated leaf still collects gradients
    assert p.grad.tolist() == [5.0, 7.0]  # 2p + 3 from the first backward, plus 3


def test_parameters_without_gradient_are_skipped(dev):
    a, b = pyburn_params([[1.0], [2.0]], dev)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = pyburn.tensor([1.0], device=dev)
    opt.step()
    assert b.tolist() == [2.0] and b not in opt.state
    assert a.tolist()[0] == pytest.approx(0.9)


def test_closure_runs_with_gradients_and_returns_the_loss(dev):
    (p,) = pyburn_params([[3.0]], dev)
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with pyburn.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and p.tolist() == [1.5]


def test_gradients_from_the_plain_device_are_accepted(dev):
    (p,) = pyburn_params([[1.0, 1.0]], dev)
    p.grad = pyburn.tensor([1.0, -1.0], device=dev.plain())
    optim.SGD([p], lr=1.0).step()
    assert p.tolist() == [0.0, 2.0] and p.device is dev


def test_zero_grad(dev):
    a, b = pyburn_params([[1.0, 2.0], [3.0]], dev)
    opt = optim.SGD([a, b])
    ((a * a).sum() + b.sum()).backward()
    grad = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad and a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [0.0]
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_zero_grad_cuts_a_recorded_gradient_loose(dev):
    (p,) = pyburn_params([[2.0]], dev)
    (p * p * p).sum().backward(create_graph=True)
    assert p.grad.requires_grad
    optim.SGD([p]).zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0] and not p.grad.requires_grad


def test_add_param_group_and_repr(dev):
    a, b = pyburn_params([[1.0], [2.0]], dev)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)


@pytest.mark.parametrize("make, message", [
    (lambda p, q: optim.SGD([]), "empty"),
    (lambda p, q: optim.SGD(p), "single tensor"),
    (lambda p, q: optim.SGD({p}), "ordered"),
    (lambda p, q: optim.SGD([p, p]), "twice"),
    (lambda p, q: optim.SGD([{"params": [p]}, {"params": [p]}]), "more than one"),
    (lambda p, q: optim.SGD([p * 2]), "non-leaf"),
    (lambda p, q: optim.SGD([q]), "floating-point"),
    (lambda p, q: optim.SGD([1.0]), "only optimize tensors"),
    (lambda p, q: optim.SGD([{"lr": 0.1}]), "'params'"),
    (lambda p, q: optim.SGD([p], lr=-1.0), "invalid lr"),
    (lambda p, q: optim.SGD([p], nesterov=True), "nesterov"),
    (lambda p, q: optim.Adam([p], betas=(0.9, 1.0)), "beta2"),
    (lambda p, q: optim.RMSprop([p], alpha=1.5), "alpha"),
])
def test_bad_arguments_are_rejected(dev, make, message):
    p = pyburn.tensor([1.0], device=dev, requires_grad=True)
    q = pyburn.tensor([1], device=dev)
    with pytest.raises(pyburn.ArgumentError, match=message):
        make(p, q)


def test_bad_gradients_are_rejected(dev):
    (p,) = pyburn_params([[1.0, 2.0]], dev)
    opt = optim.SGD([p])
    p.grad = pyburn.tensor([1.0], device=dev)
    with pytest.raises(pyburn.ShapeError, match=r"gradient of shape \(1,\)"):
        opt.step()
    other = [d for d in pyburn.available_devices() if d.backend is not dev.backend]
    if other:
        p.grad = pyburn.tensor([1.0, 1.0], device=other[0])
        with pytest.raises(pyburn.DeviceError, match="gradient on"):
            opt.step()
