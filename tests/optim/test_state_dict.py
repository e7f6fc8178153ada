"""Optimizer checkpoints: PyTorch's layout, snapshots, and a mid-run round trip that continues
exactly as the uninterrupted run."""

from __future__ import annotations

import pickle

import pytest

import pyburn
import pyburn.optim as optim

from .helpers import gradient_sequence, initial_values, pyburn_params

torch = pytest.importorskip("torch")

OPTIMIZERS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("AdamW", {"lr": 0.05}),
    ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr_decay": 0.1}),
    ("Adamax", {}),
    ("Lion", {"weight_decay": 0.1}),
]


def _train(opt, params, grads, dev):
    for grad in grads:
        for p, g in zip(params, grad):
            p.grad = pyburn.tensor(g, device=dev)
        opt.step()


def _groups(params):
    return [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}]


@pytest.mark.parametrize("name, options", OPTIMIZERS, ids=[c[0] for c in OPTIMIZERS])
def test_round_trip_mid_run_continues_identically(dev, name, options):
    grads = gradient_sequence(steps=20)
    straight = pyburn_params(initial_values(), dev)
    straight_opt = getattr(optim, name)(_groups(straight), **options)
    _train(straight_opt, straight, grads, dev)

    first = pyburn_params(initial_values(), dev)
    first_opt = getattr(optim, name)(_groups(first), **options)
    _train(first_opt, first, grads[:10], dev)
    saved = pickle.loads(pickle.dumps(first_opt.state_dict()))  # as a checkpoint file would
    resumed = pyburn_params([p.tolist() for p in first], dev)
    resumed_opt = getattr(optim, name)(_groups(resumed), lr=123.0)  # options come from the dict
    resumed_opt.load_state_dict(saved)
    _train(resumed_opt, resumed, grads[10:], dev)
    for p, q in zip(resumed, straight):
        if "fusion" in dev.caps:  # kernels fused differently may round a last bit differently
            assert p.reshape(-1).tolist() == pytest.approx(q.reshape(-1).tolist(), rel=1e-6,
                                                           abs=1e-7)
        else:
            assert p.tolist() == q.tolist()
    assert resumed_opt.param_groups[1]["lr"] == 0.02


@pytest.mark.parametrize("name, options", OPTIMIZERS[:-1], ids=[c[0] for c in OPTIMIZERS[:-1]])
def test_layout_matches_torch(dev, name, options):
    values, grads = initial_values(), gradient_sequence(steps=3)
    ours = pyburn_params(values, dev)
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    ours_opt = getattr(optim, name)(_groups(ours), **options)
    theirs_opt = getattr(torch.optim, name)(_groups(theirs), **options)
    _train(ours_opt, ours, grads, dev)
    for grad in grads:
        for q, g in zip(theirs, grad):
            q.grad = torch.tensor(g)
        theirs_opt.step()
    mine, reference = ours_opt.state_dict(), theirs_opt.state_dict()
    assert set(mine) == set(reference)
    assert set(mine["state"]) == set(reference["state"]) == {0, 1}
    for index, state in mine["state"].items():
        assert set(state) == set(reference["state"][index])
        if "step" in state:
            assert state["step"] == reference["state"][index]["step"].item()
    for group, ref in zip(mine["param_groups"], reference["param_groups"]):
        assert group["params"] == ref["params"]
        assert set(group) <= set(ref)
        assert all(group[k] == ref[k] for k in group)


def test_state_dict_is_a_snapshot(dev):
    (p,) = pyburn_params([[1.0, 2.0]], dev)
    opt = optim.Adam([p], lr=0.1)
    p.grad = pyburn.tensor([1.0, 1.0], device=dev)
    opt.step()
    saved = opt.state_dict()
    before = saved["state"][0]["exp_avg"].tolist()
    opt.step()
    assert saved["state"][0]["exp_avg"].tolist() == before
    assert saved["state"][0]["step"] == 1 and opt.state[p]["step"] == 2


def test_load_moves_state_to_the_parameters_device(dev):
    source = pyburn.device("flex").autodiff()
    (p,) = pyburn_params([[1.0, 2.0]], source)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = pyburn.tensor([1.0, 1.0], device=source)
    opt.step()
    (q,) = pyburn_params([[1.0, 2.0]], dev)
    other = optim.SGD([q], lr=0.1, momentum=0.9)
    other.load_state_dict(opt.state_dict())
    assert other.state[q]["momentum_buffer"].device is dev


@pytest.mark.parametrize("change, message", [
    (lambda sd: sd["param_groups"].pop(), "parameter groups"),
    (lambda sd: sd["param_groups"][0]["params"].pop(), "has 1 parameters"),
    (lambda sd: sd["state"].update({7: {}}), "parameter 7"),
    (lambda sd: sd.pop("state"), "'state' and 'param_groups'"),
])
def test_mismatched_state_dicts_are_rejected(dev, change, message):
    params = pyburn_params(initial_values(), dev)
    opt = optim.SGD(_groups(params), momentum=0.9)
    saved = opt.state_dict()
    change(saved)
    with pytest.raises(pyburn.ArgumentError, match=message):
        opt.load_state_dict(saved)
