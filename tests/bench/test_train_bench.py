"""``pyburn bench train``: both sides do the same work. The smoke test of every benchmark at
tiny sizes is in test_bench.py; here the pyburn step and the PyTorch step are checked to
train the same model to the same weights, and the thread count to follow numpy's BLAS."""

from __future__ import annotations

import os

import pytest

from pyburn.bench import train
from pyburn.bench.inputs import Floats

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_pyburn_and_pytorch_steps_train_the_same_weights(kind):
    images, labels = Floats.random((8, 1, 28, 28), seed=1), train.labels_for(8)
    model, ours = train.pyburn_trainer(kind, images, labels)
    twin, theirs = train.torch_trainer(kind, images, labels, torch)
    for _ in range(3):
        ours()
        theirs()
    trained = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(np.array(p.tolist()), trained[name].detach().numpy(),
                                   rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("env, expected", [({"OPENBLAS_NUM_THREADS": "1"}, 1),
                                           ({"OMP_NUM_THREADS": "3"}, 3),
                                           ({"OPENBLAS_NUM_THREADS": "x"}, None)])
def test_threads_follow_numpys_blas(env, expected, monkeypatch):
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert train.blas_threads() == (expected or os.cpu_count() or 1)
