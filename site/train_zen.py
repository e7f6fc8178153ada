"""The generate page's model, trained when the site is built (`site/build.py` keeps it in
build/zoo/ and trains again only when this file changes): a Llama of the zoo shrunk to 2
layers of 96 features, 4 query heads sharing 2 key/value heads (TinyLlama's architecture at
0.17 M parameters), learning the Zen of Python (PEP 20, by Tim Peters: 856 characters, which
Python's own `this` module holds, rot13-encoded) one character at a time, on the cpu device.
It learns the text by heart: a greedy continuation of any line goes on as the poem does, for
as long as the context it was trained on (`CONTEXT` characters, prompt included).

The tokenizer is a character-level ``tokenizer.json`` in Hugging Face's format, written by
Hugging Face's `tokenizers` (a BPE model with one token per character and no merges, and an
``<unk>`` token for characters the poem lacks); the page reads it with pyburn's own
`pyburn.models.Tokenizer`, as the training here does.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import time
from pathlib import Path

import pyburn
import pyburn.nn.functional as F
from pyburn import models, store
from pyburn.optim import AdamW
from pyburn.optim.lr_scheduler import CosineAnnealingLR

#: the zoo's Llama whose architecture the model takes (its sizes replaced by `CONFIG`'s)
MODEL = "tinyllama-1.1b"
#: the characters a window of training holds, and the positions the model can take
CONTEXT = 128
CONFIG = {"hidden_size": 96, "intermediate_size": 192, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2,
          "max_position_embeddings": CONTEXT}
#: the files the page loads
WEIGHTS, TOKENIZER = "zen-llama.safetensors", "zen-tokenizer.json"
UNKNOWN = "<unk>"
STEPS, BATCH, LR = 250, 16, 3e-3


def zen() -> str:
    """The Zen of Python, as ``import this`` prints it."""
    with contextlib.redirect_stdout(io.StringIO()):
        # here, not at the top: importing `this` prints the poem, which the build keeps quiet
        import this
    return codecs.decode(this.s, "rot13")


def write_tokenizer(text: str, path: Path) -> None:
    """A character-level tokenizer.json for `text` at `path`: `UNKNOWN` is id 0, then each
    character of `text` in code point order."""
    # here, not at the top: only the build writes tokenizers (tokenizers is a dev dependency)
    from tokenizers import Tokenizer, decoders
    from tokenizers.models import BPE

    vocab = {UNKNOWN: 0, **{char: i + 1 for i, char in enumerate(sorted(set(text)))}}
    tokenizer = Tokenizer(BPE(vocab, [], unk_token=UNKNOWN))
    tokenizer.add_special_tokens([UNKNOWN])
    tokenizer.decoder = decoders.Fuse()
    tokenizer.save(str(path))


def windows(ids: pyburn.Tensor) -> tuple[pyburn.Tensor, pyburn.Tensor]:
    """`BATCH` random windows of `CONTEXT` ids of `ids`, and the ids one position on."""
    starts = pyburn.randint(0, ids.shape[0] - CONTEXT, (BATCH, 1), device=ids.device)
    offsets = pyburn.arange(CONTEXT + 1, device=ids.device).reshape(1, -1)
    chunk = pyburn.index_select(ids, 0, (starts + offsets).reshape(-1)).reshape(BATCH, -1)
    return chunk[:, :-1], chunk[:, 1:]


def train(folder: Path) -> None:
    """Write the tokenizer, train the model and save it to `folder`, with what the page
    shows (its configuration, the text, the final loss) as metadata."""
    started = time.perf_counter()
    text = zen()
    write_tokenizer(text, folder / TOKENIZER)
    tokenizer = models.Tokenizer.from_file(folder / TOKENIZER)
    pyburn.manual_seed(0)
    device = pyburn.device("cpu").autodiff()
    config = {"vocab_size": tokenizer.vocab_size, **CONFIG}
    model = models.create(MODEL, device=device, **config).train()
    optimizer = AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    schedule = CosineAnnealingLR(optimizer, T_max=STEPS)
    ids = pyburn.tensor(tokenizer.encode(text), device=device)
    for _ in range(STEPS):
        inputs, targets = windows(ids)
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, tokenizer.vocab_size), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    seconds = time.perf_counter() - started
    final = loss.item()
    store.save(model, folder / WEIGHTS, metadata={
        "model": MODEL, "config": config, "tokenizer": TOKENIZER,
        "text": "the Zen of Python (PEP 20, by Tim Peters), from Python's `this` module",
        "characters": len(text), "parameters": model.num_params(), "context": CONTEXT,
        "steps": STEPS, "batch": BATCH,
        "loss": final, "seconds": round(seconds, 1)})
    print(f"generate page: a {model.num_params():,}-parameter Llama learned the Zen of Python "
          f"in {seconds:.0f} s, loss {final:.3f} nats per character")
