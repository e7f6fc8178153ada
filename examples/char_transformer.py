"""A tiny character-level transformer: learn to continue Shakespeare's sonnets one character
at a time, then write some.

    python examples/char_transformer.py            # 300 steps, under a minute on 2 cores
    python examples/char_transformer.py --quick    # a few steps: a smoke test

The model is GPT-shaped: token embeddings plus the sinusoidal position table, two pre-norm
encoder layers with a causal mask (each position attends only to itself and the positions
before it), a final LayerNorm and a linear head giving the next character's scores. Training
draws random windows of the text; sampling feeds the model its own output. The text is small
(5 KB), so a longer run (--steps 600) learns it nearly by heart: the loss falls below 0.5 nats
per character, and the samples turn into lines of the sonnets.

The text, examples/data/sonnets.txt, is eight of Shakespeare's sonnets (1609, in the public
domain), with modernised spelling.
"""

from __future__ import annotations

import argparse
import math
import os

import pyburn
import pyburn.nn.functional as F
from pyburn import nn
from pyburn.optim import AdamW
from pyburn.optim.lr_scheduler import CosineAnnealingLR

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sonnets.txt")


class CharTransformer(nn.Module):
    """Next-character scores (N, L, vocab) for character ids (N, L), L <= `context`."""

    def __init__(self, vocab: int, context: int, d_model: int = 64, nhead: int = 4,
                 layers: int = 2, device: pyburn.Device | None = None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, device=device)
        self.position = nn.PositionalEncoding(d_model, dropout=0.0, max_len=context,
                                              batch_first=True, device=device)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model,
                                           dropout=0.0, batch_first=True, norm_first=True,
                                           device=device)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model, device=device)
        self.head = nn.Linear(d_model, vocab, device=device)

    def forward(self, ids: pyburn.Tensor) -> pyburn.Tensor:
        """Scores for the character after each position of `ids`."""
        x = self.position(self.embed(ids))
        return self.head(self.norm(self.blocks(x, is_causal=True)))


def windows(data: pyburn.Tensor, batch: int, length: int) -> tuple[pyburn.Tensor, pyburn.Tensor]:
    """`batch` random windows of `length` + 1 characters: inputs and the targets one ahead."""
    starts = pyburn.randint(0, data.shape[0] - length, (batch, 1), device=data.device)
    offsets = pyburn.arange(length + 1, device=data.device).reshape(1, -1)
    chunk = pyburn.index_select(data, 0, (starts + offsets).reshape(-1)).reshape(batch, -1)
    return chunk[:, :-1], chunk[:, 1:]


def sample(model: CharTransformer, prompt: list[int], count: int, context: int,
           temperature: float, device: pyburn.Device) -> list[int]:
    """`count` characters after `prompt`, each drawn from the model's softmax at
    `temperature` (pyburn's generator decides, so the seed fixes the text)."""
    ids = list(prompt)
    model.eval()
    with pyburn.no_grad():
        for _ in range(count):
            window = pyburn.tensor([ids[-context:]], device=device)
            scores = model(window)[0, -1] / temperature
            cumulative = F.softmax(scores, dim=-1).cumsum(0)
            # the first index whose cumulative probability passes a uniform draw
            draw = pyburn.rand((), device=device)
            ids.append(min(int((cumulative < draw).sum().item()), scores.shape[0] - 1))
    model.train()
    return ids


def main() -> None:
    """Read the text, train, and print a sample."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="default: the default device")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--context", type=int, default=64, help="characters the model sees")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--quick", action="store_true", help="10 steps, a short sample")
    args = parser.parse_args()
    steps, sample_length = (10, 40) if args.quick else (args.steps, 300)

    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    pyburn.manual_seed(0)
    device = pyburn.device(args.device).autodiff()
    data = pyburn.tensor([index[c] for c in text], device=device)
    model = CharTransformer(len(chars), args.context, device=device)
    optimizer = AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = CosineAnnealingLR(optimizer, T_max=steps)
    print(f"{len(text):,} characters, {len(chars)} distinct; {model.num_params():,} "
          f"parameters on {device.name}")

    for step in range(1, steps + 1):
        inputs, targets = windows(data, args.batch_size, args.context)
        scores = model(inputs)
        loss = F.cross_entropy(scores.reshape(-1, len(chars)), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % max(1, steps // 5) == 0 or step == steps:
            # bits per character: 0 would be a memorised text, log2(vocab) a blind guess
            print(f"step {step:4d}  loss {loss.item():.3f}  "
                  f"({loss.item() / math.log(2):.2f} bits/char)")

    prompt = [index[c] for c in "Shall I "]
    ids = sample(model, prompt, sample_length, args.context, args.temperature, device)
    print("\n" + "".join(chars[i] for i in ids))


if __name__ == "__main__":
    main()
