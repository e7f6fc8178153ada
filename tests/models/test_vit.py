"""The Vision Transformer against Hugging Face transformers' ViTForImageClassification (a tiny
one, randomly initialised here: nothing is downloaded). Its files in the layout the Hub
publishes (``save_pretrained``'s ``.safetensors``, and the same tensors as a ``torch.save``
``.pth``) load into "vit-base-patch16-224", and the same tensors in timm's layout into
"vit_tiny_patch16_224"; all give transformers' logits on cpu and wgpu. The published
configurations have the publishers' parameter counts; one ONNX round trip; misuse named.

timm itself cannot be installed here (it imports torchvision, whose wheels want another
torch), so its files are transformers' tensors re-keyed: timm's documented names
(``cls_token``, ``pos_embed``, ``blocks.N.attn.qkv``, ...) with the query, key and value
projections concatenated in that order into ``qkv``, which is how timm's ViT holds them."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import models
from pyburn.errors import ArgumentError, ShapeError
from pyburn.models import VisionTransformer
from pyburn.models.vit import TIMM_VIT, TRANSFORMERS_KEYS, TRANSFORMERS_VIT

from .zoo_checks import (
    DEVICES,
    assert_files_give_outputs,
    assert_onnx_round_trip,
    images,
    require,
    save_weights,
)

torch, transformers, safetensors_torch, _ = require("torch", "transformers",
                                                    "safetensors.torch", "onnxruntime")

#: the tiny configuration, in pyburn's names and in transformers'
TINY = {"image_size": 32, "patch_size": 8, "dim": 32, "depth": 2, "heads": 2,
        "num_classes": 10, "layer_norm_eps": 1e-6}
HF_TINY = {"image_size": 32, "patch_size": 8, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 128, "layer_norm_eps": 1e-6,
           "hidden_act": "gelu", "num_labels": 10}
#: the zoo's entry for each publisher's layout
ENTRIES = {"transformers": "vit-base-patch16-224", "timm": "vit_tiny_patch16_224"}


def timm_layout(hf: dict) -> dict:
    """transformers' published tensors under timm's keys, q, k and v concatenated."""
    state = {"cls_token": hf["vit.embeddings.cls_token"],
             "pos_embed": hf["vit.embeddings.position_embeddings"]}
    for part in ("weight", "bias"):
        state[f"patch_embed.proj.{part}"] = hf[f"vit.embeddings.patch_embeddings.projection."
                                               f"{part}"]
    for i in range(HF_TINY["num_hidden_layers"]):
        theirs, ours = f"vit.encoder.layer.{i}.", f"blocks.{i}."
        for part in ("weight", "bias"):
            state[f"{ours}norm1.{part}"] = hf[f"{theirs}layernorm_before.{part}"]
            state[f"{ours}attn.qkv.{part}"] = torch.cat(
                [hf[f"{theirs}attention.attention.{p}.{part}"]
                 for p in ("query", "key", "value")])
            state[f"{ours}attn.proj.{part}"] = hf[f"{theirs}attention.output.dense.{part}"]
            state[f"{ours}norm2.{part}"] = hf[f"{theirs}layernorm_after.{part}"]
            state[f"{ours}mlp.fc1.{part}"] = hf[f"{theirs}intermediate.dense.{part}"]
            state[f"{ours}mlp.fc2.{part}"] = hf[f"{theirs}output.dense.{part}"]
    for part in ("weight", "bias"):
        state[f"norm.{part}"] = hf[f"vit.layernorm.{part}"]
        state[f"head.{part}"] = hf[f"classifier.{part}"]
    return state


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """transformers' tiny ViTForImageClassification (seeded; every parameter drawn afresh, so
    that no bias is zero, no LayerNorm an identity, and attention is far from uniform), its
    files by layout and format, and its logits on `images()`."""
    torch.manual_seed(0)
    model = transformers.ViTForImageClassification(transformers.ViTConfig(**HF_TINY)).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
            elif isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
                module.weight.normal_(0.0, 0.3)
                module.bias.uniform_(-0.3, 0.3)
        model.vit.embeddings.cls_token.normal_()
        model.vit.embeddings.position_embeddings.normal_()
    folder = tmp_path_factory.mktemp("vit")
    model.save_pretrained(folder)  # the Hub's layout: vit.encoder.layer.N.attention...
    hf = safetensors_torch.load_file(folder / "model.safetensors")
    files = {"transformers": [folder / "model.safetensors", folder / "pytorch_model.pth"],
             "timm": list(save_weights(timm_layout(hf), folder, "timm"))}
    torch.save(hf, files["transformers"][1])
    torch.save(model.state_dict(), folder / "state_dict.pth")  # transformers 5's own names
    with torch.no_grad():
        logits = model(pixel_values=images()[0]).logits.numpy()
    return model, folder, files, logits


def test_published_sizes_keys_and_preprocessing():
    """timm's ViT-Ti/16 and Google's ViT-B/16 have their publishers' parameter counts (no
    torch weights built); timm's keys are the model's own."""
    tiny = models.create("vit_tiny_patch16_224", device="cpu")
    assert tiny.num_params() == 5_717_416
    shapes = {k: v.shape for k, v in tiny.state_dict().items()}
    assert list(shapes)[:4] == ["cls_token", "pos_embed", "patch_embed.proj.weight",
                                "patch_embed.proj.bias"]
    assert (shapes["cls_token"], shapes["pos_embed"], shapes["blocks.11.attn.qkv.weight"],
            shapes["blocks.11.mlp.fc1.weight"], shapes["head.weight"]) == \
        ((1, 1, 192), (1, 197, 192), (576, 192), (768, 192), (1000, 192))
    assert tiny.blocks[0].norm1.eps == 1e-6
    keys = VisionTransformer(**TINY, qkv_bias=False, device="cpu").state_dict()
    assert "blocks.0.attn.qkv.bias" not in keys and "blocks.0.attn.proj.bias" in keys
    # ViT-B/16 from one of its twelve blocks (building all 86 M parameters takes seconds)
    base = models.create("vit-base-patch16-224", device="cpu", depth=1)
    assert base.num_params() + 11 * base.blocks[0].num_params() == 86_567_656
    assert base.blocks[0].norm1.eps == 1e-12 and base.pos_embed.shape == (1, 197, 768)
    timm, hf = models.entry("vit_tiny_patch16_224"), models.entry("vit-base-patch16-224")
    assert (timm.weights_from, timm.key_remap, timm.preprocessing) == ("timm", (), TIMM_VIT)
    assert (hf.weights_from, hf.key_remap, hf.preprocessing) == \
        ("transformers", TRANSFORMERS_KEYS, TRANSFORMERS_VIT)
    assert (TIMM_VIT.resize, TIMM_VIT.crop, TIMM_VIT.mean, TIMM_VIT.std) == \
        (248, 224, (0.5,) * 3, (0.5,) * 3)


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
def test_both_publishers_files_give_transformers_logits(published, on):
    _, _, files, logits = published
    for layout, paths in files.items():
        assert_files_give_outputs(ENTRIES[layout], paths, on, images()[1], logits, **TINY)


def test_transformers_5_state_dict_loads(published):
    """``torch.save(model.state_dict())`` under transformers 5 (``vit.layers.N.attention.
    q_proj``, ...: not the Hub's names) loads through the same key remapping."""
    model, folder, _, logits = published
    assert "vit.layers.0.attention.q_proj.weight" in model.state_dict()
    assert_files_give_outputs("vit-base-patch16-224", [folder / "state_dict.pth"], "cpu",
                              images()[1], logits, **TINY)


def test_onnx_round_trip(published, tmp_path):
    _, _, files, _ = published
    model = models.create("vit_tiny_patch16_224", weights=files["timm"][1], device="cpu",
                          **TINY)
    assert_onnx_round_trip(model, images(seed=1)[1], tmp_path / "vit.onnx")


def test_misuse_is_named(published):
    _, _, files, _ = published
    model = VisionTransformer(**TINY, device="cpu")
    with pytest.raises(ShapeError, match="for 32x32 images, got 64x64"):
        model(pyburn.zeros(1, 3, 64, 64, device="cpu"))
    with pytest.raises(ShapeError, match=r"RGB images.*\(1, 1, 32, 32\)"):
        model(pyburn.zeros(1, 1, 32, 32, device="cpu"))
    with pytest.raises(ArgumentError, match=r"dim \(30\) must be divisible by heads \(4\)"):
        VisionTransformer(dim=30, heads=4, device="cpu")
    with pytest.raises(ArgumentError, match=r"image_size \(30\) must be a multiple"):
        VisionTransformer(image_size=30, device="cpu")
    # one publisher's file into the other's layout: the keys that differ are named
    with pytest.raises(ArgumentError, match="(?s)missing .*'blocks.0.attn.q_proj.weight'"
                                            ".*unused .*'blocks.0.attn.qkv.weight'"):
        models.create("vit-base-patch16-224", weights=files["timm"][0], device="cpu", **TINY)
