"""`Learner` on every device: the same weights as a hand-written loop (and, with
precision="float16", as the mixed-precision loop), accumulation, clipping, schedules, exact
in-process resumption, checkpoint rotation and the best checkpoint, early stopping, batches
as dicts and plain lists, and argument errors."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.data import DataLoader, TensorDataset
from pyburn.optim import SGD, clip_grad_norm_
from pyburn.optim.lr_scheduler import StepLR
from pyburn.train import (
    Accuracy,
    EarlyStopping,
    Learner,
    LearningRate,
    Renderer,
    TerminalRenderer,
    read_metrics,
)

from .helpers import make_model, make_setup, weights

QUIET = Renderer()


def hand_loop(device, epochs, clip=None, scaler=None):
    """The loop a user would write by hand, with the same setup; with an enabled
    `pyburn.amp.GradScaler`, the mixed-precision loop of docs/precision.md."""
    model, optimizer, train, valid = make_setup(device)
    dev = device.autodiff()
    model.to(dev)
    scaler = scaler or pyburn.amp.GradScaler(enabled=False)  # passes everything through
    for _ in range(epochs):
        model.train()
        for x, y in train:
            with pyburn.autocast(dev, enabled=scaler.is_enabled()):
                loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
            scaler.scale(loss).backward()
            if clip is not None:
                scaler.unscale_(optimizer)
                clip_grad_norm_(model.parameters(), clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    return weights(model)


@pytest.mark.parametrize("clip", [None, 0.05])
def test_same_weights_as_a_hand_written_loop(device, clip):
    model, optimizer, train, valid = make_setup(device)
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], grad_clip=clip,
                      renderer=QUIET)
    learner.fit(train, valid, epochs=3)
    assert weights(model) == hand_loop(device, 3, clip)


@pytest.mark.parametrize("name", ["cpu", "wgpu"])
def test_float16_precision_is_the_autocast_loop_with_a_grad_scaler(name, tmp_path):
    """precision="float16": autocast around the forward pass and the loss, the loss scaled,
    the gradients unscaled before clipping, overflowing steps skipped, the scaler's state
    in the checkpoints; parameters stay float32 (tests/test_amp.py compares the accuracy of
    such a run with float32's)."""
    device = pyburn.device(name)
    model, optimizer, train, valid = make_setup(device)
    learner = Learner(model, optimizer, F.cross_entropy, grad_clip=1.0, precision="float16",
                      run_dir=tmp_path, renderer=QUIET)
    learner.fit(train, valid, epochs=2)
    reference = pyburn.amp.GradScaler(init_scale=2.0 ** 16)
    assert weights(model) == hand_loop(device, 2, 1.0, reference)
    assert learner.scaler.state_dict() == reference.state_dict()
    assert {p.dtype for p in model.parameters()} == {pyburn.float32}
    saved = learner.checkpoints.load_latest(device.autodiff())[1].extra["scaler"]
    assert saved == reference.state_dict()
    assert json.loads((tmp_path / "run.json").read_text())["precision"] == "float16"
    assert learner.history[-1]["train/loss"] < learner.history[0]["train/loss"]


def test_training_learns_and_history_matches_evaluate(device):
    model, optimizer, train, valid = make_setup(device, lr=0.05)
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], renderer=QUIET)
    history = learner.fit(train, valid, epochs=6)
    assert [h["epoch"] for h in history] == [1, 2, 3, 4, 5, 6]
    assert history[-1]["train/loss"] < history[0]["train/loss"]
    assert history[-1]["valid/accuracy"] > 0.6
    assert learner.evaluate(valid) == {"loss": history[-1]["valid/loss"],
                                       "accuracy": history[-1]["valid/accuracy"]}
    assert model.training  # evaluation puts the training mode back


def test_evaluate_against_numpy(device):
    model, optimizer, train, valid = make_setup(device)
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()], renderer=QUIET)
    result = learner.evaluate(valid)
    x, y = valid.dataset.tensors
    w1, b1, w2, b2 = (t.numpy().astype(np.float64) for t in model.state_dict().values())
    logits = np.maximum(x.numpy() @ w1.T + b1, 0) @ w2.T + b2  # eval mode: no dropout
    shifted = logits - logits.max(1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    labels = y.numpy()
    assert result["loss"] == pytest.approx(-log_probs[np.arange(len(labels)), labels].mean(),
                                           rel=1e-5)
    assert result["accuracy"] == (logits.argmax(1) == labels).mean()


def test_accumulation_matches_batches_that_many_times_larger(device):
    def run(batch_size, accumulate):
        pyburn.manual_seed(3)
        model = make_model(device, dropout=0.0)
        x = pyburn.randn(48, 6, device=device)
        y = pyburn.randint(0, 3, (48,), device=device)
        learner = Learner(model, SGD(model.parameters(), lr=0.1), F.cross_entropy,
                          accumulate=accumulate, renderer=QUIET)
        learner.fit(DataLoader(TensorDataset(x, y), batch_size=batch_size), epochs=2)
        return [t.numpy() for t in model.state_dict().values()], learner.updates

    # 48 items in batches of 8, in groups of 4: an update on batches 1-4 (32 items) and one
    # on the partial group 5-6 (16 items) at the epoch's end, like batches of 32 then 16
    small, small_updates = run(8, 4)
    large, large_updates = run(32, 1)
    assert small_updates == large_updates == 4
    for a, b in zip(small, large):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("interval, expected", [("epoch", [0.01, 0.005, 0.0025]),
                                                ("step", [0.01 * 0.5 ** 11,
                                                          0.01 * 0.5 ** 23,
                                                          0.01 * 0.5 ** 35])])
def test_scheduler_intervals(device, interval, expected):
    model, optimizer, train, _ = make_setup(device)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    learner = Learner(model, optimizer, F.cross_entropy, scheduler=scheduler,
                      scheduler_interval=interval, metrics=[LearningRate()], renderer=QUIET)
    history = learner.fit(train, epochs=3)
    # the lr logged for an epoch is the one its last batch used
    assert [h["train/lr"] for h in history] == pytest.approx(expected)


class Crash(Exception):
    pass


def crashing(after: int):
    """A loss function that raises at batch `after` (a process dying, in-process)."""
    calls = [0]

    def loss_fn(outputs, targets):
        calls[0] += 1
        if calls[0] == after:
            raise Crash
        return F.cross_entropy(outputs, targets)

    return loss_fn


# 12 training and 2 validation batches per epoch, so 14 calls of the loss function: a crash
# at call 13 comes during validation, after the checkpoint taken in the loop at batch 12/12
@pytest.mark.parametrize("accumulate, every, crash_at", [(1, 5, 17), (3, 5, 29), (1, 6, 13)])
def test_resume_after_a_crash_is_bit_exact(device, tmp_path, accumulate, every, crash_at):
    def learner(run_dir, loss_fn):
        model, optimizer, train, valid = make_setup(device)
        sched = StepLR(optimizer, step_size=1, gamma=0.8)
        return model, train, valid, Learner(
            model, optimizer, loss_fn, scheduler=sched, metrics=[Accuracy()], run_dir=run_dir,
            checkpoint_every=every, accumulate=accumulate, best_metric="valid/loss",
            renderer=QUIET)

    model, train, valid, whole = learner(tmp_path / "whole", F.cross_entropy)
    history = whole.fit(train, valid, epochs=3)
    expected = weights(model)

    _, train, valid, broken = learner(tmp_path / "resumed", crashing(crash_at))
    with pytest.raises(Crash):
        broken.fit(train, valid, epochs=3)
    model, train, valid, resumed = learner(tmp_path / "resumed", F.cross_entropy)
    assert resumed.fit(train, valid, epochs=3, resume=True) == history
    assert weights(model) == expected
    assert resumed.step == whole.step and resumed.updates == whole.updates


def test_resume_with_a_plain_list_of_batches(device, tmp_path):
    x, y = make_setup(device)[2].dataset.tensors
    batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 96, 8)]

    def learner(run_dir, loss_fn):
        pyburn.manual_seed(9)
        model = make_model(device)
        return model, Learner(model, SGD(model.parameters(), lr=0.1), loss_fn, run_dir=run_dir,
                              checkpoint_every=4, renderer=QUIET)

    model, whole = learner(tmp_path / "whole", F.cross_entropy)
    whole.fit(batches, epochs=2)
    expected = weights(model)
    _, broken = learner(tmp_path / "resumed", crashing(19))
    with pytest.raises(Crash):
        broken.fit(batches, epochs=2)
    # no cursor to restore: the batches already done in the epoch are skipped
    model, resumed = learner(tmp_path / "resumed", F.cross_entropy)
    resumed.fit(batches, epochs=2, resume=True)
    assert weights(model) == expected


def test_checkpoint_rotation_and_best(device, tmp_path):
    model, optimizer, train, valid = make_setup(device, lr=0.05)  # 12 batches per epoch
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()],
                      run_dir=tmp_path, checkpoint_every=5, keep_last=2,
                      best_metric="valid/accuracy", renderer=QUIET)
    history = learner.fit(train, valid, epochs=4)
    names = sorted(os.listdir(tmp_path / "checkpoints"))
    # checkpoints after batches 5, 10, 12 (epoch end), 15, ... 45, 48: the last two stay
    assert names == ["best.ckpt", "step-00000045.ckpt", "step-00000048.ckpt"]
    best = max(range(4), key=lambda i: (history[i]["valid/accuracy"], -i))
    ckpt = pyburn.store.load_checkpoint(learner.best_checkpoint, device=device)
    assert ckpt.epoch == best + 1 == learner.best.best_epoch
    assert ckpt.extra["history"] == history[:best + 1]
    assert learner.best.best == history[best]["valid/accuracy"]
    last = pyburn.store.load_checkpoint(tmp_path / "checkpoints" / "step-00000048.ckpt",
                                        device=device)
    assert {k: t.to_bytes() for k, t in last.model.items()} == weights(model)


def test_early_stopping_with_patience(device, tmp_path):
    model, optimizer, train, valid = make_setup(device, lr=0.0)  # nothing ever improves
    out = io.StringIO()
    learner = Learner(model, optimizer, F.cross_entropy, run_dir=tmp_path,
                      early_stopping=EarlyStopping("valid/loss", patience=2),
                      renderer=TerminalRenderer(out, tty=False))
    history = learner.fit(train, valid, epochs=10)
    assert len(history) == 3 and learner.stopped_early
    assert "early stopping: valid/loss has not improved for 2 epochs" in out.getvalue()
    assert learner.early_stopping.monitor.mode == "min"
    # a resumed run that had stopped early stays stopped
    model, optimizer, train, valid = make_setup(device, lr=0.0)
    again = Learner(model, optimizer, F.cross_entropy, run_dir=tmp_path,
                    early_stopping=EarlyStopping("valid/loss", patience=2), renderer=QUIET)
    assert again.fit(train, valid, epochs=10, resume=True) == history


def test_early_stopping_counts_min_delta():
    stop = EarlyStopping("valid/accuracy", patience=2, min_delta=0.01, mode="max")
    results = [stop.update({"valid/accuracy": v}, epoch)
               for epoch, v in enumerate([0.5, 0.505, 0.52, 0.525, 0.529], 1)]
    assert results == [False, False, False, False, True]
    assert stop.monitor.best == 0.52 and stop.monitor.best_epoch == 3


class Keywords(pyburn.nn.Module):
    """A model that takes its input by keyword, for dict batches."""

    def __init__(self, device):
        super().__init__()
        self.inner = make_model(device)

    def forward(self, features, scale):
        return self.inner(features * scale)


def test_dict_batches(device):
    x, y = make_setup(device)[2].dataset.tensors
    pyburn.manual_seed(0)
    model = make_model(device)
    learner = Learner(model, SGD(model.parameters(), lr=0.1), F.cross_entropy, renderer=QUIET)
    learner.fit([{"inputs": x[:8], "targets": y[:8]}], epochs=1)
    kw = Keywords(device)
    learner = Learner(kw, SGD(kw.parameters(), lr=0.1), F.cross_entropy, renderer=QUIET)
    history = learner.fit([{"features": x[:8], "scale": 2.0, "targets": y[:8]}], epochs=1)
    assert "train/loss" in history[0]


def test_tuple_inputs_are_spread(device):
    x, y = make_setup(device)[2].dataset.tensors
    kw = Keywords(device)
    learner = Learner(kw, SGD(kw.parameters(), lr=0.1), F.cross_entropy, renderer=QUIET)
    assert learner.evaluate([((x[:8], 0.5), y[:8])])["loss"] > 0


def test_argument_errors(device, tmp_path):
    model, optimizer, train, valid = make_setup(device)
    with pytest.raises(pyburn.ArgumentError, match="accumulate"):
        Learner(model, optimizer, F.cross_entropy, accumulate=0)
    with pytest.raises(pyburn.ArgumentError, match="precision is one of float32, float16"):
        Learner(model, optimizer, F.cross_entropy, precision="bfloat16")
    with pytest.raises(pyburn.ArgumentError, match="no metric gives 'valid/accuracy'"):
        Learner(model, optimizer, F.cross_entropy, best_metric="valid/accuracy")
    with pytest.raises(pyburn.ArgumentError, match="mode='min' or mode='max'"):
        from pyburn.train import ItemsPerSecond
        Learner(model, optimizer, F.cross_entropy, metrics=[ItemsPerSecond()],
                best_metric="train/items_per_second")
    learner = Learner(model, optimizer, F.cross_entropy, best_metric="valid/loss",
                      renderer=QUIET)
    with pytest.raises(pyburn.ArgumentError, match="pass valid_loader"):
        learner.fit(train)
    with pytest.raises(pyburn.ArgumentError, match="needs the Learner's run_dir"):
        learner.fit(train, valid, resume=True)
    with pytest.raises(pyburn.ArgumentError, match=r"a batch is \(inputs, targets\)"):
        learner.fit([(1, 2, 3)], valid)
    bad = Learner(model, optimizer, lambda out, y: out, renderer=QUIET)
    with pytest.raises(pyburn.ArgumentError, match="one-element tensor"):
        bad.fit(train)
    first = Learner(model, optimizer, F.cross_entropy, run_dir=tmp_path, renderer=QUIET)
    first.fit(train)
    again = Learner(model, optimizer, F.cross_entropy, run_dir=tmp_path, renderer=QUIET)
    with pytest.raises(pyburn.ArgumentError, match="already holds the checkpoints"):
        again.fit(train)
    first.fit(train, epochs=2)  # the same learner goes on with more epochs
    assert first.epoch == 2


def test_metrics_log_and_run_json(device, tmp_path):
    model, optimizer, train, valid = make_setup(device)  # 12 batches per epoch
    learner = Learner(model, optimizer, F.cross_entropy, metrics=[Accuracy()],
                      run_dir=tmp_path, log_every=5, renderer=QUIET)
    history = learner.fit(train, valid, epochs=2)
    records = read_metrics(tmp_path)
    assert [(r["split"], r["epoch"], r["batch"], r["step"], r["end"]) for r in records] == [
        ("train", 1, 5, 5, False), ("train", 1, 10, 10, False), ("train", 1, 12, 12, True),
        ("valid", 1, None, 12, True),
        ("train", 2, 5, 17, False), ("train", 2, 10, 22, False), ("train", 2, 12, 24, True),
        ("valid", 2, None, 24, True)]
    for h, (train_end, valid_end) in zip(history, [records[2:4], records[6:8]]):
        assert {f"train/{k}": v for k, v in train_end["metrics"].items()} | {
            f"valid/{k}": v for k, v in valid_end["metrics"].items()} | {"epoch": h["epoch"]} == h
    config = json.loads((tmp_path / "run.json").read_text())
    assert config["device"] == device.autodiff().name
    assert config["epochs"] == 2 and config["batches_per_epoch"] == 12
    assert config["optimizer"]["class"] == "Adam"
    assert config["parameters"] == 6 * 16 + 16 + 16 * 3 + 3
    assert config["resumed_from"] is None


def test_best_checkpoint_resumes_like_any_other(device, tmp_path):
    model, optimizer, train, valid = make_setup(device)
    learner = Learner(model, optimizer, F.cross_entropy, run_dir=tmp_path,
                      best_metric="valid/loss", renderer=QUIET)
    learner.fit(train, valid, epochs=2)
    ckpt = pyburn.store.load_checkpoint(learner.best_checkpoint, device=device)
    assert (ckpt.epoch, ckpt.step) == (learner.best.best_epoch, 12 * learner.best.best_epoch)
