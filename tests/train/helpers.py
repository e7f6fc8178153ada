"""A small classification task and model for the training tests, the same on every device."""

from __future__ import annotations

import pyburn
from pyburn import nn
from pyburn.data import DataLoader, TensorDataset
from pyburn.optim import Adam

FEATURES, CLASSES = 6, 3


def make_data(device: pyburn.Device, n: int = 96, seed: int = 0):
    """(x, y): `n` points in 6 dims, labelled by the argmax of a fixed linear map."""
    pyburn.manual_seed(seed)
    x = pyburn.randn(n, FEATURES, device=device)
    w = pyburn.randn(FEATURES, CLASSES, device=device)
    return x, (x @ w).argmax(dim=1)


def make_model(device: pyburn.Device, dropout: float = 0.2) -> nn.Module:
    """An MLP 6-16-3 with dropout (so that resuming must restore the random generator)."""
    return nn.Sequential(nn.Linear(FEATURES, 16, device=device), nn.ReLU(), nn.Dropout(dropout),
                         nn.Linear(16, CLASSES, device=device))


def make_setup(device: pyburn.Device, seed: int = 0, n: int = 96, batch_size: int = 8,
               lr: float = 0.01):
    """A seeded model, its Adam optimizer, a shuffled training loader and a validation
    loader: calling it twice with the same seed gives the same run."""
    x, y = make_data(device, n + 32, seed)
    pyburn.manual_seed(seed + 1)
    model = make_model(device)
    optimizer = Adam(model.parameters(), lr=lr)
    train = DataLoader(TensorDataset(x[:n], y[:n]), batch_size=batch_size, shuffle=True)
    valid = DataLoader(TensorDataset(x[n:], y[n:]), batch_size=16)
    return model, optimizer, train, valid


def weights(model: nn.Module) -> dict[str, bytes]:
    """The model's tensors as raw bytes: equal dicts mean bit-identical weights."""
    return {name: t.to_bytes() for name, t in model.state_dict().items()}
