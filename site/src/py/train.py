"""The train page's Python: an MLP trained on the MNIST subset the site ships, with Adam, in an
``async`` loop that hands control back to the browser between batches, so that `pause`,
`resume` and `stop` (separate calls from the page) take effect at once.

Progress goes to the page as the records a Learner writes to its run's ``events.jsonl``
(``pyburn.train.runlog``), each emitted as a "run-event" (``pyburn_web.emit``), so that the
page draws its chart from the same events as ``pyburn dash``: a "metrics" event after every
batch (split "train": the batch's loss and accuracy, samples per second) and after every
epoch (split "valid": the accuracy on the held-out images), and "status" events when
training starts, actually holds ("paused": the batch in flight is done), goes on
("resumed"), and ends ("ended", or "stopped" by request). `weights` gives the trained
weights as a safetensors file that ``pyburn.store.load`` reads on the desktop.
"""

import asyncio
import time

from pyburn_web import emit
from pyodide.http import pyfetch

import pyburn
from pyburn import store
from pyburn.data import DataLoader, TensorDataset
from pyburn.models import MnistMLP
from pyburn.nn import functional as F
from pyburn.optim import Adam
from pyburn.train.runlog import event_record

#: seconds between hand-overs to the browser while training runs
YIELD_EVERY = 0.05

_data = {}
_state = {"paused": False, "stopped": False, "model": None, "epochs": 0}


async def load(url):
    """Fetch the MNIST subset; returns how many training and held-out images it has."""
    _data.update(store.load(await (await pyfetch(url)).bytes(), device="flex"))
    return {"train": _data["train_labels"].shape[0], "test": _data["test_labels"].shape[0]}


def _images(split, device):
    """A split's images as float (N, 1, 28, 28) in [0, 1] and its labels, on `device`."""
    images = _data[f"{split}_images"].to(device)
    return (images.float() / 255).unsqueeze(1), _data[f"{split}_labels"].to(device)


def _record(event, **fields):
    """One event of the run's record, to the page."""
    emit("run-event", event_record(event, **fields))


def pause():
    """Hold training after the current batch."""
    _state["paused"] = True


def resume():
    """Go on after `pause`."""
    _state["paused"] = False


def stop():
    """End training after the current batch (the weights so far are kept)."""
    _state["stopped"] = True


async def _accuracy(model, images, labels):
    with pyburn.no_grad():
        model.eval()
        right = await (model(images).argmax(dim=1) == labels).sum().item_async()
        model.train()
    return right / labels.shape[0]


async def train(device, hidden=64, epochs=3, batch_size=64, lr=1e-3):
    """Train a fresh `MnistMLP` with `hidden` units on `device` ("wgpu", "wasm", "flex"); returns
    a summary when the epochs are done or `stop` was called."""
    _state.update(paused=False, stopped=False)
    trainer = pyburn.device(device).autodiff()  # the device's form that records gradients
    pyburn.manual_seed(0)
    model = _state["model"] = MnistMLP(hidden, device=trainer)
    _state["epochs"] = 0
    optimizer = Adam(model.parameters(), lr=lr)
    train_x, train_y = _images("train", trainer)
    test_x, test_y = _images("test", trainer)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=batch_size, shuffle=True,
                        seed=0)
    step, seen, busy = 0, 0, 0.0
    handed_over = time.perf_counter()
    _record("status", state="started", step=0, epoch=0, epochs=epochs, resumed_from=None)
    for epoch in range(1, epochs + 1):
        for batch, (images, labels) in enumerate(loader, 1):
            if _state["paused"]:  # the batch in flight when pause() came is done
                _record("status", state="paused", reason="asked", step=step, epoch=epoch - 1)
                while _state["paused"] and not _state["stopped"]:
                    await asyncio.sleep(0.05)
                _record("status", state="resumed", step=step, epoch=epoch - 1)
            if _state["stopped"]:
                break
            started = time.perf_counter()
            scores = model(images)
            loss = F.cross_entropy(scores, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            right = (scores.detach().argmax(dim=1) == labels).sum()
            loss_value, right_value = await loss.item_async(), await right.item_async()
            busy += time.perf_counter() - started
            step += 1
            seen += labels.shape[0]
            _record("metrics", split="train", epoch=epoch, batch=batch, batches=len(loader),
                    step=step, end=False,
                    metrics={"loss": loss_value, "accuracy": right_value / labels.shape[0],
                             "samples_per_s": seen / busy})
            if time.perf_counter() - handed_over > YIELD_EVERY:
                await asyncio.sleep(0)  # the browser handles pause/stop requests here
                handed_over = time.perf_counter()
        if _state["stopped"]:
            break
        _state["epochs"] = epoch
        _record("metrics", split="valid", epoch=epoch, batch=None, batches=None, step=step,
                end=True, metrics={"accuracy": await _accuracy(model, test_x, test_y)})
    if _state["stopped"]:
        _record("status", state="stopped", by="request", step=step, epoch=_state["epochs"])
    else:
        _record("status", state="ended", step=step, epoch=_state["epochs"])
    return {"steps": step, "epochs": _state["epochs"], "stopped": _state["stopped"],
            "samples_per_s": seen / busy if busy else 0.0}


async def weights():
    """The trained model's weights as the bytes of a safetensors file, with the model's
    configuration as metadata (``pyburn.models.load_mnist`` rebuilds it from them)."""
    model = _state["model"]
    # Read asynchronously onto flex: a synchronous GPU read needs JSPI, which not every
    # browser has.
    state = {name: pyburn.tensor(await t.to_bytes_async(), shape=t.shape, dtype=t.dtype,
                                 device="flex")
             for name, t in model.state_dict().items()}
    path = "/tmp/mnist-mlp.safetensors"
    store.save(state, path, metadata={**model.config(), "epochs": _state["epochs"],
                                      "trained": "in the browser, pyburn's train page"})
    with open(path, "rb") as file:
        return file.read()
