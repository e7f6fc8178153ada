"""Every model of the zoo on the browser's CPU devices: each entry of
`pyburn.models.list_models()`, built small (`TINY`) with seeded weights, gives on flex, and on
wasm where it runs, the outputs that cpu gives on the desktop; and the `Tokenizer` reads the
tokenizer.json files written here and encodes and decodes as Hugging Face's would. No numpy
and no PyTorch, so this file also runs inside Pyodide (`make test-pyodide`), where the cpu
outputs come from ``build/conformance-golden.json``: the desktop run computes them and
records them there (``conformance.helpers.GOLDEN``), and on the desktop the same tests
compare flex and wasm with cpu directly.

Each model is built once on flex, the one device of every platform, and moved to the others
(``Module.to``): seeded random weights are not the same bits on every device (a normal
draw's log and cosine round differently on each backend), so building on each device would
give each slightly different weights. The batch norms get running statistics of their own
(fresh ones make each an identity in eval mode). Outputs compare as the Llama tests' do: a
relative tolerance of 1e-4 and an absolute one of 1e-5 times the reference's largest
magnitude (flex and wasm differ from cpu by at most 4e-7 times it)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable

import pytest
from conformance.helpers import (
    GOLDEN,
    HAVE_NUMPY,
    Expected,
    Tol,
    assert_matches,
    flatten,
    nest,
    round_to,
)

import pyburn
from pyburn import models
from pyburn.backends import wasm
from pyburn.models import Tokenizer
from pyburn.models.generate import generate

#: the devices of a browser's CPU (a test argument `on`, not `device`: tests/conftest.py would
#: parametrize that over every device); wasm is skipped where it cannot run (no wasmtime)
ON = ["flex", pytest.param("wasm", marks=pytest.mark.skipif(
    wasm.unavailable_reason() is not None, reason=f"wasm: {wasm.unavailable_reason()}"))]
SEED = 22

IMAGES = {"image_size": 32, "patch_size": 8, "dim": 32, "depth": 2, "heads": 2}
BERT = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64}
LLAMA = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
         "max_position_embeddings": 64}
#: every model of the zoo in a small configuration (`create`'s keyword arguments): a new
#: model fails `test_every_zoo_model_is_here` until it has one
TINY: dict[str, dict] = {
    "resnet18": {"width": 8}, "resnet34": {"width": 4}, "resnet50": {"width": 4},
    "mobilenet_v2": {"width_mult": 0.25}, "mobilenet_v3_small": {"width_mult": 0.25},
    "mobilenet_v3_large": {"width_mult": 0.25},
    "efficientnet_b0": {"width_mult": 0.25, "depth_mult": 0.5},
    "squeezenet1_0": {}, "squeezenet1_1": {},
    "vit_tiny_patch16_224": IMAGES, "vit-base-patch16-224": IMAGES,
    "yolox_nano": {"width": 0.0625}, "yolox_tiny": {"width": 0.0625},
    "mnist-mlp": {"hidden": 32}, "mnist-cnn": {"channels": (4, 8), "hidden": 16},
    "bert-base": BERT, "all-minilm-l6-v2": BERT,
    "tinyllama-1.1b": LLAMA, "llama-3.2-1b": LLAMA,
}
#: the class count of the image models (MNIST's is fixed at 10)
CLASSES = {"image-classification": 10, "object-detection": 4}
#: two token sequences, the shorter padded with id 0, and BERT's segments
IDS = [[2, 15, 27, 33, 9, 41, 3], [2, 8, 19, 3, 0, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]]
TYPES = [[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0]]
#: the prompts of the Llama models, of different lengths: padded on the left for generation
PROMPTS = [[5, 17, 60, 3], [1, 44, 23]]
NEW_TOKENS = 4


# ---- the models ------------------------------------------------------------------------------

@functools.cache
def built(name: str) -> pyburn.nn.Module:
    """The zoo's `name` in its `TINY` configuration, seeded, on flex, its batch norms'
    running statistics drawn too (mean in [-0.5, 0.5), variance in [0.5, 2))."""
    pyburn.manual_seed(SEED)
    task = models.entry(name).task
    classes = {} if name.startswith("mnist") or task not in CLASSES else \
        {"num_classes": CLASSES[task]}
    model = models.create(name, device="flex", **TINY[name], **classes)
    statistics = {key: pyburn.rand(*t.shape, device="flex") * scale + low
                  for key, t in model.state_dict().items()
                  for suffix, scale, low in (("running_mean", 1.0, -0.5),
                                             ("running_var", 1.5, 0.5))
                  if key.endswith(suffix)}
    model.load_state_dict(statistics, strict=False)
    return model


def _floats(name: str, shape: tuple[int, ...], low: float, high: float) -> list:
    """Nested lists of float32 values in [low, high), drawn from `name`: the same on every
    platform."""
    rng = random.Random(name)
    count = functools.reduce(int.__mul__, shape, 1)
    return nest([round_to(rng.uniform(low, high), "float32") for _ in range(count)], shape)


def _classify(model, name: str, on: str) -> tuple:
    """The logits (or predictions) of one image: MNIST's pixels in [0, 1], the others'
    normalised values."""
    mnist = name.startswith("mnist")
    pixels = _floats(name, (1, 1, 28, 28), 0.0, 1.0) if mnist else \
        _floats(name, (1, 3, 32, 32), -2.0, 2.0)
    return (model(pyburn.tensor(pixels, device=on)),)


def _embed(model, name: str, on: str) -> tuple:
    ids, mask, types = (pyburn.tensor(rows, device=on) for rows in (IDS, MASK, TYPES))
    out = model(ids, mask, types)  # hidden states (then pooled too), or sentence embeddings
    return (out, model.pooler(out)) if out.ndim == 3 else (out,)


def _generate(model, name: str, on: str) -> tuple:
    """The logits of the padded prompts, and the tokens of greedy generation."""
    width = max(map(len, PROMPTS))
    ids = pyburn.tensor([[0] * (width - len(p)) + p for p in PROMPTS], device=on)
    mask = pyburn.tensor([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS], device=on)
    return (model(ids, attention_mask=mask),
            generate(model, ids, NEW_TOKENS, attention_mask=mask))


#: what a model of each task is given, and which of its results are compared
RUNS: dict[str, Callable[..., tuple]] = {
    "image-classification": _classify, "object-detection": _classify,
    "sentence-embedding": _embed, "text-generation": _generate}


def outputs(name: str, on: str) -> tuple:
    """The outputs of `built(name)` on the device `on`, without gradients."""
    model = built(name).to(on)
    with pyburn.no_grad():
        return RUNS[models.entry(name).task](model, name, on)


@functools.cache
def reference(name: str) -> list[Expected]:
    """`name`'s outputs on cpu, recorded where numpy is (the desktop run), read back from the
    golden file where it is not (Pyodide)."""
    key = f"test_zoo_pure.py::outputs[{name}]"
    if not HAVE_NUMPY:
        return GOLDEN.lookup(key)
    results = [Expected(t.shape, t.dtype.name, flatten(t.tolist())) for t in outputs(name, "cpu")]
    GOLDEN.record(key, results)
    return results


def test_every_zoo_model_is_here():
    assert sorted(TINY) == models.list_models()


@pytest.mark.parametrize("on", ON)
@pytest.mark.parametrize("name", sorted(TINY))
def test_outputs_are_the_desktops(name, on):
    expected = reference(name)
    got = outputs(name, on)
    assert len(got) == len(expected)
    for i, (result, want) in enumerate(zip(got, expected)):
        tol = {"float32": Tol(1e-4, 1e-5 * max(abs(v) for v in want.values))}
        assert_matches(result, want, tol, pyburn.device(on), what=f"{name} output {i}")


# ---- the tokenizers --------------------------------------------------------------------------

def _specials(names: list[str]) -> list[dict]:
    return [{"id": i, "content": t, "special": True, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False} for i, t in enumerate(names)]


#: BERT's uncased WordPiece: lowercase, accents stripped, CJK characters and punctuation split
WORDPIECE = {
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {t: i for i, t in enumerate([
                  "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cafe", "is", "open", "un",
                  "##believ", "##able", "##s", "!", ",", "中", "文"])}},
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "cls": ["[CLS]", 2], "sep": ["[SEP]", 3]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "added_tokens": _specials(["[PAD]", "[UNK]", "[CLS]", "[SEP]"]),
    "padding": {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
                "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
}
#: GPT-2's byte-level BPE: each UTF-8 byte a character ("Ġ" a space), words split by its pattern
BYTE_LEVEL_VOCAB = ["<|endoftext|>", "h", "e", "l", "o", "w", "r", "d", "c", "a", "f", ",", "Ġ",
                    "Ã", "©", "ð", "Ł", "ĺ", "Ģ", "he", "ll", "hell", "hello", "Ġw", "or",
                    "Ġwor", "ld", "Ġworld", "Ã©"]
BYTE_LEVEL = {
    "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(BYTE_LEVEL_VOCAB)},
              "merges": [["h", "e"], ["l", "l"], ["he", "ll"], ["hell", "o"], ["Ġ", "w"],
                         ["o", "r"], ["Ġw", "or"], ["l", "d"], ["Ġwor", "ld"], ["Ã", "©"]]},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                "use_regex": True},
    "added_tokens": _specials(["<|endoftext|>"]),
}
#: Llama 2's BPE: "▁" for spaces and before the text, characters it lacks as UTF-8 byte tokens
BYTE_FALLBACK_VOCAB = ["<unk>", "<s>", "</s>", "<0xC3>", "<0xA9>", "<0xF0>", "<0x9F>", "<0x98>",
                       "<0x80>", "▁", "h", "e", "l", "o", "c", "a", "f", "▁h", "ll", "▁he",
                       "▁hell", "▁hello", "▁c", "▁ca"]
BYTE_FALLBACK = {
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
              "vocab": {t: i for i, t in enumerate(BYTE_FALLBACK_VOCAB)},
              "merges": [["▁", "h"], ["l", "l"], ["▁h", "e"], ["▁he", "ll"], ["▁hell", "o"],
                         ["▁", "c"], ["▁c", "a"]]},
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                  {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                              "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "added_tokens": _specials(["<unk>", "<s>", "</s>"]),
}
#: (tokenizer.json, text, its tokens, its ids decoded), as Hugging Face's `tokenizers` has them
TOKENIZED = [
    (WORDPIECE, "The CAFÉ is open, UNBELIEVABLE! 中文 😀",
     ["[CLS]", "the", "cafe", "is", "open", ",", "un", "##believ", "##able", "!", "中", "文",
      "[UNK]", "[SEP]"],
     "the cafe is open, unbelievable! 中 文"),
    (BYTE_LEVEL, "hello world, café 😀<|endoftext|>",
     ["hello", "Ġworld", ",", "Ġ", "c", "a", "f", "Ã©", "Ġ", "ð", "Ł", "ĺ", "Ģ", "<|endoftext|>"],
     "hello world, café 😀"),
    (BYTE_FALLBACK, "hello café 😀",
     ["<s>", "▁hello", "▁ca", "f", "<0xC3>", "<0xA9>", "▁", "<0xF0>", "<0x9F>", "<0x98>",
      "<0x80>"],
     "hello café 😀"),
]


@pytest.mark.parametrize("spec, text, tokens, decoded", TOKENIZED,
                         ids=["wordpiece", "byte-level", "byte-fallback"])
def test_tokenizer_json_encodes_and_decodes(spec, text, tokens, decoded, tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    tokenizer = Tokenizer.from_file(path)
    ids = tokenizer.encode(text)
    assert [tokenizer.id_to_token(i) for i in ids] == tokens
    assert tokenizer.decode(ids) == decoded


def test_padded_batch_feeds_the_sentence_encoder(tmp_path):
    """A semantic-search page's pipeline: texts to a padded batch to embeddings, each the
    embedding of its text alone."""
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(WORDPIECE, ensure_ascii=False), encoding="utf-8")
    tokenizer = Tokenizer.from_file(path)
    texts = ["The cafe is open!", "Unbelievable"]
    ids, mask = tokenizer.encode_batch(texts)
    assert mask == [[1] * 7, [1] * 5 + [0] * 2]
    encoder = built("all-minilm-l6-v2").to("flex")
    with pyburn.no_grad():
        batch = encoder(pyburn.tensor(ids, device="flex"), pyburn.tensor(mask, device="flex"))
        alone = encoder(pyburn.tensor([tokenizer.encode(texts[1])], device="flex"))
    assert pyburn.allclose(batch[1:], alone, rtol=1e-5, atol=1e-6)
