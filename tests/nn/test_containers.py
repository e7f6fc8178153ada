"""Sequential, ModuleList and ModuleDict: the same names, order and list/dict behaviour as
PyTorch's."""

from __future__ import annotations

from collections import OrderedDict

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, strip_counts, torch


def _layers(lib, n=3):
    kwargs = {"device": "flex"} if lib is nn else {}
    return [lib.Linear(2, 2, **kwargs) if i % 2 == 0 else lib.Tanh() for i in range(n)]


def _names(module):
    return [name for name, _ in module.named_children()]


def test_sequential_forward_matches_pytorch(device):
    ours = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, device=device),
                         nn.BatchNorm2d(3, device=device), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(12, 2, device=device))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3),
                                 torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                 torch.nn.Linear(12, 2))
    x, = inputs_for("sequential", (2, 2, 4, 4))
    check_twin(device, ours, theirs, [x], train=True, steps=2)


def test_sequential_from_ordered_dict():
    layers = OrderedDict([("fc", nn.Linear(2, 3, device="flex")), ("act", nn.ReLU())])
    model = nn.Sequential(layers)
    assert _names(model) == ["fc", "act"] and model.fc is layers["fc"]
    assert list(model.state_dict()) == ["fc.weight", "fc.bias"]
    assert _names(model[1:]) == ["act"]  # slices keep the names, as in PyTorch


def test_list_behaviour_matches_pytorch():
    for kind in ("Sequential", "ModuleList"):
        ours_layers, theirs_layers = _layers(nn, 5), _layers(torch.nn, 5)
        ours = getattr(nn, kind)(*ours_layers) if kind == "Sequential" else nn.ModuleList(
            ours_layers)
        theirs = getattr(torch.nn, kind)(*theirs_layers) if kind == "Sequential" else \
            torch.nn.ModuleList(theirs_layers)
        assert len(ours) == len(theirs) == 5
        assert ours[-1] is ours_layers[4] and ours[1] is ours_layers[1]
        assert type(ours[1:4]) is type(ours) and len(ours[1:4]) == 3
        assert _names(ours[::2]) == _names(theirs[::2])
        assert list(ours) == ours_layers
        for container, lib in ((ours, nn), (theirs, torch.nn)):
            del container[1]
            container.append(lib.ReLU())
            container.insert(1, lib.Sigmoid())
            container[0] = lib.Identity()
        assert _names(ours) == _names(theirs)
        assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
        with pytest.raises(pyburn.IndexOutOfRange, match="out of range"):
            ours[10]


def test_module_list_registers_and_extends():
    blocks = nn.ModuleList()
    assert repr(blocks) == "ModuleList()"
    blocks.extend(nn.Linear(2, 2, device="flex") for _ in range(2))
    blocks += [nn.ReLU()]
    assert len(blocks) == 3 and len(list(blocks.parameters())) == 4
    assert blocks.pop(0) is not None and _names(blocks) == ["0", "1"]
    assert len(blocks + nn.ModuleList([nn.Tanh()])) == 3
    with pytest.raises(pyburn.ArgumentError, match="Module or None"):
        blocks.append(3)


def test_module_list_repr_groups_repeats_like_pytorch():
    ours = nn.ModuleList([nn.Linear(2, 2, device="flex") for _ in range(3)] + [nn.ReLU()] * 2
                         + [nn.Linear(2, 2, device="flex")])
    theirs = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)] + [torch.nn.ReLU()] * 2
                                 + [torch.nn.Linear(2, 2)])
    assert strip_counts(repr(ours)) == repr(theirs)
    assert "(0-2): 3 x Linear(in_features=2, out_features=2, bias=True)  # 6 params" in repr(ours)


def test_module_dict_matches_pytorch():
    ours = nn.ModuleDict({"b": nn.Linear(2, 2, device="flex"), "a": nn.ReLU()})
    theirs = torch.nn.ModuleDict({"b": torch.nn.Linear(2, 2), "a": torch.nn.ReLU()})
    assert list(ours) == list(theirs) == ["b", "a"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours["c"] = nn.Tanh()
    ours.update([("d", nn.Sigmoid())])
    assert list(ours.keys()) == ["b", "a", "c", "d"] and "c" in ours and len(ours) == 4
    assert isinstance(ours.pop("a"), nn.ReLU) and "a" not in ours
    del ours["c"]
    assert [k for k, _ in ours.items()] == ["b", "d"] and len(list(ours.values())) == 2
    with pytest.raises(KeyError, match="keys"):
        ours["zzz"]
    with pytest.raises(pyburn.ArgumentError, match="pairs"):
        ours.update([nn.ReLU()])
    ours.clear()
    assert len(ours) == 0
    assert strip_counts(repr(nn.ModuleDict({"x": nn.ReLU()}))) == repr(
        torch.nn.ModuleDict({"x": torch.nn.ReLU()}))
