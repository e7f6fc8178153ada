"""Checkpoints round trip with duck-typed model, optimizer and scheduler objects (anything
with state_dict/load_state_dict), PyTorch-style state included."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn import store


class Model:
    """A module stand-in: parameters by name."""

    def __init__(self, device, seed: float = 0.0):
        self.params = {"fc1.weight": pyburn.full((3, 2), 1.0 + seed, device=device),
                       "fc1.bias": pyburn.full((3,), -0.5 + seed, device=device),
                       "bn.num_batches": pyburn.full((), 7, dtype="int32", device=device)}
        self.loaded = None

    def state_dict(self):
        return dict(self.params)

    def load_state_dict(self, state):
        self.loaded = state


class Optimizer:
    """A PyTorch-style Adam state: tensors and numbers per parameter index, and groups."""

    def __init__(self, device):
        self.state = {
            "state": {0: {"step": 3, "exp_avg": pyburn.full((3, 2), 0.25, device=device),
                          "exp_avg_sq": pyburn.full((3, 2), 0.125, device=device)},
                      1: {"step": pyburn.full((), 3.0, device=device),
                          "exp_avg": pyburn.full((3,), 0.5, device=device)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                              "weight_decay": 0, "amsgrad": False, "maximize": None,
                              "params": [0, 1]}]}
        self.loaded = None

    def state_dict(self):
        return self.state

    def load_state_dict(self, state):
        self.loaded = state


class Scheduler:
    """A ReduceLROnPlateau-like state: note best = inf."""

    def __init__(self):
        self.loaded = None

    def state_dict(self):
        return {"best": math.inf, "last_epoch": 5, "num_bad_epochs": 0, "mode": "min",
                "base_lrs": [0.1], "_last_lr": [0.05], "eps": -math.inf}

    def load_state_dict(self, state):
        self.loaded = state


def _values(tree):
    """`tree` with every tensor replaced by (dtype, shape, values): comparable with ==."""
    if isinstance(tree, pyburn.Tensor):
        return ("tensor", tree.dtype.name, tree.shape, tree.tolist())
    if isinstance(tree, dict):
        return {k: _values(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_values(v) for v in tree)
    return tree


def test_everything_round_trips(device, tmp_path):
    model, optimizer, scheduler = Model(device), Optimizer(device), Scheduler()
    pyburn.manual_seed(1234)
    pyburn.rand(5, device=device)
    path = tmp_path / "run.ckpt"
    store.save_checkpoint(path, model=model, optimizer=optimizer, scheduler=scheduler,
                          epoch=4, step=1200,
                          extra={"best_acc": 0.93, "ema": pyburn.ones(2, device=device)})
    expected_next = pyburn.rand(5, device=device).tolist()

    ckpt = store.load_checkpoint(path, device=device)
    assert (ckpt.epoch, ckpt.step) == (4, 1200)
    assert _values(ckpt.model) == _values(model.state_dict())
    assert _values(ckpt.optimizer) == _values(optimizer.state_dict())  # int keys, tuples
    assert list(ckpt.optimizer["state"]) == [0, 1]
    assert ckpt.optimizer["param_groups"][0]["betas"] == (0.9, 0.999)
    assert ckpt.scheduler == scheduler.state_dict()  # infinities included
    assert _values(ckpt.extra) == _values({"best_acc": 0.93, "ema": pyburn.ones(2)})
    assert all(t.device is device for t in ckpt.model.values())

    pyburn.manual_seed(99)  # move the generator elsewhere; restore puts it back
    fresh_model, fresh_opt, fresh_sched = Model(device, 5.0), Optimizer(device), Scheduler()
    ckpt.restore(model=fresh_model, optimizer=fresh_opt, scheduler=fresh_sched)
    assert fresh_model.loaded is ckpt.model and fresh_opt.loaded is ckpt.optimizer
    assert fresh_sched.loaded is ckpt.scheduler
    assert pyburn.rand(5, device=device).tolist() == expected_next


def test_tensor_names_in_the_file(tmp_path):
    path = tmp_path / "names.ckpt"
    store.save_checkpoint(path, model=Model("flex"), optimizer=Optimizer("flex"),
                          extra=[pyburn.ones(1, device="flex")])
    assert sorted(store.read_header(path).tensors) == [
        "extra.0", "model.bn.num_batches", "model.fc1.bias", "model.fc1.weight",
        "optim.state.0.exp_avg", "optim.state.0.exp_avg_sq", "optim.state.1.exp_avg",
        "optim.state.1.step"]
    weights = store.load(path, device="flex")  # a checkpoint is a plain weights file too
    assert weights["model.fc1.weight"].tolist() == [[1.0, 1.0]] * 3


def test_trees_that_look_like_markers_or_collide_stay_themselves(tmp_path):
    a, b = pyburn.ones(1, device="flex"), pyburn.zeros(1, device="flex")
    extra = {"__tensor__": "model.x", "k": {"a.b": a, "a": {"b": b}},
             "mixed": {1: "one", "1": "string one", (2, 3): [None, True]},
             "nan": math.nan, "tuple": (1, (2, "x"))}
    path = tmp_path / "tricky.ckpt"
    store.save_checkpoint(path, extra=extra, rng=False)
    got = store.load_checkpoint(path, device="flex").extra
    assert got["__tensor__"] == "model.x"
    assert got["k"]["a.b"].tolist() == [1.0] and got["k"]["a"]["b"].tolist() == [0.0]
    assert got["mixed"] == {1: "one", "1": "string one", (2, 3): [None, True]}
    assert math.isnan(got["nan"]) and got["tuple"] == (1, (2, "x"))


def test_parts_left_out_are_none(tmp_path):
    path = tmp_path / "min.ckpt"
    store.save_checkpoint(path, rng=False)
    ckpt = store.load_checkpoint(path, device="flex")
    assert ckpt == store.Checkpoint()
    with pytest.raises(pyburn.ArgumentError, match="no optimizer state"):
        ckpt.restore(optimizer=Optimizer("flex"))


def test_rng_can_be_left_alone_or_go_to_another_generator(tmp_path):
    gen = pyburn.Generator(5)
    gen.take(10)
    path = tmp_path / "gen.ckpt"
    store.save_checkpoint(path, rng=gen)
    ckpt = store.load_checkpoint(path, device="flex")
    assert ckpt.rng == {"seed": 5, "offset": 10}
    before = pyburn.random.default_generator.get_state()
    ckpt.restore(rng=False)
    assert pyburn.random.default_generator.get_state() == before
    other = pyburn.Generator(1)
    ckpt.restore(rng=other)
    assert other.get_state() == {"seed": 5, "offset": 10}


@pytest.mark.parametrize("kwargs, message", [
    ({"optimizer": object()}, "needs an object with state_dict"),
    ({"extra": {"f": object()}}, "extra.f is a object"),
    ({"epoch": 1.5}, "epoch must be an int"),
    ({"step": True}, "step must be an int"),
    ({"model": {"w": 3}}, "not a pyburn.Tensor"),
])
def test_bad_arguments_write_nothing(kwargs, message, tmp_path):
    with pytest.raises(pyburn.ArgumentError, match=message):
        store.save_checkpoint(tmp_path / "bad.ckpt", **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("record, message", [
    ('{"version": 2}', "layout version 2"),
    ("[1]", "not a JSON object"),
    ("{", "not valid JSON"),
    ('{"version": 1, "model": {"w": {"__tensor__": "nope"}}}', "tensor 'nope' that its file"),
    ('{"version": 1, "model": [1]}', "model state is not a dict"),
    ('{"version": 1, "epoch": "3"}', "epoch is '3', not an int"),
    ('{"version": 1, "rng": {"seed": 1}}', "random generator state"),
    ('{"version": 1, "extra": {"__float__": "big"}}', "__float__ holds 'big'"),
    ('{"version": 1, "extra": {"__float__": [1]}}', "__float__ holds \\[1\\]"),
    ('{"version": 1, "extra": {"__tuple__": 3}}', "__tuple__ holds int"),
    ('{"version": 1, "extra": {"__dict__": [[1]]}}', "pairs"),
    ('{"version": 1, "extra": {"__dict__": [[[1], 2]]}}', "cannot be a dict key"),
])
def test_corrupt_checkpoint_metadata(record, message):
    from .files import raw_file

    data = raw_file({"__metadata__": {"pyburn.checkpoint": record}})
    with pytest.raises(pyburn.FormatError, match=message):
        store.load_checkpoint(data, device="flex")


def test_resuming_real_training_continues_exactly(tmp_path):
    """With pyburn's own Adam and StepLR: train 3 steps, checkpoint, train 2 more; a fresh
    model and optimizer restored from the checkpoint then reach the same weights."""
    optim = pytest.importorskip("pyburn.optim")
    dev = pyburn.device("flex").autodiff()

    def make():
        params = {"w": pyburn.tensor([[1.0, -1.0], [0.5, 2.0]], device=dev, requires_grad=True),
                  "b": pyburn.tensor([0.1, 0.2], device=dev, requires_grad=True)}
        opt = optim.Adam(list(params.values()), lr=0.1)
        return params, opt, optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def train(params, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((params["w"] * params["w"]).sum() + (params["b"] ** 3).sum()).backward()
            opt.step()
            sched.step()

    class Weights:  # loads into existing parameters, as a module's load_state_dict does
        def __init__(self, params):
            self.params = params

        def load_state_dict(self, state):
            with pyburn.no_grad():
                for name, value in state.items():
                    self.params[name].copy_(value)

    params, opt, sched = make()
    train(params, opt, sched, 3)
    path = tmp_path / "resume.ckpt"
    store.save_checkpoint(path, model=params, optimizer=opt, scheduler=sched, epoch=3)
    train(params, opt, sched, 2)

    params2, opt2, sched2 = make()
    store.load_checkpoint(path, device=dev).restore(Weights(params2), opt2, sched2)
    train(params2, opt2, sched2, 2)
    assert {k: v.tolist() for k, v in params2.items()} == {k: v.tolist() for k, v in params.items()}
