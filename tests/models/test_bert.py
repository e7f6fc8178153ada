"""The BERT encoders against Hugging Face transformers' BertModel (a tiny one, randomly
initialised here: nothing is downloaded): its ``.pth`` and ``.safetensors`` files load through
`pyburn.models.create` and give its hidden states, pooled output and sentence embeddings on a
padded batch, on cpu and wgpu; the files of its task models and older versions load
strictly; `BertConfig.from_json` reads its ``config.json``; an ONNX round trip; misuse
named."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.onnx
from pyburn.errors import ArgumentError, DTypeError, ShapeError
from pyburn.models import BertConfig, SentenceEncoder, create, mean_pooling
from pyburn.models.bert import ACTIVATIONS

from .zoo_checks import DEVICES, assert_close, require, save_weights

torch, np, transformers, ort, _ = require("torch", "numpy", "transformers", "onnxruntime",
                                          "safetensors.torch")

TINY = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64}
#: two sequences of different lengths, the shorter padded with id 0
IDS = [[2, 15, 27, 33, 9, 41, 3], [2, 8, 19, 3, 0, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]]
TYPES = [[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0]]


def batch(device, rows: tuple[list[list[int]], ...] = (IDS, MASK, TYPES)):
    """The token ids, attention mask and token types as pyburn tensors on `device`."""
    return tuple(pyburn.tensor(r, device=device) for r in rows)


def run(model, rows: tuple[list[list[int]], ...] = (IDS, MASK, TYPES)):
    """transformers' model on the batch, without gradients."""
    ids, mask, types = (torch.tensor(r) for r in rows)
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, token_type_ids=types)


def masked_mean(hidden):
    """The mean of transformers' hidden states over the batch's real tokens (MASK)."""
    weights = torch.tensor(MASK, dtype=torch.float32).unsqueeze(-1)
    return (hidden * weights).sum(1) / weights.sum(1)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """transformers' tiny BertModel (seeded, eval mode), its files, and its outputs."""
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**TINY)).eval()
    folder = tmp_path_factory.mktemp("bert")
    save_weights(model.state_dict(), folder, "model")
    model.config.to_json_file(str(folder / "config.json"))
    return model, folder, run(model)


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
def test_matches_transformers_from_both_files(reference, on):
    model, folder, out = reference
    ids, mask, types = batch(on)
    for file in ("model.pth", "model.safetensors"):
        bert = create("bert-base", weights=folder / file, device=on, **TINY)
        hidden = bert(ids, mask, types)
        assert_close(hidden, out.last_hidden_state, file)
        assert_close(bert.pooler(hidden), out.pooler_output, file)
    # sentence-transformers' all-MiniLM-L6-v2 pipeline: mean over the real tokens, then L2
    pooled = masked_mean(out.last_hidden_state)
    encoder = create("all-minilm-l6-v2", weights=folder / "model.safetensors", device=on,
                     **TINY)
    assert_close(encoder(ids, mask, types), torch.nn.functional.normalize(pooled, dim=1))
    assert_close(mean_pooling(hidden, mask), pooled)


def test_task_model_and_older_files_load_strictly(reference, tmp_path):
    """A BertForPreTraining's file (``bert.`` prefix, ``cls.*`` heads) with the
    ``position_ids`` buffer older transformers saved and TensorFlow's ``gamma``/``beta``
    names, as bert-base-uncased's: strict loading takes what the encoder uses; a missing
    or foreign key still fails."""
    torch.manual_seed(1)
    pretraining = transformers.BertForPreTraining(transformers.BertConfig(**TINY)).eval()
    state = {k.replace("LayerNorm.weight", "LayerNorm.gamma")
             .replace("LayerNorm.bias", "LayerNorm.beta"): v
             for k, v in pretraining.state_dict().items()}
    state["bert.embeddings.position_ids"] = torch.arange(512).unsqueeze(0)
    assert any(k.startswith("cls.") for k in state)
    path = tmp_path / "pretraining.pth"
    torch.save(state, path)
    bert = create("bert-base", weights=path, device="cpu", **TINY)
    assert_close(bert(*batch("cpu")), run(pretraining.bert).last_hidden_state)

    missing = {k: v for k, v in state.items() if k != "bert.pooler.dense.bias"}
    foreign = {**state, "classifier.weight": torch.zeros(2, 32)}
    for changed, problem in ((missing, "1 missing .*'pooler.dense.bias'"),
                             (foreign, "1 unused .*'classifier.weight'")):
        torch.save(changed, tmp_path / "changed.pth")
        with pytest.raises(ArgumentError, match=problem):
            create("bert-base", weights=tmp_path / "changed.pth", device="cpu", **TINY)


def test_options_reach_the_constructor(reference):
    """Without the pooler, the file's pooler weights are unused: strict loading refuses it,
    ``strict=False`` loads the rest; without `normalize`, the plain mean."""
    model, folder, out = reference
    options = {**TINY, "normalize": False, "add_pooling_layer": False}
    with pytest.raises(ArgumentError, match="2 unused .*'pooler.dense.weight'"):
        create("all-minilm-l6-v2", weights=folder / "model.pth", device="cpu", **options)
    encoder = create("all-minilm-l6-v2", weights=folder / "model.pth", device="cpu",
                     strict=False, **options)
    assert encoder.pooler is None and "pooler.dense.weight" not in encoder.state_dict()
    ids, mask, types = batch("cpu")
    assert_close(encoder(ids, mask, types), masked_mean(out.last_hidden_state))


def test_config_reads_transformers_config_json(reference):
    _, folder, _ = reference
    assert BertConfig.from_json(folder / "config.json") == BertConfig(**TINY)
    # the defaults are BERT base's, transformers' own defaults
    defaults = transformers.BertConfig()
    assert BertConfig() == BertConfig.from_json(defaults.to_dict())
    assert BertConfig().layer_norm_eps == defaults.layer_norm_eps == 1e-12


@pytest.mark.parametrize("config, match", [
    ({"hidden_size": 30, "num_attention_heads": 4}, "divisible by num_attention_heads"),
    ({"hidden_act": "swish"}, "hidden_act 'swish' is not one of gelu"),
    ({"num_hidden_layers": 0}, "num_hidden_layers must be a positive int"),
    ({"model_type": "roberta"}, "'roberta' model's, not a BERT's"),
    ({"position_embedding_type": "relative_key"}, "only absolute position embeddings"),
])
def test_bad_configs_are_refused(config, match):
    with pytest.raises(ArgumentError, match=match):
        BertConfig.from_json(config)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_are_transformers(name):
    x = torch.linspace(-4.0, 4.0, 41)
    assert_close(ACTIVATIONS[name](pyburn.tensor(x.tolist(), device="cpu")),
                 transformers.activations.ACT2FN[name](x))


def test_registered_minilm_has_all_minilm_l6_v2_sizes():
    encoder = create("all-minilm-l6-v2", device="cpu")
    assert isinstance(encoder, SentenceEncoder) and encoder.normalize
    assert encoder.entry.task == "sentence-embedding"
    assert encoder.entry.weights_from == "transformers"
    # transformers' BertModel of its config.json (with the pooler) has 22,713,216 parameters
    assert encoder.num_params() == 22_713_216
    assert (encoder.config.hidden_size, encoder.config.num_hidden_layers,
            encoder.config.num_attention_heads, encoder.config.intermediate_size) == \
        (384, 6, 12, 1536)


def test_onnx_round_trip_with_dynamic_batch_and_length(reference, tmp_path):
    _, folder, _ = reference
    encoder = create("all-minilm-l6-v2", weights=folder / "model.safetensors", device="cpu",
                     **TINY)
    names = ["input_ids", "attention_mask", "token_type_ids", "position_ids"]

    def inputs(ids, mask):  # the positions are an input: the sequence length is dynamic
        ids, mask = batch("cpu", (ids, mask))
        return (ids, mask, pyburn.zeros_like(ids),
                pyburn.arange(ids.shape[1], device="cpu").expand(ids.shape).contiguous())

    path = tmp_path / "minilm.onnx"
    pyburn.onnx.export(encoder, inputs(IDS, MASK), path, input_names=names,
                       dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names})
    other = inputs([[2, 15, 27, 3, 0], [2, 8, 19, 3, 1], [2, 4, 0, 0, 0]],
                   [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    expected = torch.tensor(encoder(*other).tolist())
    session = ort.InferenceSession(str(path))
    feeds = {n: np.array(t.tolist(), dtype=np.int32) for n, t in zip(names, other)}
    assert_close(pyburn.tensor(session.run(None, feeds)[0].tolist(), device="cpu"), expected)
    assert_close(pyburn.onnx.load(path, device="cpu")(*other), expected)


def test_misuse_is_named():
    model = SentenceEncoder(BertConfig(**TINY, max_position_embeddings=8), device="cpu")
    ids, mask, _ = batch("cpu")
    with pytest.raises(DTypeError, match="input_ids must be integers"):
        model(ids.float())
    with pytest.raises(ShapeError, match=r"attention_mask must have input_ids' shape \(2, 7\)"):
        model(ids, mask[:, :5])
    with pytest.raises(ShapeError, match=r"input_ids must have shape \(batch, sequence\)"):
        model(ids[0])
    with pytest.raises(ShapeError, match="9 tokens is more than the 8 positions"):
        model(pyburn.zeros(1, 9, dtype="int32", device="cpu"))
    with pytest.raises(ShapeError, match="mean_pooling: attention_mask"):
        mean_pooling(pyburn.zeros(2, 7, 4, device="cpu"), mask[:, :3])
