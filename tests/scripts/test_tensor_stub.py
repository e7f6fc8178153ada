"""scripts/tensor_stub.py and the stub it writes: pyburn/_tensor.pyi is what the generator
makes of the package now, it declares every public member of Tensor, and the generator
writes installed functions with their real signatures (or says which name it cannot place)."""

from __future__ import annotations

import ast
import re
import runpy
from collections.abc import Sequence
from pathlib import Path

import pytest
import tensor_stub

import pyburn
from pyburn import Tensor

STUB = tensor_stub.STUB
USAGE = Path(__file__).resolve().parents[1] / "typing" / "usage.py"


def stub_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(the members of class Tensor, the module-level names) that the stub declares."""
    members: set[str] = set()
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Tensor":
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            top.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
    return members, top


def test_the_stub_is_current():
    text = tensor_stub.generate()
    current = STUB.read_text() if STUB.exists() else ""
    assert current == text, tensor_stub.stale_message(current, text)


def test_every_public_member_of_tensor_is_in_the_stub():
    members, top = stub_names(ast.parse(STUB.read_text()))
    inherited = {n for n in vars(Tensor) if any(vars(Tensor)[n] is vars(b).get(n)
                                                for b in Tensor.__mro__[1:])}
    public = {n for n in dir(Tensor) if not n.startswith("_")}
    dunders = {n for n in vars(Tensor) if n.startswith("__") and n.endswith("__")}
    dunders -= tensor_stub.CLASS_MACHINERY | inherited
    assert len(public) > 150  # the installed methods are there at run time
    assert sorted((public | dunders) - members) == []
    module_public = {n for n, v in vars(pyburn._tensor).items() if not n.startswith("_")
                     and getattr(v, "__module__", "pyburn._tensor") == "pyburn._tensor"
                     and not isinstance(v, type(pyburn))}
    assert sorted(module_public - top) == []


def test_the_stub_is_valid_python_with_no_docstrings_but_its_own():
    tree = ast.parse(STUB.read_text())
    docstrings = [n for n in ast.walk(tree) if isinstance(n, ast.Expr)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]
    assert len(docstrings) == 1


def test_check_reports_a_stale_stub_with_a_diff(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "_tensor.pyi"
    stale.write_text(STUB.read_text().replace("    def exp(self) -> Tensor: ...\n", ""))
    monkeypatch.setattr(tensor_stub, "STUB", stale)
    assert tensor_stub.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "pyburn/_tensor.pyi is stale (1 lines to add, 0 to remove)" in err
    assert "run `python scripts/tensor_stub.py`" in err
    assert "+    def exp(self) -> Tensor: ..." in err
    assert tensor_stub.main([]) == 0 and stale.read_text() == STUB.read_text()
    assert tensor_stub.main(["--check"]) == 0


def _fake_op(x: Tensor, dims: Sequence[int], *rest: Tensor, flag: bool = False) -> list[Tensor]:
    return [x]


def _rank(x: Tensor) -> int:
    return len(x.shape)


def _unplaceable(x: Tensor, other: Frob) -> Tensor:  # noqa: F821 - the point of the test
    return x


def test_an_installed_function_gets_its_signature_with_self(monkeypatch):
    monkeypatch.setattr(Tensor, "zz_fake", _fake_op, raising=False)
    monkeypatch.setattr(Tensor, "zz_rank", property(_rank), raising=False)
    monkeypatch.setattr(Tensor, "zz_static", staticmethod(_rank), raising=False)
    text = tensor_stub.generate()
    assert "    @property\n    def zz_rank(self) -> builtins.int: ..." in text
    assert "    @staticmethod\n    def zz_static(x: Tensor) -> builtins.int: ..." in text
    (cls,) = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)]
    (fake,) = [n for n in cls.body if getattr(n, "name", None) == "zz_fake"]
    assert ast.unparse(fake.args) == ("self, dims: Sequence[builtins.int], *rest: Tensor, "
                                      "flag: builtins.bool=False")
    assert ast.unparse(fake.returns) == "list[Tensor]"
    # imported with whatever else the stub takes from collections.abc
    assert re.search(r"^from collections\.abc import (\w+, )*Sequence\b", text, re.MULTILINE)


def test_a_name_the_generator_cannot_place_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(Tensor, "zz_fake", _unplaceable, raising=False)
    with pytest.raises(tensor_stub.StubError, match=r"Tensor\.zz_fake \(other\): 'Frob' is not "
                       r"defined at the top level of"):
        tensor_stub.generate()


def test_the_typing_program_runs():
    """tests/typing/usage.py is for mypy, and a real program too."""
    loss = runpy.run_path(str(USAGE))["main"]("flex")
    assert 0.0 < loss < 10.0
