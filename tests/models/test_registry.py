"""The model zoo's registry: names and tasks, a model built and its weights loaded (strictly,
or partly when asked), its entry's metadata, misuse named, and `pyburn models`."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import models, store
from pyburn.cli import main
from pyburn.errors import ArgumentError
from pyburn.models import MnistMLP, ModelEntry, create, list_models, register


def test_the_zoo_names_its_models_by_task():
    names = models.list()
    assert names == sorted(names) and {"mnist-cnn", "mnist-mlp"} <= set(names)
    assert set(list_models("image-classification")) <= set(names)
    assert "mnist-cnn" not in list_models("text-generation")
    with pytest.raises(ArgumentError, match="no task 'poetry'"):
        list_models("poetry")


def test_create_loads_weights_strictly_and_carries_its_entry(tmp_path):
    pyburn.manual_seed(0)
    saved = MnistMLP(hidden=16, device="cpu")
    path = tmp_path / "mlp.safetensors"
    store.save(saved, path)
    model = create("mnist-mlp", weights=path, device="cpu", hidden=16)
    x = pyburn.rand(3, 1, 28, 28, device="cpu")
    assert model(x).tolist() == saved.eval()(x).tolist()
    assert not model.training
    assert model.entry.labels == tuple("0123456789")
    assert model.entry.preprocessing.crop == 28
    # a file lacking a weight loads nothing unless asked to load what it has
    partial = tmp_path / "partial.safetensors"
    store.save({k: v for k, v in saved.state_dict().items() if k != "fc2.bias"}, partial)
    with pytest.raises(ArgumentError, match="fc2.bias"):
        create("mnist-mlp", weights=partial, device="cpu", hidden=16)
    loose = create("mnist-mlp", weights=partial, device="cpu", hidden=16, strict=False)
    assert loose.fc1.weight.tolist() == saved.fc1.weight.tolist()


def test_misuse_is_named():
    with pytest.raises(ArgumentError, match="no model named 'resnet9000'.*mnist-cnn"):
        create("resnet9000")
    with pytest.raises(ArgumentError, match="registered already"):
        register(ModelEntry("mnist-mlp", MnistMLP, "image-classification", "again"))
    with pytest.raises(ArgumentError, match="task 'dreaming'"):
        register(ModelEntry("dreamer", MnistMLP, "dreaming", "no such task"))


def test_the_command_lists_the_models(capsys):
    assert main(["models", "--task", "image-classification"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("mnist-cnn ") and "pyburn" in line for line in lines)
    assert len(lines) == len(list_models("image-classification"))
