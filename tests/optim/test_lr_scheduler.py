"""Every learning-rate schedule against PyTorch's, value for value over 60 steps, with two
parameter groups; resuming from state dicts mid-run; composition."""

from __future__ import annotations

import warnings

import pytest

import pyburn
import pyburn.optim as optim
from pyburn.optim import lr_scheduler as ours_module

torch = pytest.importorskip("torch")
theirs_module = torch.optim.lr_scheduler

STEPS = 60
LRS = (0.1, 0.01)


def _optimizers(kind: str = "SGD"):
    """A pyburn and a PyTorch optimizer of `kind`, each with two groups of one parameter."""
    options = {"momentum": 0.9} if kind == "SGD" else {}
    ours = getattr(optim, kind)([{"params": [pyburn.zeros(1, device="flex")], "lr": lr}
                                 for lr in LRS], **options)
    theirs = getattr(torch.optim, kind)([{"params": [torch.zeros(1)], "lr": lr} for lr in LRS],
                                        **options)
    return ours, theirs


# (id, optimizer kind, factory(module, optimizer) -> scheduler); module is pyburn's or torch's
CASES = [
    ("constant", "SGD", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4)),
    ("constant-default", "SGD", lambda m, o: m.ConstantLR(o)),
    ("linear-warmup", "SGD", lambda m, o: m.LinearLR(o, start_factor=0.1, total_iters=10)),
    ("linear-decay", "SGD",
     lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=30)),
    ("step", "SGD", lambda m, o: m.StepLR(o, step_size=7, gamma=0.5)),
    ("multistep", "SGD", lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3)),
    ("exponential", "SGD", lambda m, o: m.ExponentialLR(o, gamma=0.95)),
    ("cosine", "SGD", lambda m, o: m.CosineAnnealingLR(o, T_max=15, eta_min=0.001)),
    ("cosine-restarts", "SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7)),
    ("cosine-restarts-mult", "SGD",
     lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.001)),
    ("one-cycle", "SGD", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.1], total_steps=STEPS)),
    ("one-cycle-three-phase-linear", "SGD",
     lambda m, o: m.OneCycleLR(o, max_lr=0.5, epochs=6, steps_per_epoch=10, pct_start=0.25,
                               anneal_strategy="linear", three_phase=True,
                               base_momentum=[0.8, 0.7], max_momentum=0.9)),
    ("one-cycle-adam", "Adam", lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=STEPS)),
    ("one-cycle-no-momentum", "Adagrad",
     lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=STEPS + 5, cycle_momentum=False)),
    ("sequential", "SGD",
     lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
                                     m.CosineAnnealingLR(o, T_max=20)], milestones=[5])),
    ("sequential-three", "SGD",
     lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, factor=0.2, total_iters=10),
                                     m.ExponentialLR(o, gamma=0.9),
                                     m.StepLR(o, step_size=3, gamma=0.5)],
                                 milestones=[4, 20])),
    ("sequential-restarts", "SGD",
     lambda m, o: m.SequentialLR(o, [m.ExponentialLR(o, gamma=0.8),
                                     m.CosineAnnealingWarmRestarts(o, T_0=6)],
                                 milestones=[10])),
    ("chained", "SGD",
     lambda m, o: m.ChainedScheduler([m.LinearLR(o, start_factor=0.2, total_iters=8),
                                      m.ExponentialLR(o, gamma=0.97)])),
    ("chained-step-cosine", "SGD",
     lambda m, o: m.ChainedScheduler([m.StepLR(o, step_size=10, gamma=0.5),
                                      m.CosineAnnealingLR(o, T_max=25, eta_min=0.0)],
                                     optimizer=o)),
    ("sequential-of-chained", "SGD",
     lambda m, o: m.SequentialLR(o, [m.ChainedScheduler([m.LinearLR(o, total_iters=4),
                                                         m.MultiStepLR(o, [2, 6])]),
                                     m.ExponentialLR(o, gamma=0.9)], milestones=[12])),
]


def _momentum(opt) -> list[float]:
    return [group["betas"][0] if "betas" in group else group.get("momentum", 0.0)
            for group in opt.param_groups]


def _trace(opt, sched, steps: int) -> list[tuple]:
    """(last lr, group lrs, momenta) at creation and after each step (the optimizer steps
    first, as in training: with no gradients it changes nothing)."""
    out = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momentum(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momentum(opt)))
    return out


def _assert_traces_equal(got, expected):
    for step, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        for a, b in zip(mine, theirs):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-15), f"step {step}"


def _torch_trace(kind, factory, steps):
    _, theirs = _optimizers(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warnings about its deprecated paths
        return _trace(theirs, factory(theirs_module, theirs), steps)


@pytest.mark.parametrize("kind, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schedule_matches_torch(kind, factory):
    ours, _ = _optimizers(kind)
    _assert_traces_equal(_trace(ours, factory(ours_module, ours), STEPS),
                         _torch_trace(kind, factory, STEPS))


@pytest.mark.parametrize("kind, factory", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_resume_from_state_dicts(kind, factory):
    """Stop at step 25, rebuild the optimizer and the schedule from scratch, load both state
    dicts (schedule created first, as PyTorch advises), and continue."""
    ours, _ = _optimizers(kind)
    sched = factory(ours_module, ours)
    head = _trace(ours, sched, 25)
    opt_state, sched_state = ours.state_dict(), sched.state_dict()
    fresh, _ = _optimizers(kind)
    resumed = factory(ours_module, fresh)
    fresh.load_state_dict(opt_state)
    resumed.load_state_dict(sched_state)
    tail = _trace(fresh, resumed, STEPS - 25)
    _assert_traces_equal(head + tail[1:], _torch_trace(kind, factory, STEPS))


def test_state_dict_is_plain_data():
    ours, _ = _optimizers()
    sched = ours_module.SequentialLR(ours, [ours_module.LinearLR(ours, total_iters=3),
                                            ours_module.StepLR(ours, step_size=2)],
                                     milestones=[3])
    state = sched.state_dict()
    assert "optimizer" not in state and len(state["_schedulers"]) == 2
    assert state["last_epoch"] == 0 and state["_schedulers"][0]["last_epoch"] == 0


def test_noam_matches_its_formula_and_torch_lambda():
    d_model, warmup, factor = 512, 10, 2.0

    def rate(epoch):
        step = epoch + 1
        return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

    ours, _ = _optimizers()
    sched = ours_module.NoamLR(ours, d_model=d_model, warmup_steps=warmup, factor=factor)
    _, theirs = _optimizers()
    reference = theirs_module.LambdaLR(theirs, rate)
    _assert_traces_equal(_trace(ours, sched, STEPS), _trace(theirs, reference, STEPS))
    peak = max(range(STEPS), key=rate)
    assert peak == warmup - 1  # the largest rate is at step s = warmup (epoch warmup - 1)


def test_noam_in_a_chain_and_after_a_milestone():
    ours, _ = _optimizers()
    noam = ours_module.NoamLR(ours, d_model=64, warmup_steps=5)
    chained = ours_module.ChainedScheduler([noam, ours_module.ExponentialLR(ours, 0.9)])
    lrs = [lr for lr, _, _ in _trace(ours, chained, 20)]
    for epoch, (first, second) in enumerate(lrs):
        expected = 64**-0.5 * min((epoch + 1) ** -0.5, (epoch + 1) * 5**-1.5) * 0.9**epoch
        assert first == pytest.approx(LRS[0] * expected, rel=1e-12)
        assert second == pytest.approx(LRS[1] * expected, rel=1e-12)
    ours, _ = _optimizers()
    sequential = ours_module.SequentialLR(
        ours, [ours_module.ConstantLR(ours, factor=0.5, total_iters=3),
               ours_module.NoamLR(ours, d_model=64, warmup_steps=5)], milestones=[3])
    lrs = [lr[0] for lr, _, _ in _trace(ours, sequential, 8)]
    assert lrs[3:] == pytest.approx(
        [LRS[0] * 64**-0.5 * min(s**-0.5, s * 5**-1.5) for s in range(1, 7)], rel=1e-12)


def test_cosine_restarts_with_fractional_epochs_matches_torch():
    ours, theirs = _optimizers()
    mine = ours_module.CosineAnnealingWarmRestarts(ours, T_0=3, T_mult=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = theirs_module.CosineAnnealingWarmRestarts(theirs, T_0=3, T_mult=2)
    for epoch in [0.5, 1.25, 2.9, 3.0, 4.5, 8.99, 9.0, 20.3, 2.0]:
        mine.step(epoch)
        reference.step(epoch)
        assert mine.get_last_lr() == pytest.approx(reference.get_last_lr(), rel=1e-12)
        assert mine.last_epoch == reference.last_epoch


def test_resume_with_last_epoch_matches_torch():
    """The other way to resume (``last_epoch=k`` with "initial_lr" in the groups)."""
    def build(module, opt, last_epoch):
        return module.ExponentialLR(opt, gamma=0.9, last_epoch=last_epoch)

    ours, theirs = _optimizers()
    for group in ours.param_groups + theirs.param_groups:
        group["initial_lr"] = group["lr"] * 2
    mine = build(ours_module, ours, 9)
    reference = build(theirs_module, theirs, 9)
    _assert_traces_equal(_trace(ours, mine, 10), _trace(theirs, reference, 10))


@pytest.mark.parametrize("make, message", [
    (lambda m, o: m.StepLR(object(), step_size=2), "drives an Optimizer"),
    (lambda m, o: m.StepLR(o, step_size=0), "step_size"),
    (lambda m, o: m.ExponentialLR(o, gamma=0.9, last_epoch=3), "initial_lr"),
    (lambda m, o: m.LinearLR(o, start_factor=0.0), "start_factor"),
    (lambda m, o: m.ConstantLR(o, factor=2.0), "factor"),
    (lambda m, o: m.OneCycleLR(o, max_lr=1.0), "total_steps"),
    (lambda m, o: m.OneCycleLR(o, max_lr=[1.0], total_steps=5), "2 parameter groups"),
    (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]), "one milestone fewer"),
    (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)] * 3, milestones=[5, 3]), "increasing"),
    (lambda m, o: m.ChainedScheduler([]), "at least one"),
    (lambda m, o: m.ChainedScheduler([m.StepLR(o, 2), m.StepLR(_optimizers()[0], 2)]),
     "same one"),
])
def test_bad_arguments(make, message):
    ours, _ = _optimizers()
    with pytest.raises(pyburn.ArgumentError, match=message):
        make(ours_module, ours)


def test_one_cycle_errors():
    ours = optim.Adagrad([pyburn.zeros(1, device="flex")])
    with pytest.raises(pyburn.ArgumentError, match="momentum or betas"):
        ours_module.OneCycleLR(ours, max_lr=0.1, total_steps=10)
    sched = ours_module.OneCycleLR(ours, max_lr=0.1, total_steps=2, cycle_momentum=False)
    sched.step()
    sched.step()
    with pytest.raises(pyburn.ArgumentError, match="Tried to step 3 times"):
        sched.step()
