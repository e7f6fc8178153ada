"""torchvision's image classifiers in the zoo (ResNet-18/34/50, MobileNetV2, SqueezeNet 1.0
and 1.1): their sizes are torchvision's published parameter counts, their keys torchvision's,
and weights saved from a PyTorch network of torchvision's layout (written below: torchvision
itself is not installed, its wheels want another torch) load through `pyburn.models.create`
from ``.pth`` and ``.safetensors`` and give that network's outputs on cpu and wgpu; one ONNX
round trip per family agrees with onnxruntime."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.onnx
from pyburn import models
from pyburn.backends import wgpu
from pyburn.errors import ArgumentError, ShapeError
from pyburn.models.convnets import IMAGENET

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")
safetensors_torch = pytest.importorskip("safetensors.torch")
tnn = torch.nn

#: torchvision's documented parameter counts of the published models (1,000 classes)
PUBLISHED_PARAMS = {"resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032,
                    "mobilenet_v2": 3_504_872, "squeezenet1_0": 1_248_424,
                    "squeezenet1_1": 1_235_496}
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
}
#: the small configuration each model is tested in (narrow ResNets, 10 classes)
CONFIGS = {"resnet18": {"width": 8}, "resnet34": {"width": 8}, "resnet50": {"width": 8},
           "mobilenet_v2": {"width_mult": 0.35}, "squeezenet1_0": {}, "squeezenet1_1": {}}
CLASSES = 10
DEVICES = ["cpu", pytest.param("wgpu", marks=pytest.mark.skipif(
    wgpu.unavailable_reason() is not None, reason="no wgpu adapter"))]


# ---- the PyTorch networks of torchvision's layout (keys, strides, paddings, order) ----

class TorchBlock(tnn.Module):
    """torchvision's BasicBlock, or its Bottleneck (stride in the 3x3 convolution)."""

    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        self.bottleneck = bottleneck
        out = planes * 4 if bottleneck else planes
        if bottleneck:
            self.conv1 = tnn.Conv2d(cin, planes, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.conv2 = tnn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
            self.conv3 = tnn.Conv2d(planes, out, 1, bias=False)
            self.bn3 = tnn.BatchNorm2d(out)
        else:
            self.conv1 = tnn.Conv2d(cin, planes, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
        self.relu = tnn.ReLU()
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = tnn.Sequential(tnn.Conv2d(cin, out, 1, stride, bias=False),
                                             tnn.BatchNorm2d(out))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.bottleneck:
            y = self.bn3(self.conv3(self.relu(y)))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class TorchResNet(tnn.Module):
    def __init__(self, bottleneck, layers, num_classes, width):
        super().__init__()
        self.conv1 = tnn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = tnn.BatchNorm2d(width)
        self.relu = tnn.ReLU()
        self.maxpool = tnn.MaxPool2d(3, 2, 1)
        cin = width
        for i, n in enumerate(layers):
            blocks = []
            for j in range(n):
                blocks.append(TorchBlock(cin, width * 2 ** i, 2 if i and not j else 1,
                                         bottleneck))
                cin = width * 2 ** i * (4 if bottleneck else 1)
            setattr(self, f"layer{i + 1}", tnn.Sequential(*blocks))
        self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
        self.fc = tnn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def divisible(v, d=8):
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


def conv_bn_relu6(cin, cout, k, stride=1, groups=1):
    """torchvision's Conv2dNormActivation with its defaults for MobileNetV2."""
    return tnn.Sequential(tnn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                     bias=False), tnn.BatchNorm2d(cout), tnn.ReLU6())


class TorchInvertedResidual(tnn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = int(round(cin * t))
        self.use_res_connect = stride == 1 and cin == cout
        expand = [conv_bn_relu6(cin, hidden, 1)] if t != 1 else []
        self.conv = tnn.Sequential(*expand, conv_bn_relu6(hidden, hidden, 3, stride, hidden),
                                   tnn.Conv2d(hidden, cout, 1, bias=False), tnn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class TorchMobileNetV2(tnn.Module):
    def __init__(self, num_classes, width_mult):
        super().__init__()
        cin = divisible(32 * width_mult)
        last = divisible(1280 * max(1.0, width_mult))
        layers = [conv_bn_relu6(3, cin, 3, 2)]
        for t, c, n, s in [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                           [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]:
            for i in range(n):
                layers.append(TorchInvertedResidual(cin, divisible(c * width_mult),
                                                    s if i == 0 else 1, t))
                cin = divisible(c * width_mult)
        layers.append(conv_bn_relu6(cin, last, 1))
        self.features = tnn.Sequential(*layers)
        self.classifier = tnn.Sequential(tnn.Dropout(0.2), tnn.Linear(last, num_classes))

    def forward(self, x):
        x = tnn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class TorchFire(tnn.Module):
    def __init__(self, cin, s, e1, e3):
        super().__init__()
        self.squeeze = tnn.Conv2d(cin, s, 1)
        self.expand1x1 = tnn.Conv2d(s, e1, 1)
        self.expand3x3 = tnn.Conv2d(s, e3, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1)


class TorchSqueezeNet(tnn.Module):
    def __init__(self, version, num_classes):
        super().__init__()

        def pool():
            return tnn.MaxPool2d(3, 2, ceil_mode=True)

        if version == "1_0":
            self.features = tnn.Sequential(
                tnn.Conv2d(3, 96, 7, 2), tnn.ReLU(), pool(), TorchFire(96, 16, 64, 64),
                TorchFire(128, 16, 64, 64), TorchFire(128, 32, 128, 128), pool(),
                TorchFire(256, 32, 128, 128), TorchFire(256, 48, 192, 192),
                TorchFire(384, 48, 192, 192), TorchFire(384, 64, 256, 256), pool(),
                TorchFire(512, 64, 256, 256))
        else:
            self.features = tnn.Sequential(
                tnn.Conv2d(3, 64, 3, 2), tnn.ReLU(), pool(), TorchFire(64, 16, 64, 64),
                TorchFire(128, 16, 64, 64), pool(), TorchFire(128, 32, 128, 128),
                TorchFire(256, 32, 128, 128), pool(), TorchFire(256, 48, 192, 192),
                TorchFire(384, 48, 192, 192), TorchFire(384, 64, 256, 256),
                TorchFire(512, 64, 256, 256))
        self.classifier = tnn.Sequential(tnn.Dropout(0.5), tnn.Conv2d(512, num_classes, 1),
                                         tnn.ReLU(), tnn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


REFERENCES = {
    "resnet18": lambda c, width=64: TorchResNet(False, (2, 2, 2, 2), c, width),
    "resnet34": lambda c, width=64: TorchResNet(False, (3, 4, 6, 3), c, width),
    "resnet50": lambda c, width=64: TorchResNet(True, (3, 4, 6, 3), c, width),
    "mobilenet_v2": lambda c, width_mult=1.0: TorchMobileNetV2(c, width_mult),
    "squeezenet1_0": lambda c: TorchSqueezeNet("1_0", c),
    "squeezenet1_1": lambda c: TorchSqueezeNet("1_1", c),
}


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


def images(seed: int = 0):
    """A batch of two 32x32 images, in torch and as numpy."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 32, 32, generator=gen)
    return x, x.numpy()


def assert_close(actual, expected, what):
    expected = np.asarray(expected)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-4,
                               atol=1e-5 * max(1.0, float(np.abs(expected).max())),
                               err_msg=what)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """name -> (.pth path, .safetensors path, reference outputs): each model's weights saved
    once as torchvision would publish them, with the reference network's outputs."""
    made = {}

    def get(name):
        if name not in made:
            net = reference(name)
            folder = tmp_path_factory.mktemp(name)
            state = net.state_dict()
            torch.save(state, folder / f"{name}.pth")
            safetensors_torch.save_file({k: v.contiguous() for k, v in state.items()},
                                        folder / f"{name}.safetensors")
            with torch.no_grad():
                expected = net(images()[0]).numpy()
            made[name] = (folder / f"{name}.pth", folder / f"{name}.safetensors", expected)
        return made[name]

    return get


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
    x = pyburn.tensor(images()[1], device=on)
    for path in (pth, safetensors):
        model = models.create(name, weights=path, device=on, num_classes=CLASSES,
                              **CONFIGS[name])
        with pyburn.no_grad():
            assert_close(model(x).tolist(), expected, f"{name} from {path.name} on {on}")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "squeezenet1_1"])
def test_onnx_round_trip(name, published, tmp_path):
    _, safetensors, _ = published(name)
    model = models.create(name, weights=safetensors, device="cpu", num_classes=CLASSES,
                          **CONFIGS[name])
    x_np = images(seed=1)[1]
    x = pyburn.tensor(x_np, device="cpu")
    path = tmp_path / f"{name}.onnx"
    pyburn.onnx.export(model, x, path)
    with pyburn.no_grad():
        ours = np.array(model(x).tolist())
        again = np.array(pyburn.onnx.load(path, device="cpu")(x).tolist())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (theirs,) = session.run(None, {session.get_inputs()[0].name: x_np})
    assert_close(again, ours, f"{name}: pyburn.onnx.load")
    assert_close(theirs, ours, f"{name}: onnxruntime")


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


def test_entries_say_how_to_use_them():
    assert set(PUBLISHED_PARAMS) <= set(models.list_models("image-classification"))
    for name in PUBLISHED_PARAMS:
        found = models.entry(name)
        assert (found.weights_from, found.key_remap, found.labels, found.preprocessing) == \
            ("torchvision", (), (), IMAGENET), name
    assert (IMAGENET.resize, IMAGENET.crop) == (256, 224)
    assert IMAGENET.mean == (0.485, 0.456, 0.406) and IMAGENET.std == (0.229, 0.224, 0.225)


def test_misuse_is_named():
    model = models.create("squeezenet1_1", device="cpu", num_classes=2)
    with pytest.raises(ShapeError, match=r"SqueezeNet takes RGB images.*\(1, 1, 32, 32\)"):
        model(pyburn.zeros(1, 1, 32, 32, device="cpu"))
    with pytest.raises(ArgumentError, match="versions '1_0', '1_1', got '2_0'"):
        models.SqueezeNet("2_0", device="cpu")
