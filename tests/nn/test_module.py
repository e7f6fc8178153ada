"""Module: registration, traversal order (against PyTorch), state_dict save/load, device and
dtype moves that keep object identity, modes, gradients and repr."""

from __future__ import annotations

import copy
import pickle

import pytest

import pyburn
from pyburn import nn
from pyburn.optim import SGD

from .twins import np, strip_counts, torch, torch_state


def _both(lib):
    """The same model in pyburn (lib = pyburn.nn) or PyTorch (lib = torch.nn): parameters,
    buffers and submodules registered in an interleaved order, a shared submodule, a None
    submodule, a None parameter and a non-persistent buffer."""
    device = {"device": "flex"} if lib is nn else {}
    tensor = (lambda *s: pyburn.zeros(*s, device="flex")) if lib is nn else torch.zeros
    param = lib.Parameter

    class Block(lib.Module):
        def __init__(self):
            super().__init__()
            self.scale = param(tensor(3))
            self.conv = lib.Conv1d(3, 3, 1, **device)
            self.register_buffer("mask", tensor(3))
            self.norm = lib.BatchNorm1d(3, **device)

        def forward(self, x):
            return self.norm(self.conv(x)) * self.scale.reshape(3, 1)

    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", tensor(1))
            self.stem = lib.Linear(4, 3, **device)
            self.offset = param(tensor(2))
            self.blocks = lib.ModuleList([Block(), Block()])
            self.register_buffer("cache", tensor(2), persistent=False)
            self.head = lib.Sequential(lib.ReLU(), lib.Linear(3, 2, **device))
            self.tied = self.stem  # the same module twice
            self.missing = None
            self.register_parameter("absent", None)
            self.add_module("nothing", None)

        def forward(self, x):
            return x

    return Net()


def test_traversal_order_matches_pytorch():
    ours, theirs = _both(nn), _both(torch.nn)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        got = [name for name, _ in getattr(ours, method)()]
        want = [name for name, _ in getattr(theirs, method)()]
        assert got == want, method
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [tuple(v.shape) for v in ours.state_dict().values()] == \
           [tuple(v.shape) for v in theirs.state_dict().values()]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == \
           [n for n, _ in theirs.named_parameters(recurse=False)]
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert len(list(ours.children())) == len(list(theirs.children()))


def test_traversal_with_prefix_and_duplicates():
    ours, theirs = _both(nn), _both(torch.nn)
    for kwargs in ({"prefix": "model"}, {"remove_duplicate": False}):
        got = [n for n, _ in ours.named_parameters(**kwargs)]
        assert got == [n for n, _ in theirs.named_parameters(**kwargs)]


def test_parameters_are_the_registered_objects():
    model = _both(nn)
    assert model.stem.weight is dict(model.named_parameters())["stem.weight"]
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())
    assert model.blocks[1].mask is dict(model.named_buffers())["blocks.1.mask"]
    assert model.get_submodule("blocks.0.norm") is model.blocks[0].norm
    with pytest.raises(pyburn.PyburnError, match="no submodule 'nope'"):
        model.get_submodule("blocks.nope")


def test_attribute_kinds():
    m = nn.Module()
    m.w = nn.Parameter(pyburn.ones(2, device="flex"))
    assert "w" in m._parameters and "w" not in m.__dict__
    m.w = None  # a registered parameter may become None
    assert m.w is None and list(m.named_parameters()) == []
    with pytest.raises(pyburn.ArgumentError, match="nn.Parameter or None"):
        m.w = pyburn.ones(2, device="flex")
    m.t = pyburn.ones(2, device="flex")  # a plain tensor attribute is not state
    assert m.state_dict() == {}
    m.register_buffer("b", pyburn.ones(1, device="flex"))
    m.b = pyburn.zeros(1, device="flex")
    assert m.state_dict()["b"].tolist() == [0.0]
    with pytest.raises(pyburn.ArgumentError, match="Tensor or None"):
        m.b = 3
    m.sub = nn.ReLU()
    m.sub = nn.Parameter(pyburn.ones(1, device="flex"))  # a name can change kind
    assert "sub" not in m._modules and "sub" in m._parameters
    del m.sub
    assert not hasattr(m, "sub")
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope  # noqa: B018
    with pytest.raises(pyburn.ArgumentError, match="contain ."):
        m.register_buffer("a.b", None)
    with pytest.raises(pyburn.ArgumentError, match="class attribute"):
        m.register_buffer("forward", None)
    with pytest.raises(pyburn.ArgumentError, match="wrap it in nn.Parameter"):
        m.register_parameter("p", pyburn.ones(1, device="flex"))
    assert "b" in dir(m)


def test_assignment_before_init_is_explained():
    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2, device="flex")

    with pytest.raises(pyburn.ArgumentError, match="super\\(\\).__init__\\(\\)"):
        Broken()


def test_forward_is_required():
    with pytest.raises(NotImplementedError, match="Module does not define forward"):
        nn.Module()(1)


# ---- state_dict and load_state_dict --------------------------------------------------------
def _mlp(device):
    return nn.Sequential(nn.Linear(3, 4, device=device), nn.BatchNorm1d(4, device=device),
                         nn.ReLU(), nn.Linear(4, 2, device=device))


def _torch_mlp():
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                               torch.nn.Linear(4, 2))


def test_state_dict_matches_pytorch_and_loads(device):
    theirs = _torch_mlp()
    ours = _mlp(device)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    weights_before = [p for p in ours.parameters()]
    result = ours.load_state_dict(torch_state(theirs))
    assert result.all_matched and repr(result) == "<All keys matched successfully>"
    missing, unexpected = result  # unpacks like PyTorch's result
    assert missing == [] and unexpected == []
    assert [p for p in ours.parameters()] == weights_before  # the same objects
    for key, value in torch_state(theirs).items():
        got = ours.state_dict()[key]
        np.testing.assert_array_equal(got.numpy(), value.astype(got.numpy().dtype))
    counter = ours.state_dict()["1.num_batches_tracked"]
    assert counter.dtype is (pyburn.int64 if "int64" in device.caps else pyburn.int32)


def test_state_dict_is_a_snapshot_and_keep_vars(device):
    layer = nn.Linear(2, 2, device=device)
    saved = layer.state_dict()
    assert saved["weight"] is not layer.weight and not isinstance(saved["weight"], nn.Parameter)
    before = saved["weight"].tolist()
    nn.init.zeros_(layer.weight)
    assert saved["weight"].tolist() == before
    assert layer.state_dict(keep_vars=True)["weight"] is layer.weight
    assert list(layer.state_dict(prefix="fc.")) == ["fc.weight", "fc.bias"]


def test_strict_load_reports_every_problem_and_changes_nothing(device):
    ours = _mlp(device)
    before = {k: v.tolist() for k, v in ours.state_dict().items()}
    state = torch_state(_torch_mlp())
    del state["0.bias"], state["1.running_var"]
    state["3.weight"] = np.zeros((4, 2), np.float32)
    state["extra.weight"] = np.zeros(1, np.float32)
    state["0.weight"] = state["0.weight"] + 1
    with pytest.raises(pyburn.PyburnError) as info:
        ours.load_state_dict(state)
    text = str(info.value)
    assert "Sequential" in text
    assert "missing keys" in text and "'0.bias'" in text and "'1.running_var'" in text
    assert "unexpected keys" in text and "'extra.weight'" in text
    assert "size mismatch for '3.weight'" in text and "(2, 4)" in text and "(4, 2)" in text
    assert {k: v.tolist() for k, v in ours.state_dict().items()} == before


def test_non_strict_load_loads_what_matches(device):
    ours = _mlp(device)
    state = torch_state(_torch_mlp())
    del state["0.bias"]
    state["3.weight"] = np.zeros((4, 2), np.float32)
    state["extra"] = np.zeros(1, np.float32)
    result = ours.load_state_dict(state, strict=False)
    assert result.missing_keys == ["0.bias"]
    assert result.unexpected_keys == ["extra"]
    assert result.mismatched_keys == {"3.weight": ((2, 4), (4, 2))}
    np.testing.assert_array_equal(ours[0].weight.numpy(), state["0.weight"])
    assert "missing_keys=['0.bias']" in repr(result)


def test_load_casts_and_moves(device, other_device):
    ours = nn.Linear(2, 2, device=device)
    source = nn.Linear(2, 2, device=other_device)
    if "float64" in other_device.caps:
        source = source.double()  # a dtype to cast from, as well as a device to move from
    ours.load_state_dict(source.state_dict())
    assert ours.weight.dtype is pyburn.float32 and ours.weight.device is device
    np.testing.assert_allclose(ours.weight.numpy(), source.weight.numpy(), rtol=1e-7)
    ours.load_state_dict({"weight": [[1, 2], [3, 4]], "bias": np.array([5, 6])})
    assert ours.weight.tolist() == [[1.0, 2.0], [3.0, 4.0]] and ours.bias.tolist() == [5.0, 6.0]
    with pytest.raises(pyburn.PyburnError, match="state_dict value"):
        ours.load_state_dict({"weight": "abc", "bias": [0.0, 0.0]})


def test_load_into_autodiff_model_keeps_parameters_trainable(device):
    dev = device.autodiff()
    ours = nn.Linear(3, 1, device=dev)
    opt = SGD(ours.parameters(), lr=0.1)
    ours.load_state_dict({"weight": np.ones((1, 3), np.float32), "bias": np.zeros(1, np.float32)})
    assert ours.weight.requires_grad and ours.weight.is_leaf
    ours(pyburn.ones(2, 3, device=dev)).sum().backward()
    opt.step()  # the optimizer's references are the loaded parameters
    np.testing.assert_allclose(ours.weight.numpy(), np.full((1, 3), 0.8), rtol=1e-6)


def test_pickle_and_deepcopy_keep_parameters(device):
    dev = device.autodiff()
    model = _mlp(dev)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in clone.parameters())
        assert clone[0].weight is not model[0].weight
        for (k, a), (_, b) in zip(model.state_dict().items(), clone.state_dict().items()):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


def test_shared_parameter_counted_once():
    a = nn.Linear(3, 3, device="flex")
    b = nn.Linear(3, 3, device="flex")
    b.weight = a.weight
    model = nn.Sequential(a, b)
    assert model.num_params() == 9 + 3 + 3
    assert len(list(model.parameters())) == 3
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


# ---- devices, dtypes, gradients ------------------------------------------------------------
def test_to_autodiff_keeps_identity_and_enables_grads(device):
    model = _mlp(device)
    params = list(model.parameters())
    buffers = list(model.buffers())
    values = [p.tolist() for p in params]
    assert not any(p.requires_grad for p in params)
    assert model.to(device.autodiff()) is model
    assert list(model.parameters()) == params and list(model.buffers()) == buffers
    assert all(p.device is device.autodiff() and p.requires_grad and p.is_leaf for p in params)
    assert not any(b.requires_grad for b in buffers)
    assert [p.tolist() for p in params] == values
    model.train()
    model(pyburn.ones(4, 3, device=device.autodiff())).sum().backward()
    assert all(p.grad is not None for p in params)
    model.to(device)  # back to plain: no gradients any more
    assert all(p.device is device and not p.requires_grad and p.grad is None for p in params)


def test_to_another_device(device, other_device):
    model = _mlp(device.autodiff())
    model[0].weight.requires_grad_(False)  # frozen: stays frozen between autodiff devices
    weight = model[3].weight
    model(pyburn.ones(4, 3, device=device.autodiff())).sum().backward()
    model.to(other_device.autodiff())
    assert model[3].weight is weight and weight.device is other_device.autodiff()
    assert weight.grad is not None and weight.grad.device is other_device.autodiff()
    assert not model[0].weight.requires_grad and model[0].bias.requires_grad
    model.to(other_device.name)
    assert all(t.device is other_device for t in model.state_dict().values())


def test_to_dtype_casts_floats_only(device):
    if "float64" not in device.caps:
        pytest.skip("needs float64")
    model = _mlp(device)
    counter = model[1].num_batches_tracked
    model.to(pyburn.float64)
    assert all(p.dtype is pyburn.float64 for p in model.parameters())
    assert model[1].running_mean.dtype is pyburn.float64
    assert counter.dtype is not pyburn.float64 and model[1].num_batches_tracked is counter
    model.float()
    assert all(p.dtype is pyburn.float32 for p in model.parameters())
    model.to(device, "float64")
    assert model[0].weight.dtype is pyburn.float64
    with pytest.raises(pyburn.DTypeError, match="floating-point dtype"):
        model.to(pyburn.int32)


def test_requires_grad_and_zero_grad(device):
    dev = device.autodiff()
    model = _mlp(dev)
    model(pyburn.ones(4, 3, device=dev)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    with pytest.raises(pyburn.DeviceError, match="autodiff"):
        _mlp(device).requires_grad_()


def test_backward_matches_pytorch_through_a_model(device):
    theirs = _torch_mlp().double()
    ours = _mlp(device.autodiff())
    ours.load_state_dict(torch_state(theirs))
    x = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    ours(pyburn.tensor(x, device=device.autodiff())).square().mean().backward()
    theirs(torch.tensor(x, dtype=torch.float64)).square().mean().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def test_training_steps_match_pytorch(device):
    theirs = _torch_mlp().double()
    ours = _mlp(device.autodiff())
    ours.load_state_dict(torch_state(theirs))
    ours_opt = SGD(ours.parameters(), lr=0.1, momentum=0.9)
    theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.normal(size=(6, 3)).astype(np.float32)
        y = rng.integers(0, 2, 6)
        ours_opt.zero_grad()
        nn.CrossEntropyLoss()(ours(pyburn.tensor(x, device=device.autodiff())),
                              pyburn.tensor(y.astype(np.int32), device=device.autodiff())
                              ).backward()
        ours_opt.step()
        theirs_opt.zero_grad()
        torch.nn.CrossEntropyLoss()(theirs(torch.tensor(x, dtype=torch.float64)),
                                    torch.tensor(y)).backward()
        theirs_opt.step()
    for key, value in torch_state(theirs).items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value, rtol=1e-4, atol=1e-5,
                                   err_msg=key)


# ---- modes, helpers, repr ------------------------------------------------------------------
def test_train_eval_apply_num_params():
    model = _both(nn)
    assert model.training and model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(pyburn.ArgumentError, match="bool"):
        model.train("yes")
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"
    assert model.num_params() == sum(p.numel() for p in _both(torch.nn).parameters())


def test_repr_matches_pytorch_with_parameter_counts():
    ours, theirs = _both(nn), _both(torch.nn)
    text = repr(ours)
    assert strip_counts(text) == repr(theirs)
    assert text.endswith(f")  # {ours.num_params():,} params")
    assert "(stem): Linear(in_features=4, out_features=3, bias=True)  # 15 params" in text
    assert "(0): ReLU()\n" in text  # no count for modules without parameters
    big = nn.Linear(1000, 1000, device="flex")
    assert repr(big).endswith("# 1,001,000 params")
