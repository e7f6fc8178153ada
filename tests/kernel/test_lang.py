"""The kernel language's front end: every construct outside the language is a KernelError
naming the file and line of the user's source, and so is a launch that does not fit."""

from __future__ import annotations

import re

import pytest

import pyburn
from pyburn.kernel import KernelError

from .sources import HEADER, load

_LINE_OFFSET = HEADER.count("\n")  # the source's first line is the file's line 4

#: (kernel body, words of the error[, the line it names: the body's last by default]) for
#: constructs outside the language
BAD = [
    ("return 1", "return"),
    ("for i in range(3):\n    break", "break"),
    ("for i in range(3):\n    continue", "continue"),
    ("with open('x'):\n    pass", "with", 0),
    ("v = [1, 2]", "List is not in the kernel language"),
    ("v = 'text'", "str literal"),
    ("v = x[0:2]", "slices"),
    ("v = x", "x is a tensor: index it"),
    ("v = undefined_name + 1", "undefined_name is not defined"),
    ("v = n / 2", "div of i32 values"),
    ("v = x[0] + n", "i32 where f32 is wanted"),
    ("v = x[0] & 1", "bitwise_and of f32"),
    ("if n:\n    v = 1", "a condition is a bool", 0),
    ("v = K.exp(n)", "exp takes an f32"),
    ("v = len(x)", "this call is not in the kernel language"),
    ("v = x[0.5]", "an index is an i32 or a u32"),
    ("x[0] = 1\nn = 3", "n is a parameter"),
    ("for i in range(0, n, n):\n    pass", "a range's step must be a compile-time constant", 0),
    ("v = 1\nif v > 0:\n    s = K.shared(K.f32, 4)", "declare shared arrays at the top"),
    ("s = K.shared(K.f32, n)", "a shared array's size must be a compile-time constant"),
    ("K.barrier(1)", "barrier() takes no arguments"),
    ("a = K.local_array(K.i32, 2)\nK.atomic_add(a, 0, 1)", "a is the invocation's own"),
    ("for i in range(2):\n    a = K.local_array(K.f32, 2)", "declare local_array arrays at the"),
    ("K.atomic_add(x, 0, 1.0)", "atomic_add works on i32 and u32"),
    ("v = x[0]\nv = n", "i32 where f32 is wanted"),
    ("x[0, 1] = 1.0", "x has 1 dims"),
    ("1 + 2", "a statement that is only an expression"),
    ("v = 10000000000", "does not fit 32 bits"),
    ("v = K.global_id(3)", "axis of 0, 1 or 2"),
]


@pytest.mark.parametrize("case", BAD, ids=[case[1] for case in BAD])
def test_each_construct_outside_the_language_names_its_line(case):
    body, words = case[:2]
    source = "def k(x: Tensor[f32], n: i32):\n" + "\n".join(
        "    " + line for line in body.splitlines())
    kernel = load(source)
    with pytest.raises(KernelError) as caught:
        kernel[1, 1](pyburn.zeros(4, device="flex"), 3)
    message = str(caught.value)
    assert words in message
    lines = body.splitlines()
    bad = case[2] if len(case) > 2 else len(lines) - 1
    assert re.search(rf"kernel_\d+\.py:{_LINE_OFFSET + 2 + bad}: ", message), message
    assert lines[bad].strip() in message  # the source line is shown


def test_parameters_are_annotated_and_plain():
    with pytest.raises(KernelError, match="annotate n"):
        load("def k(x: Tensor[f32], n):\n    pass\n")
    with pytest.raises(KernelError, match="plain, annotated names"):
        load("def k(x: Tensor[f32], *rest: i32):\n    pass\n")
    with pytest.raises(KernelError, match="f32 or i32"):
        load("def k(x: Tensor[bool]):\n    pass\n")


def test_launches_that_do_not_fit_the_kernel():
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32, 2], n: i32, c: Const):
            out[0] = x[0, 0] + c
        """)
    x = pyburn.zeros(2, 2, device="flex")
    with pytest.raises(KernelError, match=r"k\[grid, workgroup\]"):
        kernel(1, x, 1, 1)
    with pytest.raises(KernelError, match="grid is a positive int"):
        kernel[0, 1]
    with pytest.raises(KernelError, match="x has 2 dims, not 1"):
        kernel[1, 1]((1,), pyburn.zeros(4, device="flex"), 1, 1)
    with pytest.raises(KernelError, match="float32"):
        kernel[1, 1]((1,), x.int(), 1, 1)
    with pytest.raises(KernelError, match="n is a i32, not float"):
        kernel[1, 1]((1,), x, 1.5, 1)
    with pytest.raises(KernelError, match="missing c"):
        kernel[1, 1]((1,), x, 1)
    with pytest.raises(KernelError, match="constant c is an int"):
        kernel[1, 1]((1,), x, 1, "two")
    assert kernel[1, 1]((1,), x, 1, 2.5).tolist() == [2.5]


@pytest.mark.skipif(len(pyburn.available_devices()) < 2, reason="one device here (Pyodide)")
def test_tensors_on_two_devices_are_refused():
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32]):
            out[0] = x[0]
        """)
    one, other = pyburn.available_devices()[:2]
    with pytest.raises(KernelError, match="different devices"):
        kernel[1, 1](pyburn.zeros(1, device=one), pyburn.zeros(1, device=other))


def test_a_kernel_needs_its_source_in_a_file():
    namespace: dict = {}
    exec("import pyburn\ndef k(n: pyburn.kernel.i32):\n    pass\n", namespace)
    with pytest.raises(KernelError, match="cannot be read"):
        pyburn.kernel(namespace["k"])


def test_language_functions_are_not_called_outside_kernels():
    with pytest.raises(KernelError, match="inside a @pyburn.kernel"):
        pyburn.kernel.global_id(0)
