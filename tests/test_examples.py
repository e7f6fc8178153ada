"""Every script in examples/ runs as written: each one with its tiny-size flag (``--quick``),
in a fresh interpreter, from a scratch folder (they write artifacts/ there), reading tiny fake
MNIST files instead of fetching the real ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from models.fake_mnist import write_fake_mnist  # tests/models/ (pytest puts tests/ on the path)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: each example, and what its output shows when it worked
EXPECTED = {
    "tensor_tour.py": "=== device cpu ===",
    "mnist_mlp.py": "epoch 1: mean loss",
    "mnist_cnn.py": "predicted:",
    "regression.py": "mse against the noise-free function",
    "char_transformer.py": "step   10  loss",
    "cartpole_agents.py": "greedy mean return over 10 episodes",
    "sklearn_on_pyburn.py": "cpu   pca: Tensor on cpu",
}


def test_every_example_is_tested():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name, tmp_path):
    pytest.importorskip("numpy")  # the examples run on the default device: cpu here
    write_fake_mnist(tmp_path / "data", train=512, test=256)  # what --quick uses
    env = {**os.environ, "PYBURN_DATA": str(tmp_path / "data"), "PYBURN_DEVICE": "cpu"}
    flags = [] if name == "tensor_tour.py" else ["--quick"]
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *flags], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert EXPECTED[name] in result.stdout
    if name == "mnist_cnn.py":
        assert (tmp_path / "artifacts" / "mnist_cnn_example.safetensors").exists()
