"""`Learner(..., strategy=Ray(2))` on a local Ray: the parameters after training equal a
single-process run over the same global batches (float64, within 1e-10), with SGD with
momentum, with Adam, with gradient accumulation (no_sync), and after a worker killed
mid-epoch was restarted from the last checkpoint; only rank 0 writes the run's log."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn.distributed import Ray, WorkerFailed
from pyburn.optim import SGD, Adam
from pyburn.train import Learner, Renderer
from pyburn.train.runlog import read_events

from .helpers import DyingLoss, problem

WORKERS, BATCH, EPOCHS = 2, 4, 2


def optimizer(kind: str, model: pyburn.nn.Module) -> object:
    if kind == "adam":
        return Adam(model.parameters(), lr=0.01)
    return SGD(model.parameters(), lr=0.05, momentum=0.9)


def trained(kind: str, accumulate: int, strategy: Ray | None, loss=F.mse_loss,
            **options: object) -> tuple[list[np.ndarray], Learner]:
    """The parameters after `EPOCHS` epochs: with `strategy` on batches of `BATCH` per
    worker, without it on batches of ``WORKERS * BATCH`` (the same global batches)."""
    model, loader = problem(BATCH if strategy else WORKERS * BATCH)
    learner = Learner(model, optimizer(kind, model), loss, accumulate=accumulate,
                      renderer=Renderer(), strategy=strategy, **options)
    learner.fit(loader, epochs=EPOCHS)
    return [p.numpy() for p in model.parameters()], learner


def assert_same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10)


@pytest.mark.parametrize(("kind", "accumulate"), [("sgd", 1), ("adam", 1), ("sgd", 2)])
def test_two_workers_train_like_one_process_on_the_global_batch(cluster, kind, accumulate):
    want, alone = trained(kind, accumulate, None)
    strategy = Ray(WORKERS, timeout=60, start_timeout=60, seed=3)
    got, learner = trained(kind, accumulate, strategy)
    assert_same(got, want)
    assert not np.allclose(got[0], problem(BATCH)[0][0].weight.numpy())  # it did train
    assert (learner.epoch, learner.step, learner.updates) == (alone.epoch, alone.step,
                                                              alone.updates)
    assert [set(h) for h in learner.history] == [set(h) for h in alone.history]
    assert [s["rank"] for s in strategy.stats] == [0, 1]
    assert all(0 <= s["comm_seconds"] <= s["seconds"] for s in strategy.stats)


def test_a_killed_worker_is_replaced_and_the_run_finishes_from_its_checkpoint(cluster,
                                                                              tmp_path):
    want, _ = trained("sgd", 1, None)
    loss = DyingLoss(os.fspath(tmp_path / "died"), at=6)  # epoch 2, batch 2 of rank 1
    strategy = Ray(WORKERS, timeout=60, start_timeout=60, seed=3, max_restarts=1)
    got, learner = trained("sgd", 1, strategy, loss=loss, run_dir=tmp_path / "run",
                           checkpoint_every=2)
    assert (tmp_path / "died").exists()
    assert learner.epoch == EPOCHS and len(learner.history) == EPOCHS
    assert_same(got, want)
    # rank 0 alone wrote the log: each epoch's end once, though the run was restarted
    ends = [(e["split"], e["epoch"]) for e in read_events(tmp_path / "run")
            if e["event"] == "metrics" and e["end"]]
    assert ends == [("train", 1), ("train", 2)]


def test_a_dead_worker_without_a_run_dir_is_a_clear_error(cluster, tmp_path):
    loss = DyingLoss(os.fspath(tmp_path / "died"), at=2)
    with pytest.raises(WorkerFailed, match="worker 1 died.*no run_dir"):
        trained("sgd", 1, Ray(WORKERS, timeout=60, start_timeout=60), loss=loss)


def test_a_loader_that_cannot_be_resharded_is_refused():
    model, loader = problem(BATCH)
    learner = Learner(model, optimizer("sgd", model), F.mse_loss, renderer=Renderer(),
                      strategy=Ray(WORKERS))
    with pytest.raises(pyburn.PyburnError, match="must be a pyburn.data.DataLoader"):
        learner.fit(list(loader), epochs=1)
