"""`pyburn train mnist` (pyburn/models/mnist_job.py) on tiny fake MNIST files: it trains, reports,
saves weights with their configuration, and the saved file rebuilds the trained model."""

from __future__ import annotations

import json

import pytest

import pyburn
from pyburn import store
from pyburn.cli import main
from pyburn.models import load_mnist
from pyburn.models.mnist_job import train_mnist
from pyburn.train import Renderer

from .fake_mnist import write_fake_mnist


@pytest.fixture
def fake_data(tmp_path, monkeypatch):
    """$PYBURN_DATA pointing at a folder with tiny MNIST files (nothing is fetched)."""
    write_fake_mnist(tmp_path / "data")
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path / "data"))
    return tmp_path


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_train_saves_weights_that_rebuild_the_model(fake_data, kind):
    out = fake_data / "weights" / "mnist.safetensors"
    result = train_mnist(kind, "cpu", epochs=2, batch_size=32, out=str(out), renderer=Renderer())
    assert not result.interrupted and result.epochs == 2 and result.path == str(out)
    assert 0.0 <= result.accuracy <= 1.0 and result.loss > 0
    meta = store.load_metadata(str(out))
    assert meta["model"] == kind and meta["epochs"] == 2 and meta["test_images"] == 32
    assert meta["test_accuracy"] == result.accuracy
    assert meta["normalize"] == {"mean": 0.1307, "std": 0.3081}

    rebuilt = load_mnist(str(out), device="cpu")
    assert type(rebuilt) is type(result.model) and not rebuilt.training
    result.model.eval()
    x = pyburn.rand(4, 1, 28, 28, device="cpu")
    with pyburn.no_grad():
        assert rebuilt(x).tolist() == result.model(x.to(result.model.fc1.weight.device)).tolist()


def test_same_seed_same_weights(fake_data):
    runs = [train_mnist("mlp", "cpu", epochs=1, limit=40, out=None, renderer=Renderer())
            for _ in range(2)]
    first, second = (r.model.state_dict() for r in runs)
    assert all(first[k].tolist() == second[k].tolist() for k in first)
    assert runs[0].path is None


def test_cli_reports_accuracy_and_keeps_a_run_folder(fake_data, capsys):
    out, run_dir = fake_data / "m.safetensors", fake_data / "run"
    args = ["train", "mnist", "--model", "mlp", "--device", "cpu", "--epochs", "1",
            "--batch-size", "16", "--limit", "48", "--out", str(out), "--run-dir", str(run_dir)]
    assert main(args) == 0
    stdout = capsys.readouterr().out
    assert "training the MNIST MLP on cpu for 1 epoch" in stdout
    assert "test accuracy " in stdout and f"weights saved to {out}" in stdout
    assert store.load_metadata(str(out))["test_images"] == 32  # limit 48 > the 32 test images
    assert json.loads((run_dir / "run.json").read_text())["batches_per_epoch"] == 3
    assert (run_dir / "events.jsonl").exists()
    # a second run into the same folder must say how to go on; --resume finds the run done
    assert main(args) == 1
    assert "resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0
    assert "after 1 epoch," in capsys.readouterr().out


def test_cli_argument_errors(fake_data, capsys):
    assert main(["train", "mnist", "--resume"]) == 1
    assert "--resume needs --run-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "mnist", "--model", "resnet"])
    with pytest.raises(SystemExit):
        main(["train", "mnist", "--epochs", "0"])
