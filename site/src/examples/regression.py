"""A line fitted with gradient descent on flex, pyburn's pure-Python device: seeded, so this
file prints the same lines in a browser and on a desktop (`python regression.py`)."""

import pyburn
import pyburn.nn.functional as F
from pyburn import nn
from pyburn.optim import SGD

pyburn.manual_seed(0)
device = pyburn.device("flex").autodiff()
x = pyburn.randn(64, 1, device=device)
y = 3 * x - 1 + 0.1 * pyburn.randn(64, 1, device=device)

model = nn.Linear(1, 1, device=device)
optimizer = SGD(model.parameters(), lr=0.1)
for step in range(1, 61):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step:2d}  loss {loss.item():.5f}")
print(f"learned y = {model.weight.item():.4f} x {model.bias.item():+.4f}  (true: y = 3 x - 1)")
