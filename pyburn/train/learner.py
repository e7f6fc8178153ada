"""`Learner`: the training loop, with metrics, logs, checkpoints and exact resumption.

Exactness is the design's centre: a run killed at any moment and resumed with
``fit(..., resume=True)`` ends with the same weights, bit for bit, as a run never stopped.
Every checkpoint therefore holds everything that decides what comes next, taken between two
batches: the model, the optimizer, the scheduler, the random generator (dropout), the
loader's cursor (its epoch and position: the shuffled order follows from them), gradients
accumulated towards an update not yet made, the metric accumulators, the best value, the
early-stopping count and the log's length. Resuming puts all of that back and re-executes
the batches after the checkpoint, which then give the same numbers again.
"""

from __future__ import annotations

import copy
import math
import os
import platform
import signal
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from .. import __version__
from .._tensor import Tensor
from ..amp import GradScaler
from ..data.collate import to_device
from ..devices import Device, default_device
from ..devices import device as as_device
from ..errors import ArgumentError
from ..optim.clip import clip_grad_norm_
from ..precision import autocast
from ..tape import enable_grad, no_grad
from .batches import (
    batches_from,
    call_model,
    count_items,
    detach,
    has_cursor,
    loader_length,
    split_batch,
    start_epoch,
)
from .checkpoints import CheckpointManager
from .control import Control, TrainingAborted
from .interrupt import StopSignals
from .metrics import Loss, Metric, StepOutput
from .monitor import EarlyStopping, Monitor
from .render import Progress, Renderer, TerminalRenderer
from .replica import Replica
from .runlog import RunLog, event_record

#: what `Learner(precision=...)` takes
PRECISIONS = ("float32", "float16")


def _positive_int(name: str, value: Any, allow_none: bool = False) -> Any:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{name} must be a positive int{' or None' if allow_none else ''}, "
                            f"got {value!r}")
    return value


def _training_device(model: Any, device: Any) -> Device:
    """The autodiff form of `device`, or of the device the model's parameters are on."""
    if device is None:
        params = list(model.parameters()) if callable(getattr(model, "parameters", None)) else []
        base = params[0].device if params else default_device()
    else:
        base = as_device(device)
    return base if base.is_autodiff else base.autodiff()


class Learner:
    """Trains `model` with `optimizer` on the loss ``loss_fn(model(inputs), targets)``.

    - `scheduler` (optional) is stepped after each epoch, or after each optimizer update
      with ``scheduler_interval="step"``;
    - `metrics`: `pyburn.train.metrics` objects measured on training and validation
      batches; the loss is always measured;
    - `device`: where to train; the model is moved there (``model.to``) in its autodiff
      form. Default: the device of the model's parameters;
    - `run_dir`: the run's folder: checkpoints (``checkpoints/``), ``events.jsonl`` and
      ``run.json``. Without it nothing is written and ``resume=True`` is refused;
    - `checkpoint_every`: also checkpoint after every that many batches (None: only at the
      end of each epoch); `keep_last` step checkpoints are kept;
    - `best_metric` ("valid/accuracy"; `best_mode` "max"/"min", by default from the metric):
      keep the best epoch's checkpoint as ``checkpoints/best.ckpt``;
    - `early_stopping`: an `EarlyStopping`;
    - `grad_clip`: clip the gradients' total 2-norm to this before each update;
    - `accumulate`: update once per that many batches, on the mean of their gradients (an
      epoch's last, partial group is applied at its end);
    - `log_every`: compute and log the training metrics every that many batches (the
      only reads from the device in the loop);
    - `renderer`: what shows progress; default `TerminalRenderer`, ``Renderer()`` for none;
    - `control`: a `Control` through which another thread pauses, resumes, checkpoints,
      stops or aborts the run between two steps (the Learner's own when None:
      ``learner.control``);
    - `dashboard`: "tui" opens the terminal dashboard around each `fit` (textual,
      ``pip install 'pyburn[tui]'``; plain lines where stdout is not a terminal or textual
      is missing). Its keys steer the run through `control`;
    - `precision`: "float32", or "float16" for mixed precision: the forward pass and the
      loss run under ``pyburn.autocast(device)`` (matmul and convolutions in float16, the
      parameters float32) and a ``pyburn.amp.GradScaler`` scales the loss, unscales the
      gradients (before `grad_clip`) and skips the updates whose gradients overflowed; its
      state is in the checkpoints (docs/precision.md);
    - `strategy`: how `fit` spreads the run over several processes, e.g.
      ``pyburn.distributed.Ray(num_workers=2)`` (data-parallel training on Ray; see its
      documentation for what runs where). None: this process trains alone.

    >>> import pyburn, pyburn.nn.functional as F
    >>> from pyburn.data import DataLoader, TensorDataset
    >>> from pyburn.optim import SGD
    >>> from pyburn.train import Learner, Renderer
    >>> dev = pyburn.device("flex").autodiff()
    >>> class Scale:                    # any object with PyTorch's Module API will do
    ...     def __init__(self):
    ...         self.w = pyburn.zeros(1, device=dev, requires_grad=True)
    ...     def parameters(self):
    ...         return [self.w]
    ...     def __call__(self, x):
    ...         return x * self.w
    >>> x = pyburn.linspace(-1, 1, 32, device="flex")
    >>> loader = DataLoader(TensorDataset(x, 3 * x), batch_size=8)
    >>> model = Scale()
    >>> learner = Learner(model, SGD(model.parameters(), lr=0.5), F.mse_loss,
    ...                   renderer=Renderer())
    >>> history = learner.fit(loader, epochs=20)
    >>> round(model.w.item(), 3), len(history)
    (3.0, 20)
    """

    def __init__(self, model: Any, optimizer: Any, loss_fn: Any, scheduler: Any = None,
                 metrics: Sequence[Metric] = (), device: Any = None,
                 run_dir: str | os.PathLike[str] | None = None, keep_last: int | None = 3,
                 checkpoint_every: int | None = None, best_metric: str | None = None,
                 best_mode: str | None = None, early_stopping: EarlyStopping | None = None,
                 grad_clip: float | None = None, accumulate: int = 1,
                 scheduler_interval: str = "epoch", log_every: int = 50,
                 renderer: Renderer | None = None, control: Control | None = None,
                 dashboard: str | None = None, precision: str = "float32",
                 strategy: Any = None):
        if not getattr(optimizer, "param_groups", None):
            raise ArgumentError(f"Learner needs an optimizer with param_groups, got "
                                f"{type(optimizer).__name__}")
        if not callable(loss_fn):
            raise ArgumentError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        if scheduler_interval not in ("epoch", "step"):
            raise ArgumentError(f"scheduler_interval is 'epoch' or 'step', got "
                                f"{scheduler_interval!r}")
        if grad_clip is not None and not (isinstance(grad_clip, (int, float)) and grad_clip > 0):
            raise ArgumentError(f"grad_clip must be a positive number or None, got {grad_clip!r}")
        if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
            raise ArgumentError(f"early_stopping takes an EarlyStopping, got "
                                f"{type(early_stopping).__name__}")
        for metric in metrics:
            if not isinstance(metric, Metric):
                raise ArgumentError(f"metrics are pyburn.train.metrics.Metric objects, got "
                                    f"{type(metric).__name__}")
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.scheduler = scheduler
        self.scheduler_interval = scheduler_interval
        self.grad_clip = grad_clip
        self.accumulate = _positive_int("accumulate", accumulate)
        self.log_every = _positive_int("log_every", log_every)
        self.checkpoint_every = _positive_int("checkpoint_every", checkpoint_every, True)
        self.renderer = TerminalRenderer() if renderer is None else renderer
        if control is not None and not isinstance(control, Control):
            raise ArgumentError(f"control takes a pyburn.train.Control, got "
                                f"{type(control).__name__}")
        #: how another thread steers the run (pause, checkpoint, stop, abort)
        self.control = Control() if control is None else control
        if dashboard not in (None, "tui"):
            raise ArgumentError(f"dashboard is 'tui' or None, got {dashboard!r}")
        self.dashboard = dashboard
        if precision not in PRECISIONS:
            raise ArgumentError(f"precision is one of {', '.join(PRECISIONS)}, got "
                                f"{precision!r}")
        self.precision = precision
        #: the loss scaler of mixed precision (passes everything through in float32)
        self.scaler = GradScaler(enabled=precision == "float16")
        if strategy is not None and not callable(getattr(strategy, "fit", None)):
            raise ArgumentError(f"strategy takes an object with a fit method, such as "
                                f"pyburn.distributed.Ray, got {type(strategy).__name__}")
        self.strategy = strategy
        #: the process group this Learner trains in (one process unless a strategy runs it)
        self.replica = Replica()
        self.device = _training_device(model, device)
        if callable(getattr(model, "to", None)):
            model.to(self.device)
        # the optimizer's parameters: the ones whose gradients matter
        self._params: list[Tensor] = [p for group in optimizer.param_groups
                                      for p in group["params"]]

        every = list(metrics) if any(m.name == "loss" for m in metrics) else [Loss(), *metrics]
        #: the metrics measured while training, and fresh copies for evaluation
        self.train_metrics = [m for m in every if "train" in m.splits]
        self.valid_metrics = [copy.deepcopy(m) for m in every if "valid" in m.splits]
        self.best = None if best_metric is None else Monitor(best_metric, best_mode)
        self.early_stopping = early_stopping
        for monitor in self._monitors():
            monitor.resolve(every)

        self.run_dir = None if run_dir is None else os.fspath(run_dir)
        self.checkpoints = (None if self.run_dir is None else
                            CheckpointManager(os.path.join(self.run_dir, "checkpoints"),
                                              keep_last))
        self.runlog = None if self.run_dir is None else RunLog(self.run_dir)

        #: epochs completed, batches done and optimizer updates made, over the whole run
        self.epoch = 0
        self.step = 0
        self.updates = 0
        #: one dict per completed epoch: {"epoch": n, "train/loss": ..., "valid/loss": ...}
        self.history: list[dict[str, Any]] = []
        #: whether early stopping ended the run, and whether a signal stopped the last fit
        self.stopped_early = False
        self.interrupted = False
        self._pending = 0  # backward passes since the last update

    def __getstate__(self) -> dict[str, Any]:
        """A Learner pickles (a strategy ships it to its workers) without its live parts:
        the control, the renderer, the run log's open file, the strategy and the replica."""
        state = dict(self.__dict__)
        for live in ("control", "renderer", "runlog", "strategy", "replica"):
            del state[live]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled Learner gets a fresh `Control`, a silent `Renderer`, a run log on
        the same run_dir, no strategy and the one-process replica."""
        self.__dict__.update(state)
        self.control, self.renderer = Control(), Renderer()
        self.runlog = None if self.run_dir is None else RunLog(self.run_dir)
        self.strategy, self.replica = None, Replica()

    def no_sync(self) -> AbstractContextManager[Any]:
        """A context in which ``backward()`` keeps gradients local instead of all-reducing
        them over the workers of a distributed run (gradient accumulation: `accumulate`
        uses it for every batch of a group but the last); nothing changes in one process."""
        return self.replica.no_sync()

    def _monitors(self) -> list[Monitor]:
        found = [] if self.best is None else [self.best]
        if self.early_stopping is not None:
            found.append(self.early_stopping.monitor)
        return found

    @property
    def best_checkpoint(self) -> str | None:
        """The path of the best epoch's checkpoint, once there is one."""
        if self.checkpoints is None or not os.path.exists(self.checkpoints.best_path):
            return None
        return self.checkpoints.best_path

    # ---- fit -------------------------------------------------------------------------------
    def fit(self, train_loader: Iterable[Any], valid_loader: Iterable[Any] | None = None,
            epochs: int = 1, resume: bool = False) -> list[dict[str, Any]]:
        """Train until `epochs` epochs are complete (counting those of earlier calls and of
        the run resumed), early stopping says stop, or SIGINT/SIGTERM or `control` asks
        for a stop; returns the history (one dict of metric values per epoch).

        With `resume`, the newest checkpoint in the run folder is loaded first (when there
        is none, training starts from scratch). A signal or ``control.stop()`` stops
        training after the current batch, writes a checkpoint and sets `interrupted`; a
        second signal raises KeyboardInterrupt at once, ``control.abort()`` raises
        `TrainingAborted` at the next step boundary, with no checkpoint.

        With a `strategy`, the strategy runs the training (``strategy.fit(self, ...)``)
        and leaves this Learner as the run left it.
        """
        def run() -> list[dict[str, Any]]:
            if self.strategy is not None:
                return self.strategy.fit(self, train_loader, valid_loader, epochs, resume)
            return self._fit(train_loader, valid_loader, epochs, resume)

        if self.dashboard == "tui":
            from .dashboard.live import fit_in_dashboard  # import time: textual, when asked

            return fit_in_dashboard(self, run, self.run_dir or type(self.model).__name__)
        return run()

    def _fit(self, train_loader: Iterable[Any], valid_loader: Iterable[Any] | None,
             epochs: int, resume: bool) -> list[dict[str, Any]]:
        _positive_int("epochs", epochs)
        for monitor in self._monitors():
            if monitor.split == "valid" and valid_loader is None:
                raise ArgumentError(f"{monitor.key!r} is measured on validation data: pass "
                                    "valid_loader to fit()")
        self.interrupted = False
        self.control.reset()
        resumed_from, position = None, 0
        if resume:
            if self.checkpoints is None:
                raise ArgumentError("resume=True needs the Learner's run_dir")
            found = self.checkpoints.load_latest(self.device)
            if found is not None:
                resumed_from = found[0]
                position = self._restore(found[1], train_loader)
        elif self.step == 0 and self.checkpoints is not None and self.checkpoints.steps():
            raise ArgumentError(f"{self.run_dir} already holds the checkpoints of a run: pass "
                                "resume=True to continue it, or choose another run_dir")
        if self.runlog is not None:
            self.runlog.write_config(self._config(train_loader, epochs, resumed_from))
        self._status("started", epochs=epochs, resumed_from=resumed_from)
        self.renderer.start(epochs, self.epoch + 1, resumed_from)
        try:
            with StopSignals() as stop:
                while self.epoch < epochs and not self.stopped_early:
                    if position == 0:
                        start_epoch(train_loader, self.epoch)
                        for metric in self.train_metrics:
                            metric.reset()
                    started = time.perf_counter()
                    position = self._train_epoch(train_loader, epochs, position, stop)
                    if stop.requested or self.control.stopping:
                        self._interrupted(position, train_loader, stop)
                        break
                    self._end_epoch(train_loader, valid_loader, epochs, started)
                    position = 0
                    nan = self._nan(self.history[-1].get("train/loss"))
                    if self._obey(0, train_loader, stop, nan):
                        self._interrupted(0, None, stop)
                        break
            if not self.interrupted:
                self._status("ended")
        except TrainingAborted:
            raise
        except BaseException as error:  # the record says how the run ended
            self._status("failed", error=f"{type(error).__name__}: {error}")
            raise
        finally:
            if self.runlog is not None:
                self.runlog.close()
            self.renderer.end()
        return self.history

    def _train_epoch(self, loader: Iterable[Any], epochs: int, position: int,
                     stop: StopSignals) -> int:
        """Train on the rest of the epoch from batch `position`; returns the position
        reached (early when a stop was requested)."""
        self._set_training(True)
        batches = loader_length(loader)
        started = time.perf_counter()
        session_batches = session_items = 0
        shown: dict[str, str] = {}
        for batch in batches_from(loader, position):
            items = self._train_step(batch)
            self.step += 1
            position += 1
            session_batches += 1
            session_items += items
            logged = position % self.log_every == 0 and position != batches
            nan = False
            if logged:
                values = self._compute(self.train_metrics)
                self._log("train", values, position, batches, end=False)
                shown = self._shown(self.train_metrics, values)
                nan = self._nan(values.get("loss"))
            self.renderer.progress(Progress(
                self.epoch + 1, epochs, position, batches, session_batches, session_items,
                time.perf_counter() - started, shown, logged, self.step))
            leave = self._obey(position, loader, stop, nan)
            if leave or (self.checkpoint_every and self.step % self.checkpoint_every == 0):
                self._save(position, loader)
            if leave:
                break
        return position

    def _nan(self, loss: Any) -> bool:
        """Whether a loss value that is not finite pauses the run (`control.pause_on_nan`);
        it asks for the pause."""
        if not self.control.pause_on_nan or not isinstance(loss, (int, float)) or \
                math.isfinite(loss):
            return False
        self.control.pause()
        return True

    def _obey(self, position: int, loader: Any, stop: StopSignals, nan: bool) -> bool:
        """Carry out, between two steps, what `control` asks: a checkpoint, an abort
        (raises `TrainingAborted`), a pause (waiting here until a resume, a stop or a
        signal; `nan`: the loss asked for it). True where the loop must leave: a stop was
        asked for, or a signal came."""
        control = self.control
        paused = False
        while True:
            if control.take_checkpoint():
                self._save(position, loader)
                path = None if self.checkpoints is None else self.checkpoints.latest()
                self._status("checkpoint", path=path)
                self.renderer.message(f"checkpoint at step {self.step}: {path}" if path else
                                      "no checkpoint written: the Learner has no run_dir")
            if control.aborting:
                self._status("aborted")
                self.renderer.message(f"aborted at step {self.step}, with no checkpoint")
                raise TrainingAborted(f"training aborted at step {self.step}; the last "
                                      "checkpoint is where fit(..., resume=True) goes on from")
            if control.stopping or stop.requested:
                return True
            if not control.paused:
                break
            if not paused:
                paused = True
                reason = "nan" if nan else "asked"
                self._status("paused", reason=reason)
                self.renderer.message(
                    f"paused at step {self.step}: the loss is not finite; resume or stop"
                    if nan else f"paused at step {self.step}")
            control.wait()
        if paused:
            self._status("resumed")
            self.renderer.message(f"resumed at step {self.step}")
        return False

    def _train_step(self, batch: Any) -> int:
        """Forward, backward, and an update when `accumulate` batches are in; returns the
        batch's number of items."""
        inputs, targets = split_batch(to_device(batch, self.device))
        with enable_grad():
            with autocast(self.device, enabled=self.scaler.is_enabled()):
                outputs = call_model(self.model, inputs)
                loss = self.loss_fn(outputs, targets)
            if not isinstance(loss, Tensor) or loss.numel() != 1:
                raise ArgumentError("loss_fn must return a one-element tensor, got "
                                    + (f"shape {loss.shape}" if isinstance(loss, Tensor)
                                       else type(loss).__name__))
            # a distributed run combines the gradients once per update, in its last pass
            with (self.no_sync() if self._pending + 1 < self.accumulate else nullcontext()):
                self.scaler.scale(loss).backward()
        items = count_items(targets)
        # measured before the update, so that the learning rate shown is the one this batch
        # is trained with
        self._measure(self.train_metrics, outputs, targets, loss, items, "train")
        self._pending += 1
        if self._pending == self.accumulate:
            self._update()
        return items

    def _update(self) -> None:
        """One optimizer update on the mean of the pending gradients."""
        self.replica.synchronize()
        if self._pending > 1:
            scale = 1.0 / self._pending
            with no_grad():
                for p in self._params:
                    if p.grad is not None:
                        p.grad = p.grad * scale
        if self.grad_clip is not None:
            self.scaler.unscale_(self.optimizer)
            clip_grad_norm_(self._params, self.grad_clip)
        self.scaler.step(self.optimizer)  # skipped where a scaled gradient overflowed
        self.scaler.update()
        self.optimizer.zero_grad()
        self._pending = 0
        self.updates += 1
        if self.scheduler is not None and self.scheduler_interval == "step":
            self.scheduler.step()

    def _end_epoch(self, train_loader: Any, valid_loader: Any, epochs: int,
                   started: float) -> None:
        """Apply a partial accumulation, step the scheduler, validate, log, keep the best,
        decide on early stopping, checkpoint."""
        if self._pending:
            self._update()
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            self.scheduler.step()
        batches = loader_length(train_loader)
        # in a distributed run, every rank takes rank 0's values: its decisions (best, early
        # stopping) are then the same everywhere
        train, valid = self.replica.share(lambda: (
            self._compute(self.train_metrics),
            None if valid_loader is None else self._evaluate(valid_loader, self.epoch)))
        self._log("train", train, batches, batches, end=True)
        results = {"train": self._shown(self.train_metrics, train)}
        record: dict[str, Any] = {"epoch": self.epoch + 1}
        record.update({f"train/{k}": v for k, v in train.items()})
        if valid is not None:
            self._log("valid", valid, None, None, end=True)
            results["valid"] = self._shown(self.valid_metrics, valid)
            record.update({f"valid/{k}": v for k, v in valid.items()})
        self.epoch += 1
        self.history.append(record)
        self.renderer.epoch_end(self.epoch, epochs, results, time.perf_counter() - started)
        improved = self.best is not None and self.best.improved(self.best.value_in(record),
                                                                self.epoch)
        if self.early_stopping is not None and self.early_stopping.update(record, self.epoch):
            self.stopped_early = True
            m = self.early_stopping.monitor
            self.renderer.message(f"early stopping: {m.key} has not improved for "
                                  f"{self.early_stopping.patience} epochs (best {m.best:.6g} "
                                  f"at epoch {m.best_epoch})")
        checkpoints = self._saving()
        if improved and checkpoints is not None:
            # the best file first: a kill between the two writes is repaired by re-running
            # the epoch from the previous step checkpoint, which rewrites both
            checkpoints.save_best(**self._parts(0, train_loader, self.runlog.sync()))
        self._save(0, train_loader)

    def _interrupted(self, position: int, loader: Any, stop: StopSignals) -> None:
        self.interrupted = True
        where = (f"after batch {position} of epoch {self.epoch + 1}" if loader is not None
                 else f"after epoch {self.epoch}")
        saved = (f"checkpoint {self.checkpoints.latest()}; fit(..., resume=True) goes on from "
                 "there" if self.checkpoints is not None else "nothing saved (no run_dir)")
        by = "request" if stop.received is None else signal.Signals(stop.received).name
        self._status("stopped", by=by)
        self.renderer.message(f"stopped by {by} {where}: {saved}")

    # ---- evaluation --------------------------------------------------------------------------
    def evaluate(self, loader: Iterable[Any]) -> dict[str, Any]:
        """The metrics over every batch of `loader`, with the model in eval mode and no
        gradients recorded: ``{"loss": ..., "accuracy": ...}``."""
        return self._evaluate(loader, getattr(loader, "epoch", 0))

    def _evaluate(self, loader: Iterable[Any], epoch: int) -> dict[str, Any]:
        # a loader with epochs restarts `epoch` in full: its order is then the same after a
        # resume as in a run never stopped
        start_epoch(loader, epoch)
        for metric in self.valid_metrics:
            metric.reset()
        was_training = getattr(self.model, "training", True)
        self._set_training(False)
        try:
            with no_grad():
                for batch in loader:
                    inputs, targets = split_batch(to_device(batch, self.device))
                    outputs = call_model(self.model, inputs)
                    loss = self.loss_fn(outputs, targets)
                    self._measure(self.valid_metrics, outputs, targets, loss,
                                  count_items(targets), "valid")
        finally:
            self._set_training(bool(was_training))
        return self._compute(self.valid_metrics)

    # ---- metrics and logs ----------------------------------------------------------------------
    def _measure(self, metrics: list[Metric], outputs: Any, targets: Any, loss: Tensor,
                 items: int, split: str) -> None:
        step = StepOutput(detach(outputs), detach(targets), loss.detach(), items, split,
                          self.optimizer if split == "train" else None)
        with no_grad():
            for metric in metrics:
                metric.update(step)

    @staticmethod
    def _compute(metrics: list[Metric]) -> dict[str, Any]:
        values = {}
        for metric in metrics:
            value = metric.compute()
            if value is not None:
                values[metric.name] = value
        return values

    @staticmethod
    def _shown(metrics: list[Metric], values: dict[str, Any]) -> dict[str, str]:
        """The scalar values as the renderer shows them."""
        return {m.name: m.format(values[m.name]) for m in metrics
                if isinstance(values.get(m.name), (int, float))}

    def _log(self, split: str, values: dict[str, Any], batch: int | None,
             batches: int | None, end: bool) -> None:
        self._record(event_record("metrics", split=split, epoch=self.epoch + 1, batch=batch,
                                  batches=batches, step=self.step, end=end, metrics=values))

    def _status(self, state: str, **fields: Any) -> None:
        """A "status" event (see `runlog`)."""
        self._record(event_record("status", state=state, step=self.step, epoch=self.epoch,
                                  **fields))

    def _record(self, record: dict[str, Any]) -> None:
        """An event into the run's record, and to the renderer."""
        if self.runlog is not None:
            self.runlog.append(record)
        self.renderer.event(record)

    def _set_training(self, mode: bool) -> None:
        train = getattr(self.model, "train", None)
        if callable(train):
            train(mode)

    # ---- checkpoints -----------------------------------------------------------------------
    def _parts(self, position: int, loader: Any, log_bytes: int) -> dict[str, Any]:
        """Everything a checkpoint holds, as `CheckpointManager.save` takes it."""
        state = {
            "position": position,
            "updates": self.updates,
            "pending": self._pending,
            # gradients summed towards an update not made yet (none right after one)
            "grads": [p.grad for p in self._params] if self._pending else None,
            "loader": loader.state_dict() if has_cursor(loader) else None,
            "metrics": [m.state_dict() for m in self.train_metrics],
            "best": None if self.best is None else self.best.state_dict(),
            "early_stopping": (None if self.early_stopping is None
                               else self.early_stopping.state_dict()),
            "stopped_early": self.stopped_early,
            "history": self.history,
            "log_bytes": log_bytes,
            "scaler": self.scaler.state_dict(),
        }
        return {"model": self.model, "optimizer": self.optimizer, "scheduler": self.scheduler,
                "epoch": self.epoch, "step": self.step, "extra": state}

    def _saving(self) -> CheckpointManager | None:
        """The checkpoints, where this process writes one now."""
        return self.checkpoints if self.replica.can_save(self._pending) else None

    def _save(self, position: int, loader: Any) -> None:
        checkpoints = self._saving()
        if checkpoints is None:
            return
        # the log is synced first: the checkpoint records how much of it is settled
        checkpoints.save(**self._parts(position, loader, self.runlog.sync()))

    def _restore(self, ckpt: Any, loader: Any) -> int:
        """Put the state of checkpoint `ckpt` back; returns the position in the epoch."""
        ckpt.restore(model=self.model, optimizer=self.optimizer, scheduler=self.scheduler)
        state = ckpt.extra
        self.epoch, self.step = ckpt.epoch, ckpt.step
        self.updates, self._pending = state["updates"], state["pending"]
        grads = state["grads"] or [None] * len(self._params)
        for p, grad in zip(self._params, grads):
            p.grad = None if grad is None else grad.to(p.device)
        for metric, saved in zip(self.train_metrics, state["metrics"]):
            metric.load_state_dict(saved)
        if state["loader"] is not None and has_cursor(loader):
            loader.load_state_dict(state["loader"])
        if self.best is not None and state["best"] is not None:
            self.best.load_state_dict(state["best"])
        if self.early_stopping is not None and state["early_stopping"] is not None:
            self.early_stopping.load_state_dict(state["early_stopping"])
        self.stopped_early = state["stopped_early"]
        self.history = list(state["history"])
        if state.get("scaler") and self.scaler.is_enabled():  # (float32 runs save none)
            self.scaler.load_state_dict(state["scaler"])
        if self.runlog is not None:  # a distributed run's other ranks write no log
            self.runlog.truncate(state["log_bytes"])
        return state["position"]

    def _config(self, loader: Any, epochs: int, resumed_from: str | None) -> dict[str, Any]:
        """What ``run.json`` records."""
        groups = [{k: v for k, v in g.items() if k != "params"}
                  for g in self.optimizer.param_groups]
        return {
            "pyburn": __version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "resumed_from": resumed_from,
            "device": self.device.name,
            "epochs": epochs,
            "batches_per_epoch": loader_length(loader),
            "batch_size": getattr(loader, "batch_size", None),
            "model": type(self.model).__name__,
            "parameters": sum(p.numel() for p in self._params),
            "optimizer": {"class": type(self.optimizer).__name__, "param_groups": groups},
            "scheduler": None if self.scheduler is None else type(self.scheduler).__name__,
            "scheduler_interval": self.scheduler_interval,
            "loss_fn": getattr(self.loss_fn, "__name__", type(self.loss_fn).__name__),
            "metrics": [repr(m) for m in self.train_metrics + self.valid_metrics],
            "accumulate": self.accumulate,
            "grad_clip": self.grad_clip,
            "log_every": self.log_every,
            "checkpoint_every": self.checkpoint_every,
            "keep_last": None if self.checkpoints is None else self.checkpoints.keep_last,
            "best_metric": None if self.best is None else [self.best.key, self.best.mode],
            "early_stopping": repr(self.early_stopping) if self.early_stopping else None,
            "precision": self.precision,
            "distributed": self.replica.config(),
        }
