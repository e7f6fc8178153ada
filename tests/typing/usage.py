"""pyburn used the way a user writes it, for the type checker (`make typecheck`): every
`assert_type` says what a static tool must see, so a Tensor method missing from
pyburn/_tensor.pyi, or one with a wrong signature, is a mypy error here. It also runs
(tests/scripts/test_tensor_stub.py runs it on flex): `assert_type` does nothing at run time.

The binary operators (``x * 2``) are typed ``-> Any`` where math_ops defines them, so their
results are checked only once bound to an annotated name.
"""

from __future__ import annotations

from typing import Any, assert_type

import pyburn
from pyburn import Tensor, nn, optim
from pyburn.nn import functional as F  # noqa: N812 - PyTorch's spelling


class MLP(nn.Module):
    def __init__(self, device: pyburn.Device) -> None:
        super().__init__()
        self.hidden = nn.Linear(4, 8, device=device)
        self.out = nn.Linear(8, 3, device=device)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(F.relu(self.hidden(x)))


def creation(device: pyburn.Device) -> None:
    x = pyburn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    assert_type(x, Tensor)
    assert_type(pyburn.zeros(2, 3, device=device), Tensor)
    assert_type(pyburn.ones((2, 3), dtype=pyburn.float64, device=device), Tensor)
    assert_type(pyburn.arange(6, device=device).reshape(2, 3), Tensor)
    assert_type(pyburn.full((2, 2), 7, device=device), Tensor)
    assert_type(pyburn.randn(2, 3, device=device, generator=pyburn.manual_seed(0)), Tensor)
    assert_type(pyburn.zeros_like(x), Tensor)
    assert_type(pyburn.cat([x, x], dim=0), Tensor)
    assert_type(pyburn.stack([x, x]), Tensor)


def methods(device: pyburn.Device) -> None:
    x = pyburn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    # attributes and properties written in the class
    assert_type(x.shape, tuple[int, ...])
    assert_type(x.dtype, pyburn.DType)
    assert_type(x.device, pyburn.Device)
    assert_type(x.ndim, int)
    assert_type(x.T, Tensor)
    assert_type(x.numel(), int)
    assert_type(x.is_leaf, bool)
    # installed by the op families at import time
    assert_type(x.sum(dim=1).exp().reshape(2, -1), Tensor)
    assert_type(x.mean(), Tensor)
    assert_type(x.var(dim=0, keepdim=True, correction=0), Tensor)
    assert_type(x.argmax(dim=1), Tensor)
    assert_type(x.add(x, alpha=2), Tensor)
    assert_type(x.div(2, rounding_mode="floor"), Tensor)
    assert_type(x.clamp(min=0.0, max=4.0).sqrt().log1p(), Tensor)
    assert_type(x.permute(1, 0).transpose(0, 1).flatten().unsqueeze(0), Tensor)
    assert_type(x.split(1, dim=0), list[Tensor])
    assert_type(x.chunk(3, dim=1), list[Tensor])
    assert_type(x.matmul(x.T), Tensor)
    assert_type(x @ x.T, Tensor)
    assert_type(x.gather(1, pyburn.tensor([[0], [1]], device=device)), Tensor)
    assert_type(x.masked_fill(x.gt(2.0), 0.0), Tensor)
    assert_type(x.where(x.lt(3.0), 0.0), Any)  # an unannotated lambda in math_ops
    assert_type(x.allclose(x), bool)
    assert_type(x[0], Tensor)
    assert_type(-x, Tensor)
    # in-place twins take their op's arguments
    y = x.clone()
    assert_type(y.add_(x, alpha=0.5), Tensor)
    assert_type(y.clamp_(max=3.0), Tensor)
    assert_type(y.float().double().long().bool().int(), Tensor)
    # operators: typed Any by math_ops, checked where they are bound
    z: Tensor = (x * 2 + 1) / x.max()
    assert_type(z.tolist(), Any)
    assert_type(z.to_bytes(), bytes)


def training(device: pyburn.Device) -> float:
    model = MLP(device)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    x = pyburn.randn(16, 4, device=device, generator=pyburn.manual_seed(1))
    target = pyburn.tensor([i % 3 for i in range(16)], device=device)
    loss = F.cross_entropy(model.forward(x), target)
    assert_type(loss, Tensor)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with pyburn.no_grad():
        logits = model.forward(x)
    assert_type(logits, Tensor)
    return float(loss.item())


def main(device_name: str = "flex") -> float:
    device = pyburn.device(device_name)
    creation(device)
    methods(device)
    return training(device.autodiff())


if __name__ == "__main__":
    print(f"loss {main():.4f}")
