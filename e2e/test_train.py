"""The train page: training lowers the loss, pause holds it and resume goes on, stop ends it,
and the downloaded weights load on the desktop and score there what they scored in the page."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import pyburn
from pyburn import store
from pyburn.models import MnistMLP, load_mnist

#: seconds a paused run is watched for batches that should not come
PAUSE_WATCH = 1.5
PROGRESS = "() => window.trainDemo.progress.length"


def steps(page: object) -> int:
    """Batches trained so far."""
    return page.evaluate(PROGRESS)


def wait_for_steps(page: object, count: int) -> None:
    page.wait_for_function(f"() => window.trainDemo.progress.length >= {count}",
                           timeout=120_000)


def held_out_accuracy(path: Path, site_dir: Path) -> float:
    """The accuracy of the weights at `path` on the site's held-out images, on the desktop."""
    model = load_mnist(path, device="cpu")
    subset = store.load(site_dir / "data" / "mnist-subset.safetensors", device="cpu")
    images = (subset["test_images"].float() / 255).unsqueeze(1)
    with pyburn.no_grad():
        right = (model(images).argmax(dim=1) == subset["test_labels"]).sum().item()
    return right / subset["test_labels"].shape[0]


@pytest.mark.parametrize("device", ["wgpu", "wasm"])
def test_training_learns_pauses_and_downloads(web: object, site_dir: Path, tmp_path: Path,
                                              screenshot: object, device: str) -> None:
    page = web.open(f"train.html?device={device}")
    page.fill("#epochs", "1")
    page.click("#start")
    wait_for_steps(page, 5)
    page.click("#pause")
    page.wait_for_function("() => window.trainDemo.state === 'paused'")
    held = steps(page)
    time.sleep(PAUSE_WATCH)
    assert steps(page) == held, "training went on while paused"
    assert page.inner_text("#pause") == "Resume"
    page.click("#pause")
    wait_for_steps(page, held + 3)
    page.wait_for_function("() => window.trainDemo.state === 'done'", timeout=300_000)

    progress = page.evaluate("() => window.trainDemo.progress")
    losses = [p["loss"] for p in progress]
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:5]) / 5, losses
    epochs = page.evaluate("() => window.trainDemo.epochs")
    assert len(epochs) == 1 and epochs[0]["test_accuracy"] > 0.7, epochs
    screenshot(page, f"train-{device}")

    with page.expect_download() as download:
        page.click("#download")
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    assert store.load_metadata(path)["model"] == "mlp"
    assert isinstance(load_mnist(path, device="cpu"), MnistMLP)
    # The same weights score the same on the desktop as they did in the page.
    assert held_out_accuracy(path, site_dir) == pytest.approx(epochs[0]["test_accuracy"],
                                                              abs=2e-3)


def test_training_on_flex_can_be_stopped(web: object, tmp_path: Path,
                                         screenshot: object) -> None:
    page = web.open("train.html?device=flex")
    page.select_option("#hidden", "32")
    page.click("#start")
    wait_for_steps(page, 6)
    page.click("#stop")
    page.wait_for_function("() => window.trainDemo.state === 'stopped'", timeout=60_000)
    progress = page.evaluate("() => window.trainDemo.progress")
    assert progress[-1]["loss"] < progress[0]["loss"]
    summary = page.evaluate("() => window.trainDemo.summary")
    assert summary["stopped"] and summary["steps"] == len(progress)
    screenshot(page, "train-flex-stopped")
    with page.expect_download() as download:
        page.click("#download")
    path = tmp_path / "stopped.safetensors"
    download.value.save_as(path)
    assert load_mnist(path, device="cpu").hidden == 32
