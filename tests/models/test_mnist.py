"""The MNIST models: shapes, sizes, the normalisation, configurations, and outputs and
gradients equal to the same network written in PyTorch (`pyburn.bench.train.torch_twin`, the
benchmark's peer, so the benchmark is known to compare like with like); weights saved
quantized load as a float model."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn import quant, store
from pyburn.models import MEAN, STD, MnistCNN, MnistMLP, load_mnist, mnist_model, normalize

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from pyburn.bench.train import torch_twin  # noqa: E402  (needs numpy to load weights)

MODELS = {"mlp": MnistMLP, "cnn": MnistCNN}


def images(batch: int, device) -> pyburn.Tensor:
    """A batch of images with MNIST's value range: bytes / 255."""
    pyburn.manual_seed(5)
    return pyburn.randint(0, 256, (batch, 1, 28, 28), device=device).float() / 255.0


def test_normalize_is_the_training_set_standardisation():
    x = pyburn.tensor([0.0, 0.1307, 1.0], device="flex")
    expected = [(v - 0.1307) / 0.3081 for v in (0.0, 0.1307, 1.0)]
    assert normalize(x).tolist() == pytest.approx(expected, rel=1e-6)
    assert (MEAN, STD) == (0.1307, 0.3081)


@pytest.mark.parametrize("kind, params", [("mlp", 784 * 128 + 128 + 128 * 10 + 10),
                                          ("cnn", 8 * 9 + 16 + 16 * 8 * 9 + 32
                                           + 16 * 7 * 7 * 64 + 64 + 64 * 10 + 10)])
def test_sizes_and_output_shape(kind, params, device):
    model = MODELS[kind](device=device)
    assert model.num_params() == params
    assert model(images(3, device)).shape == (3, 10)


@pytest.mark.parametrize("kind", MODELS)
def test_wrong_input_shape_is_a_shape_error(kind):
    model = MODELS[kind](device="flex")
    with pytest.raises(pyburn.ShapeError, match=r"\(N, 1, 28, 28\).*\(2, 784\)"):
        model(pyburn.zeros(2, 784, device="flex"))


@pytest.mark.parametrize("config", [{"model": "mlp", "hidden": 32},
                                    {"model": "cnn", "channels": [4, 6], "hidden": 16},
                                    {"model": "cnn"}])
def test_config_round_trip(config):
    model = mnist_model(config, device="flex")
    again = mnist_model(model.config(), device="flex")
    assert again.config() == model.config()
    assert {k: v.shape for k, v in again.state_dict().items()} == \
        {k: v.shape for k, v in model.state_dict().items()}


@pytest.mark.parametrize("config", [{"model": "resnet"}, {"model": "mlp", "channels": [1, 2]},
                                    {}])
def test_bad_config_is_refused(config):
    with pytest.raises(pyburn.ArgumentError, match="not an MNIST model configuration"):
        mnist_model(config)


@pytest.mark.parametrize("kind", MODELS)
def test_outputs_and_gradients_match_pytorch(kind, device):
    pyburn.manual_seed(0)
    model = MODELS[kind](device=device)
    twin = torch_twin(model, torch)
    x = images(6, device)
    labels = [3, 1, 4, 1, 5, 9]
    tx = torch.from_numpy(np.array(x.tolist(), dtype=np.float32))

    # training mode: batch norm uses the batch's statistics and updates its running ones
    model = model.to(device.autodiff())
    loss = F.cross_entropy(model(x.to(model.fc1.weight.device)),
                           pyburn.tensor(labels, device=model.fc1.weight.device))
    loss.backward()
    t_loss = torch.nn.functional.cross_entropy(twin(tx), torch.tensor(labels))
    t_loss.backward()
    assert loss.item() == pytest.approx(t_loss.item(), rel=1e-4, abs=1e-5)
    t_params = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(np.array(p.grad.tolist()), t_params[name].grad.numpy(),
                                   rtol=1e-3, atol=1e-5, err_msg=name)
    t_state = twin.state_dict()
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(np.array(value.tolist()), t_state[name].numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)

    # eval mode: batch norm uses the running statistics
    model.eval()
    twin.eval()
    with pyburn.no_grad(), torch.no_grad():
        np.testing.assert_allclose(np.array(model(x.to(model.fc1.weight.device)).tolist()),
                                   twin(tx).numpy(), rtol=1e-4, atol=1e-5)


def test_a_model_saved_quantized_loads_as_float_through_load_mnist(tmp_path):
    pyburn.manual_seed(2)
    model = MnistCNN(device="cpu").eval()
    path = tmp_path / "int8.safetensors"
    quant.save(quant.quantize(model), path, metadata={**model.config(), "accuracy": 0.5})
    assert store.load_metadata(path)["accuracy"] == 0.5
    loaded = load_mnist(path, device="cpu")
    assert isinstance(loaded, MnistCNN) and not loaded.training
    assert not any(isinstance(m, quant.QuantizedLayer) for m in loaded.modules())
    x = pyburn.rand(2, 1, 28, 28, device="cpu")
    np.testing.assert_allclose(np.array(loaded(x).tolist()), np.array(model(x).tolist()),
                               rtol=1e-5, atol=1e-6)
