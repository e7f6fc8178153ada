"""The Llama decoders and generation, against Hugging Face ``transformers``' LlamaForCausalLM
built from a tiny random configuration (nothing is downloaded): its config.json read, its
``.pth`` and ``.safetensors`` files loaded strictly through the zoo, the same logits, the
key/value-cached steps equal to the full forward pass, greedy generation token for token (a
left-padded batch of prompts of different lengths too), the sampling strategies' frequencies
equal to the filtered softmax, and one ONNX round trip."""

from __future__ import annotations

import functools
import io
import json
import math
import pathlib
import tempfile

import pytest

import pyburn
import pyburn.onnx
from pyburn import models
from pyburn.models.generate import Sampler, generate
from pyburn.models.llama import (
    LLAMA_3_2_1B,
    TINYLLAMA_1_1B,
    KVCache,
    Llama3RopeScaling,
    LlamaConfig,
    LlamaForCausalLM,
    rope_frequencies,
)

from . import zoo_checks
from .zoo_checks import DEVICES, require

torch, np, transformers, stats = require("torch", "numpy", "transformers", "scipy.stats")

#: the shared tolerance, its atol 1e-5 times the logits' largest magnitude (no floor of 1)
assert_close = functools.partial(zoo_checks.assert_close, floor=0.0)
TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
#: the zoo entry each reference stands for: TinyLlama's shape (untied head, plain RoPE) and
#: Llama 3.2's (tied head, theta 500000, Llama 3 scaling)
VARIANTS = {"tinyllama-1.1b": dict(rope_theta=10000.0),
            "llama-3.2-1b": dict(rope_theta=500000.0, rope_scaling=LLAMA3_ROPE,
                                 tie_word_embeddings=True)}
PROMPT = [[5, 17, 99, 3, 64, 2, 110, 41, 7], [1, 88, 23, 23, 90, 4, 57, 126, 30]]
#: prompts of different lengths, and the batch of them padded on the left with 0, its mask
PROMPTS = [[5, 17, 99], [1, 88, 23, 23, 90, 4, 57], [12, 7, 64, 2, 110]]
WIDTH = max(map(len, PROMPTS))
PADDED = [[0] * (WIDTH - len(p)) + p for p in PROMPTS]
MASK = [[0] * (WIDTH - len(p)) + [1] * len(p) for p in PROMPTS]


@functools.cache
def reference(name: str) -> tuple:
    """(transformers model, its config.json as a dict, .pth bytes, .safetensors bytes) of the
    tiny twin of the zoo model `name`, seeded: the .pth a ``torch.save`` of its state dict,
    the rest what ``save_pretrained`` writes (the files the Hub serves). The weights are drawn
    wider than transformers' init (std 0.02), so that the logits vary enough for generation
    to be non-trivial."""
    config = transformers.LlamaConfig(**TINY, **VARIANTS[name])
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for key, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in key else 0.15 * torch.randn_like(p))
    pth = io.BytesIO()
    torch.save(model.state_dict(), pth)
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        published = pathlib.Path(folder)
        return (model, json.loads((published / "config.json").read_text()), pth.getvalue(),
                (published / "model.safetensors").read_bytes())


def tiny_config(name: str) -> LlamaConfig:
    return LlamaConfig.from_dict(reference(name)[1])


def created(name: str, device: str, file: str = "safetensors"):
    """The zoo's `name` in the reference's sizes (its other settings are the registered
    model's), loaded strictly from the reference's file."""
    _, _, pth, safetensors = reference(name)
    config = tiny_config(name)
    sizes = {f: getattr(config, f) for f in (*TINY, "head_dim", "rms_norm_eps")}
    model = models.create(name, pth if file == "pth" else safetensors, device=device, **sizes)
    assert model.config == config
    return model


def torch_logits(name: str, ids: list[list[int]]):
    with torch.no_grad():
        return reference(name)[0](torch.tensor(ids)).logits.numpy()


def torch_generate(name: str, ids: list[list[int]], mask: list[list[int]], **options):
    """transformers' greedy generation of `name`'s reference."""
    with torch.no_grad():
        return reference(name)[0].generate(
            torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False,
            **options).tolist()


# ---- configuration ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", VARIANTS)
def test_config_json_is_read(name, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(reference(name)[1]))
    config = LlamaConfig.from_json(path)
    hf = reference(name)[0].config
    assert (config.vocab_size, config.hidden_size, config.kv_heads, config.head_size,
            config.rms_norm_eps, config.tie_word_embeddings) == \
        (128, 64, 2, 16, hf.rms_norm_eps, hf.tie_word_embeddings)
    assert config.rope_theta == VARIANTS[name]["rope_theta"]
    assert (config.rope_scaling is None) == (name == "tinyllama-1.1b")


def test_config_json_of_older_transformers_is_read():
    """Before transformers 5, the rotary settings were top-level keys."""
    old = {**TINY, "rope_theta": 500000.0, "rope_scaling": LLAMA3_ROPE, "hidden_act": "silu",
           "torch_dtype": "bfloat16", "bos_token_id": 1}
    assert LlamaConfig.from_dict(old) == LlamaConfig(
        **TINY, rope_theta=500000.0, rope_scaling=Llama3RopeScaling(32.0, 1.0, 4.0, 8192))


@pytest.mark.parametrize("change, message", [
    ({"hidden_act": "gelu"}, "hidden_act 'gelu'"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope_type 'yarn'"),
    ({"num_key_value_heads": 3}, "multiple of num_key_value_heads"),
    ({"hidden_size": 66}, "divisible by num_attention_heads"),
    ({"vocab_size": 0}, "vocab_size must be an int >= 1")])
def test_bad_config_is_refused(change, message):
    with pytest.raises(pyburn.ArgumentError, match=message):
        LlamaConfig.from_dict({**TINY, **change})


def test_registered_configurations():
    assert {"tinyllama-1.1b", "llama-3.2-1b"} <= set(models.list("text-generation"))
    assert models.entry("llama-3.2-1b").weights_from == "transformers"
    t = TINYLLAMA_1_1B
    assert (t.num_hidden_layers, t.hidden_size, t.num_attention_heads, t.kv_heads,
            t.intermediate_size, t.vocab_size, t.tie_word_embeddings) == \
        (22, 2048, 32, 4, 5632, 32000, False)
    ll = LLAMA_3_2_1B
    assert (ll.num_hidden_layers, ll.kv_heads, ll.head_size, ll.vocab_size, ll.rope_theta,
            ll.tie_word_embeddings, ll.rope_scaling.factor) == \
        (16, 8, 64, 128256, 500000.0, True, 32.0)
    with pytest.raises(pyburn.ArgumentError, match="no field 'layers'"):
        models.create("tinyllama-1.1b", device="cpu", layers=2)


def test_rope_frequencies_are_transformers():
    """Every branch of the Llama 3 scaling (kept, interpolated, divided) at head size 64;
    within one float32 rounding of transformers' float32 steps."""
    hf = transformers.LlamaConfig(**{**TINY, "hidden_size": 256}, rope_theta=500000.0,
                                  rope_scaling=LLAMA3_ROPE)
    expected = transformers.LlamaForCausalLM(hf).model.rotary_emb.inv_freq.numpy()
    mine = rope_frequencies(LlamaConfig.from_dict(hf.to_dict()))
    np.testing.assert_allclose(mine, expected, rtol=1.2e-7, atol=0)
    plain = rope_frequencies(tiny_config("tinyllama-1.1b"))
    assert plain == reference("tinyllama-1.1b")[0].model.rotary_emb.inv_freq.tolist()


# ---- the forward pass ------------------------------------------------------------------------

@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
@pytest.mark.parametrize("name", VARIANTS)
def test_logits_equal_transformers(name, on):
    expected = torch_logits(name, PROMPT)
    for file in ("pth", "safetensors"):
        model = created(name, on, file)
        assert model.entry.task == "text-generation"
        assert_close(model(pyburn.tensor(PROMPT, device=on)).numpy(), expected)


def test_biases_of_other_llamas():
    """attention_bias and mlp_bias (which no registered model has), on cpu."""
    config = transformers.LlamaConfig(**TINY, attention_bias=True, mlp_bias=True)
    torch.manual_seed(1)
    reference_model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # transformers' init zeroes biases
        for key, p in reference_model.named_parameters():
            if key.endswith(".bias"):
                p.normal_(0.0, 0.5)
    weights = io.BytesIO()
    torch.save(reference_model.state_dict(), weights)
    model = LlamaForCausalLM(LlamaConfig.from_dict(config.to_dict()), device="cpu")
    model.load_from(weights.getvalue())
    with torch.no_grad():
        expected = reference_model(torch.tensor(PROMPT)).logits.numpy()
    assert_close(model(pyburn.tensor(PROMPT, device="cpu")).numpy(), expected)


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
def test_cached_steps_equal_the_full_forward(on):
    model = created("llama-3.2-1b", on)
    ids = pyburn.tensor(PROMPT, device=on)
    cache = model.new_cache()
    # the prompt, two positions at once (a mask past the cache), then one at a time
    chunks = [(0, 4), (4, 6)] + [(i, i + 1) for i in range(6, ids.shape[1])]
    steps = [model(ids[:, a:b], cache=cache).numpy() for a, b in chunks]
    assert cache.length == ids.shape[1]
    assert_close(np.concatenate(steps, 1), torch_logits("llama-3.2-1b", PROMPT))


def test_left_padded_logits_equal_transformers():
    """The mask of the first pass is kept by the cache for the passes that give none; the
    logits at the tokens (not the padding) are transformers'."""
    model = created("llama-3.2-1b", "cpu")
    ids, mask = pyburn.tensor(PADDED, device="cpu"), pyburn.tensor(MASK, device="cpu")
    cache = model.new_cache()
    steps = [model(ids[:, :5], cache=cache, attention_mask=mask[:, :5].bool()).numpy()]
    steps += [model(ids[:, i:i + 1], cache=cache).numpy() for i in range(5, WIDTH)]
    assert cache.mask.tolist() == [[bool(m) for m in row] for row in MASK]
    with torch.no_grad():
        expected = reference("llama-3.2-1b")[0](
            torch.tensor(PADDED), attention_mask=torch.tensor(MASK)).logits.numpy()
    tokens = np.array(MASK, dtype=bool)
    assert_close(np.concatenate(steps, 1)[tokens], expected[tokens])


def test_misuse_is_named():
    model = created("tinyllama-1.1b", "cpu")
    with pytest.raises(pyburn.ShapeError, match=r"\(N, L\)"):
        model(pyburn.tensor([1, 2], device="cpu"))
    with pytest.raises(pyburn.ShapeError, match="new positions only"):
        model(pyburn.tensor([[1]], device="cpu"), attention_mask=pyburn.ones(
            1, 2, dtype="int32", device="cpu"))
    with pytest.raises(pyburn.ArgumentError, match="KVCache of 2 layers"):
        model(pyburn.tensor([[1]], device="cpu"), cache=KVCache(3))
    with pytest.raises(pyburn.ShapeError, match="max_position_embeddings 256"):
        model(pyburn.zeros(1, 257, dtype="int32", device="cpu"))


# ---- generation ------------------------------------------------------------------------------

@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_generation_equals_transformers(name, on):
    model = created(name, on)
    ours = generate(model, pyburn.tensor(PROMPT, device=on), 20).tolist()
    with torch.no_grad():
        theirs = reference(name)[0].generate(torch.tensor(PROMPT), max_new_tokens=20,
                                             do_sample=False, eos_token_id=None,
                                             pad_token_id=0)
    assert ours == theirs.tolist()
    assert len(set(ours[0][len(PROMPT[0]):])) > 5  # not one token repeated


def test_eos_stops_each_row_as_transformers_does():
    """A row that produced one of the end tokens repeats the first (transformers pads with
    pad_token_id: that token here) until every row is finished."""
    model = created("tinyllama-1.1b", "cpu")
    free = generate(model, pyburn.tensor(PROMPT, device="cpu"), 20).tolist()
    start = len(PROMPT[0])
    stops = [free[0][start + 3], free[1][start + 7]]
    ours = generate(model, pyburn.tensor(PROMPT, device="cpu"), 20, eos_token_id=stops)
    with torch.no_grad():
        theirs = reference("tinyllama-1.1b")[0].generate(
            torch.tensor(PROMPT), attention_mask=torch.ones(2, start, dtype=torch.long),
            max_new_tokens=20, do_sample=False, eos_token_id=stops, pad_token_id=stops[0])
    assert ours.tolist() == theirs.tolist()
    assert ours.shape[1] <= start + 8


def test_on_token_streams_each_step():
    """on_token is given each step's tokens (N,) in turn: together they are the generated
    part, a finished row's repeated end token included."""
    model = created("tinyllama-1.1b", "cpu")
    prompt = pyburn.tensor(PROMPT, device="cpu")
    start = len(PROMPT[0])
    stop = generate(model, prompt, 12).tolist()[0][start + 3]
    steps = []
    out = generate(model, prompt, 12, eos_token_id=stop,
                   on_token=lambda tokens: steps.append(tokens.tolist()))
    assert [list(row) for row in zip(*steps)] == [row[start:] for row in out.tolist()]


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
def test_left_padded_batch_equals_transformers_and_each_prompt_alone(on):
    model = created("tinyllama-1.1b", on)
    ours = generate(model, PROMPTS, 12, pad_token_id=0).tolist()
    assert ours == torch_generate("tinyllama-1.1b", PADDED, MASK, max_new_tokens=12,
                                  eos_token_id=None, pad_token_id=0)
    masked = generate(model, pyburn.tensor(PADDED, device=on), 12,
                      attention_mask=pyburn.tensor(MASK, device=on))
    assert masked.tolist() == ours
    for prompt, row in zip(PROMPTS, ours):
        alone = generate(model, pyburn.tensor(prompt, device=on), 12).tolist()
        assert row[WIDTH:] == alone[len(prompt):]


def test_eos_in_a_left_padded_batch_as_transformers_does():
    """A row that produced an end token goes on with pad_token_id while the others run."""
    model = created("tinyllama-1.1b", "cpu")
    free = generate(model, PROMPTS, 12, pad_token_id=0).tolist()
    stops = [free[0][WIDTH + 2], free[1][WIDTH + 5], free[2][WIDTH + 3]]
    ours = generate(model, PROMPTS, 12, pad_token_id=0, eos_token_id=stops).tolist()
    assert ours == torch_generate("tinyllama-1.1b", PADDED, MASK, max_new_tokens=12,
                                  eos_token_id=stops, pad_token_id=0)
    assert len(ours[0]) < WIDTH + 12
    first = ours[0].index(stops[0], WIDTH)
    assert first < len(ours[0]) - 1 and set(ours[0][first + 1:]) == {0}


@pytest.mark.parametrize("prompts, mask, options, error, message", [
    ("tensor", [[1] * WIDTH, [1] * WIDTH, [1] * 5 + [0] * 2], {}, pyburn.ArgumentError,
     r"row 2 of attention_mask \[1, 1, 1, 1, 1, 0, 0\] has padding after a token: prompts "
     r"must be padded on the left"),
    ("tensor", [[0] * WIDTH] + MASK[1:], {}, pyburn.ArgumentError,
     "row 0 of attention_mask has no token"),
    ("tensor", [[2] * WIDTH] * 3, {}, pyburn.ArgumentError, "holds 1 for a token"),
    ("tensor", MASK[:2], {}, pyburn.ShapeError, "shape of the token ids"),
    (PROMPTS, None, {}, pyburn.ArgumentError, "pad_token_id, which must be given"),
    (PROMPTS, MASK, dict(pad_token_id=0), pyburn.ArgumentError,
     "makes the attention_mask of prompts given as lists"),
    ([[1, 2], []], None, dict(pad_token_id=0), pyburn.ArgumentError,
     "non-empty list of token ids"),
    (PROMPTS, None, dict(pad_token_id=-1), pyburn.ArgumentError,
     "pad_token_id must be a token id")])
def test_bad_padding_is_refused(prompts, mask, options, error, message):
    """Right padding above all: transformers warns of it, generate refuses it. "tensor" is
    the padded batch as a Tensor."""
    model = created("tinyllama-1.1b", "cpu")
    ids = pyburn.tensor(PADDED, device="cpu") if prompts == "tensor" else prompts
    if mask is not None:
        options = {**options, "attention_mask": pyburn.tensor(mask, device="cpu")}
    with pytest.raises(error, match=message):
        generate(model, ids, 3, **options)


def test_top_k_1_is_greedy_and_seeds_repeat():
    model = created("llama-3.2-1b", "cpu")
    prompt = pyburn.tensor(PROMPT[0], device="cpu")
    greedy = generate(model, prompt, 20)
    assert generate(model, prompt, 20, strategy="top-k", top_k=1).tolist() == greedy.tolist()
    draws = [generate(model, prompt, 20, strategy="top-p", top_p=0.9, temperature=1.5,
                      generator=pyburn.Generator(seed)).tolist() for seed in (4, 4, 5)]
    assert draws[0] == draws[1] != draws[2]


def _filtered_softmax(logits, strategy: str, temperature: float, top_k=None, top_p=None):
    """The distribution a strategy draws from, computed here in float64."""
    p = np.exp(logits / temperature - (logits / temperature).max())
    p /= p.sum()
    order = np.argsort(-p)
    if strategy == "top-k":
        p[order[top_k:]] = 0
    if strategy == "top-p":
        before = np.concatenate([[0], np.cumsum(p[order])[:-1]])
        p[order[before >= top_p]] = 0
    return p / p.sum()


@pytest.mark.parametrize("strategy, options", [
    ("temperature", dict(temperature=0.7)),
    ("top-k", dict(top_k=4, temperature=1.3)),
    ("top-p", dict(top_p=0.8))])
def test_sampling_frequencies_are_the_filtered_softmax(strategy, options):
    """20,000 seeded draws in one call (a row each): a chi-square test of their counts
    against the filtered softmax, and no draw of a filtered-out token. The seed is fixed, so
    the test cannot flake; it would fail for a wrong filter or a biased draw."""
    logits = np.random.default_rng(2).standard_normal(12).astype(np.float32)
    expected = _filtered_softmax(logits.astype(np.float64), strategy, **{
        "temperature": 1.0, **options})
    rows = 20000
    batch = pyburn.tensor(logits.tolist(), device="cpu").unsqueeze(0).expand(rows, 12)
    drawn = Sampler(strategy, **options)(batch, pyburn.Generator(11)).numpy()
    counts = np.bincount(drawn, minlength=12)
    kept = expected > 0
    assert counts[~kept].sum() == 0
    assert kept.sum() < 12 or strategy == "temperature"
    assert stats.chisquare(counts[kept], expected[kept] * rows).pvalue > 1e-3


@pytest.mark.parametrize("options, message", [
    (dict(strategy="beam"), "strategy must be one of"),
    (dict(temperature=0.0, strategy="temperature"), "temperature must be a positive"),
    (dict(temperature=math.inf, strategy="temperature"), "temperature must be a positive"),
    (dict(temperature=0.5), "temperature is for the sampling strategies"),
    (dict(top_k=5), "top_k is for strategy 'top-k'"),
    (dict(strategy="top-k"), "needs top_k"),
    (dict(strategy="top-k", top_k=0), "needs top_k"),
    (dict(strategy="top-p", top_p=1.5), "needs top_p"),
    (dict(strategy="top-p", top_p=0.5, top_k=3), "top_k is for strategy 'top-k'"),
    (dict(eos_token_id=-1), "eos_token_id"),
    (dict(generator=7), "generator must be a pyburn.Generator")])
def test_bad_generation_parameters_are_refused(options, message):
    model = created("tinyllama-1.1b", "cpu")
    with pytest.raises(pyburn.ArgumentError, match=message):
        generate(model, pyburn.tensor(PROMPT, device="cpu"), 3, **options)


# ---- ONNX ------------------------------------------------------------------------------------

def test_onnx_round_trip(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model = created("llama-3.2-1b", "cpu")
    ids = pyburn.tensor(PROMPT, device="cpu")
    path = str(tmp_path / "llama.onnx")
    pyburn.onnx.export(model, ids, path)
    expected = model(ids).numpy()
    assert_close(pyburn.onnx.load(path, device="cpu")(ids).numpy(), expected)
    session = ort.InferenceSession(path)
    assert_close(session.run(None, {"input": np.array(PROMPT, dtype=np.int32)})[0], expected)
