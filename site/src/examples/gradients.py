"""Gradients: tensors on a device's autodiff form record what is computed from them, and
backward() fills .grad. The same code runs unchanged on a desktop."""

import pyburn

device = pyburn.device().autodiff()
w = pyburn.tensor([1.0, -2.0, 0.5], device=device, requires_grad=True)
x = pyburn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)

loss = ((x @ w).tanh() ** 2).mean()
loss.backward()
print("loss:", round(loss.item(), 6))
print("d loss / d w:", [round(g, 6) for g in w.grad.tolist()])
