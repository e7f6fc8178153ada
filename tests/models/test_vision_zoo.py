"""torchvision's image classifiers in the zoo (ResNet-18/34/50, MobileNetV2, SqueezeNet 1.0
and 1.1, MobileNetV3-Small and -Large, EfficientNet-B0): their sizes are torchvision's
published parameter counts, their keys torchvision's, and weights saved from a PyTorch
network of torchvision's layout (`pyburn.bench.torch_zoo`: torchvision itself is not
installed, its wheels want another torch) load through `pyburn.models.create` from ``.pth``
and ``.safetensors`` and give that network's outputs on cpu and wgpu; one ONNX round trip per
family agrees with onnxruntime. EfficientNet's stochastic depth drops whole samples in
training and nothing in eval mode."""

from __future__ import annotations

from dataclasses import replace

import pytest

import pyburn
from pyburn import models
from pyburn.errors import ArgumentError, ShapeError
from pyburn.models.convnets import IMAGENET, StochasticDepth

from .zoo_checks import (
    DEVICES,
    assert_files_give_outputs,
    assert_onnx_round_trip,
    images,
    published_weights,
    require,
)

torch, np, _, _ = require("torch", "numpy", "onnxruntime", "safetensors.torch")
tnn = torch.nn

# the PyTorch networks of torchvision's layout (torchvision is not installed)
from pyburn.bench.torch_zoo import REFERENCES, TorchSqueezeNet  # noqa: E402

#: torchvision's documented parameter counts of the published models (1,000 classes)
PUBLISHED_PARAMS = {"resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032,
                    "mobilenet_v2": 3_504_872, "squeezenet1_0": 1_248_424,
                    "squeezenet1_1": 1_235_496, "mobilenet_v3_small": 2_542_856,
                    "mobilenet_v3_large": 5_483_032, "efficientnet_b0": 5_288_548}
#: keys every torchvision checkpoint of the model has, spelled out
KNOWN_KEYS = {
    "resnet18": ["conv1.weight", "bn1.running_var", "layer1.1.conv2.weight",
                 "layer2.0.downsample.0.weight", "layer4.0.downsample.1.num_batches_tracked",
                 "fc.bias"],
    "resnet50": ["layer1.0.conv3.weight", "layer1.0.downsample.1.weight", "layer3.5.bn3.bias",
                 "fc.weight"],
    "mobilenet_v2": ["features.0.0.weight", "features.0.1.running_mean",
                     "features.1.conv.0.0.weight", "features.1.conv.1.weight",
                     "features.1.conv.2.bias", "features.2.conv.1.0.weight",
                     "features.17.conv.3.running_var", "features.18.0.weight",
                     "classifier.1.weight"],
    "squeezenet1_0": ["features.0.weight", "features.3.squeeze.weight",
                      "features.12.expand3x3.bias", "classifier.1.weight"],
    "squeezenet1_1": ["features.0.weight", "features.6.expand1x1.weight",
                      "features.12.expand3x3.weight", "classifier.1.bias"],
    "mobilenet_v3_small": ["features.0.1.running_var", "features.1.block.0.0.weight",
                           "features.1.block.1.fc1.weight", "features.1.block.1.fc2.bias",
                           "features.1.block.2.1.running_mean",
                           "features.4.block.2.fc1.bias", "features.12.0.weight",
                           "classifier.0.weight", "classifier.3.bias"],
    "mobilenet_v3_large": ["features.1.block.1.1.weight", "features.2.block.0.0.weight",
                           "features.4.block.2.fc2.weight", "features.16.1.bias",
                           "classifier.3.weight"],
    "efficientnet_b0": ["features.0.0.weight", "features.1.0.block.0.0.weight",
                        "features.1.0.block.1.fc1.weight", "features.1.0.block.2.1.running_var",
                        "features.2.0.block.0.0.weight", "features.6.3.block.2.fc2.bias",
                        "features.6.3.block.3.1.bias", "features.8.0.weight",
                        "classifier.1.weight"],
}
#: the small configuration each model is tested in (narrow ResNets, 10 classes)
CONFIGS = {"resnet18": {"width": 8}, "resnet34": {"width": 8}, "resnet50": {"width": 8},
           "mobilenet_v2": {"width_mult": 0.35}, "squeezenet1_0": {}, "squeezenet1_1": {},
           "mobilenet_v3_small": {"width_mult": 0.5}, "mobilenet_v3_large": {"width_mult": 0.25},
           "efficientnet_b0": {"width_mult": 0.25, "depth_mult": 0.5}}
CLASSES = 10


def reference(name: str):
    """The PyTorch network of `name` in its test configuration, seeded, with random batch
    norm statistics and affine parameters (fresh ones would make each batch norm an
    identity), in eval mode."""
    torch.manual_seed(sum(map(ord, name)))
    net = REFERENCES[name](CLASSES, **CONFIGS[name])
    for module in net.modules():
        if isinstance(module, tnn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)
            module.num_batches_tracked.fill_(100)
    if isinstance(net, TorchSqueezeNet):  # most scores positive, past the closing ReLU
        net.classifier[1].bias.data.add_(0.1)
    return net.eval()


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """name -> (.pth path, .safetensors path, reference outputs): each model's weights saved
    once as torchvision would publish them, with the reference network's outputs on two
    32x32 `images()`."""
    return published_weights(tmp_path_factory, reference, images()[0])


@pytest.mark.parametrize("name", PUBLISHED_PARAMS)
def test_sizes_and_keys_are_torchvisions(name):
    """The published configuration has torchvision's parameter count (and so has the PyTorch
    network the other tests take as torchvision's), and its keys are the network's."""
    model = models.create(name, device="cpu")
    twin = REFERENCES[name](1000)
    assert model.num_params() == sum(p.numel() for p in twin.parameters()) == \
        PUBLISHED_PARAMS[name]
    keys = list(model.state_dict())
    assert keys == list(twin.state_dict())
    assert set(KNOWN_KEYS.get(name, [])) <= set(keys)


@pytest.mark.parametrize("on", DEVICES)  # not `device`: conftest's would add flex
@pytest.mark.parametrize("name", CONFIGS)
def test_torchvision_weights_give_torchvisions_outputs(name, on, published):
    pth, safetensors, expected = published(name)
    assert_files_give_outputs(name, (pth, safetensors), on, images()[1], expected,
                              num_classes=CLASSES, **CONFIGS[name])


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "squeezenet1_1",
                                  "mobilenet_v3_small", "efficientnet_b0"])
def test_onnx_round_trip(name, published, tmp_path):
    _, safetensors, _ = published(name)
    model = models.create(name, weights=safetensors, device="cpu", num_classes=CLASSES,
                          **CONFIGS[name])
    assert_onnx_round_trip(model, images(seed=1)[1], tmp_path / f"{name}.onnx", name)


def test_a_new_head_loads_the_rest(published):
    """Fine-tuning: another number of classes refuses a strict load, naming the head, and
    loads everything else with ``strict=False``."""
    pth, _, _ = published("resnet18")
    with pytest.raises(ArgumentError, match=r"fc\.weight.*\(3, 64\).*\(10, 64\)"):
        models.create("resnet18", weights=pth, device="cpu", num_classes=3, width=8)
    model = models.create("resnet18", weights=pth, device="cpu", num_classes=3, width=8,
                          strict=False)
    assert model(pyburn.zeros(1, 3, 32, 32, device="cpu")).shape == (1, 3)
    np.testing.assert_array_equal(np.array(model.layer4[1].conv2.weight.tolist()),
                                  reference("resnet18").layer4[1].conv2.weight.detach().numpy())


def test_stochastic_depth_drops_whole_samples_in_training_only():
    drop = StochasticDepth(0.5)  # a new module is in training mode
    pyburn.manual_seed(0)
    x = pyburn.ones(256, 3, 2, 2, device="cpu")
    samples = {tuple(np.unique(sample)) for sample in np.array(drop(x).tolist())}
    assert samples == {(0.0,), (2.0,)}  # whole samples dropped, the rest scaled by 1 / (1 - p)
    assert drop.eval()(x) is x
    with pytest.raises(ArgumentError, match=r"p must be a probability.*1\.5"):
        StochasticDepth(1.5)
    # EfficientNet's block k of K skips with probability 0.2 * k / K
    model = models.create("efficientnet_b0", device="cpu", **CONFIGS["efficientnet_b0"])
    blocks = [block for stage in range(1, 8) for block in model.features[stage]]
    assert [b.stochastic_depth.p for b in blocks] == \
        pytest.approx([0.2 * k / len(blocks) for k in range(len(blocks))])


def test_entries_say_how_to_use_them():
    assert set(PUBLISHED_PARAMS) <= set(models.list_models("image-classification"))
    for name in PUBLISHED_PARAMS:
        found = models.entry(name)
        # torchvision evaluated EfficientNet's weights with bicubic resizing
        recipe = replace(IMAGENET, interpolation="bicubic" if name == "efficientnet_b0"
                         else "bilinear")
        assert (found.weights_from, found.key_remap, found.labels, found.preprocessing) == \
            ("torchvision", (), (), recipe), name
    assert (IMAGENET.resize, IMAGENET.crop) == (256, 224)
    assert IMAGENET.mean == (0.485, 0.456, 0.406) and IMAGENET.std == (0.229, 0.224, 0.225)


def test_misuse_is_named():
    model = models.create("squeezenet1_1", device="cpu", num_classes=2)
    with pytest.raises(ShapeError, match=r"SqueezeNet takes RGB images.*\(1, 1, 32, 32\)"):
        model(pyburn.zeros(1, 1, 32, 32, device="cpu"))
    with pytest.raises(ArgumentError, match="versions '1_0', '1_1', got '2_0'"):
        models.SqueezeNet("2_0", device="cpu")
