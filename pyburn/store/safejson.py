"""JSON from files that may be corrupt or hostile, parsed without risk to the interpreter.

``json.loads`` recurses once per nesting level. CPython turns deep nesting into a
RecursionError, but under Pyodide a header of ten thousand ``[`` overflows the WebAssembly
stack first and kills the whole interpreter. So the nesting depth is measured before parsing,
at C speed (regular expressions and ``itertools``), and anything deeper than any real file
needs is refused.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from ..errors import FormatError

#: deeper than any header or metadata pyburn writes or meets (a header's is 3)
MAX_DEPTH = 100
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON `text` (brackets inside strings do
    not count; in malformed text the answer is an upper bound, which is all that matters)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def loads(text: str, what: str, **hooks: Any) -> Any:
    """``json.loads(text, **hooks)``, with a FormatError naming `what` for invalid or too
    deeply nested JSON (hooks may raise FormatError themselves)."""
    if depth(text) > MAX_DEPTH:
        raise FormatError(f"{what} nests deeper than {MAX_DEPTH} levels: corrupt or hostile")
    try:
        return json.loads(text, **hooks)
    except FormatError:
        raise
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
        raise FormatError(f"{what} is not valid JSON: {exc}") from None
