"""The training run that the resume tests start, kill and resume in a subprocess.

``python train_script.py RUN_DIR [--delay S] [--checkpoint-every N] [--accumulate N]``: trains
the MLP of `helpers` on cpu with dropout, a shuffled loader whose seed comes from the random
generator, Adam, a per-epoch StepLR and gradient accumulation, resuming from RUN_DIR's
checkpoints if there are any. When training completes, the weights go to
RUN_DIR/final.safetensors. `delay` slows every batch down so that a test can stop the run
mid-epoch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.data import DataLoader, TensorDataset  # noqa: E402
from pyburn.optim import Adam  # noqa: E402
from pyburn.optim.lr_scheduler import StepLR  # noqa: E402
from pyburn.train import Accuracy, Learner, LearningRate, TerminalRenderer  # noqa: E402
from tests.train.helpers import make_data, make_model  # noqa: E402

EPOCHS, BATCHES = 3, 25


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--checkpoint-every", type=int, default=4)
    parser.add_argument("--accumulate", type=int, default=3)
    args = parser.parse_args()

    cpu = pyburn.device("cpu")
    x, y = make_data(cpu, n=BATCHES * 8 + 40, seed=5)
    pyburn.manual_seed(11)
    model = make_model(cpu, dropout=0.3)
    optimizer = Adam(model.parameters(), lr=0.01)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    train = DataLoader(TensorDataset(x[:BATCHES * 8], y[:BATCHES * 8]), batch_size=8,
                       shuffle=True)
    valid = DataLoader(TensorDataset(x[BATCHES * 8:], y[BATCHES * 8:]), batch_size=16)

    def loss_fn(outputs, targets):
        time.sleep(args.delay)
        return F.cross_entropy(outputs, targets)

    learner = Learner(model, optimizer, loss_fn, scheduler=scheduler,
                      metrics=[Accuracy(), LearningRate()], run_dir=args.run_dir,
                      checkpoint_every=args.checkpoint_every, accumulate=args.accumulate,
                      log_every=5, best_metric="valid/accuracy",
                      renderer=TerminalRenderer(tty=False))
    learner.fit(train, valid, epochs=EPOCHS, resume=True)
    if learner.interrupted:
        print("INTERRUPTED", flush=True)
        return
    pyburn.store.save(model, os.path.join(args.run_dir, "final.safetensors"))
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
