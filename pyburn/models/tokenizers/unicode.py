"""The character tables that the tokenizer's components share, from the standard library
only (Pyodide has no third-party ``regex`` module).

Hugging Face tokenizers write their split patterns in Oniguruma's syntax, where ``\\p{L}``
(any letter), ``\\p{N}`` (any number) and the other Unicode general categories are classes;
Python's `re` has none of them. `compile_pattern` translates such a pattern into a `re`
pattern in which each category is a character class of code-point ranges, computed once
(about a quarter of a second) from `unicodedata`, the running Python's Unicode tables: a
character that a newer Unicode version assigned counts as unassigned (``Cn``) there.
``\\s`` and ``\\S`` become Unicode's White_Space property, as in Oniguruma and Rust
(Python's ``\\s`` also matches U+001C to U+001F). Both engines backtrack and take the first
alternative that matches, so a translated pattern splits text as the original does.

>>> [m.group() for m in compile_pattern(r" ?\\p{L}+| ?\\p{N}+").finditer("héllo wörld 42")]
['héllo', ' wörld', ' 42']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from ...errors import FormatError

#: Unicode's White_Space property: what Oniguruma's and Rust's ``\s`` match
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_WHITE_SPACE_CLASS = "".join(f"\\U{ord(c):08x}" for c in sorted(WHITE_SPACE))
#: the 32 ASCII punctuation characters (Rust's ``char::is_ascii_punctuation``)
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _byte_alphabet() -> dict[int, str]:
    # GPT-2's byte-level alphabet: the printable bytes stand for themselves, the others
    # (control characters, space, 0x7f-0xa0 and 0xad) for the code points from 256 upwards
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = (b for b in range(256) if b not in printable)
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + n) for n, b in enumerate(others)}}


#: byte -> the character that stands for it in a byte-level token (b" " -> "Ġ")
BYTE_TO_CHAR = _byte_alphabet()
#: the inverse of `BYTE_TO_CHAR`
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def to_byte_level(text: str) -> str:
    """`text`'s UTF-8 bytes, each written as its byte-level character.

    >>> to_byte_level(" héllo")
    'ĠhÃ©llo'
    """
    return "".join(BYTE_TO_CHAR[b] for b in text.encode("utf-8"))


@functools.cache
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    # one pass over every code point, recording the runs of equal general category
    ranges: dict[str, list[tuple[int, int]]] = {}
    start, current = 0, unicodedata.category("\0")
    for code in range(1, 0x110000):
        category = unicodedata.category(chr(code))
        if category != current:
            ranges.setdefault(current, []).append((start, code - 1))
            start, current = code, category
    ranges.setdefault(current, []).append((start, 0x10FFFF))
    return ranges


@functools.cache
def category_class(name: str) -> str:
    """The body of a `re` character class (no brackets) matching the Unicode general
    category `name`: a major class such as ``L`` or ``N``, or a subcategory such as ``Lu``;
    `FormatError` for any other property (scripts such as ``Han`` included)."""
    table = _category_ranges()
    runs = sorted(run for category, found in table.items()
                  if category == name or category[0] == name for run in found)
    if not runs:
        raise FormatError(f"the Unicode property \\p{{{name}}} is not supported by pyburn's "
                          "tokenizer (only general categories such as L, N, Lu, P are)")
    merged: list[tuple[int, int]] = []
    for first, last in runs:
        if merged and merged[-1][1] + 1 == first:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in merged)


def _property(pattern: str, at: int) -> tuple[str, int]:
    # the name after \p or \P: "{Lu}" or one letter; returns it and the index after it
    if pattern.startswith("{", at):
        end = pattern.find("}", at)
        if end < 0:
            raise FormatError(f"the pattern {pattern!r} has an unclosed \\p{{ at {at - 2}")
        return pattern[at + 1:end], end + 1
    return pattern[at:at + 1], at + 1


def translate(pattern: str) -> str:
    """The Python `re` pattern for the Oniguruma `pattern`: ``\\p{..}``, ``\\P{..}``,
    ``\\s`` and ``\\S`` become explicit classes, everything else is kept (the syntax the
    tokenizers use is common to both). A negated class inside brackets (``[\\S]``) or a
    nested class cannot be translated: `FormatError`."""
    out: list[str] = []
    in_class = False
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern):
            code = pattern[at + 1]
            at += 2
            if code in "pP":
                name, at = _property(pattern, at)
                body, negated = category_class(name), code == "P"
            elif code in "sS":
                body, negated = _WHITE_SPACE_CLASS, code == "S"
            else:
                out.append("\\" + code)
                continue
            if in_class and negated:
                raise FormatError(f"the pattern {pattern!r} negates \\{code} inside a "
                                  "character class, which pyburn cannot translate")
            out.append(body if in_class else f"[{'^' if negated else ''}{body}]")
            continue
        at += 1
        if char == "[":
            if in_class:
                raise FormatError(f"the pattern {pattern!r} nests character classes, which "
                                  "pyburn cannot translate")
            in_class = True
            out.append(char)
            # "^" and then "]" right after the bracket are literal in both syntaxes
            for literal in "^]":
                if pattern.startswith(literal, at):
                    out.append("\\" + literal if literal == "]" else literal)
                    at += 1
            continue
        if char == "]":
            in_class = False
        out.append(char)
    return "".join(out)


@functools.lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` (Oniguruma syntax, as in tokenizer.json) compiled by Python's `re`."""
    try:
        return re.compile(translate(pattern))
    except re.error as exc:
        raise FormatError(f"the pattern {pattern!r} is not one pyburn's tokenizer can "
                          f"compile: {exc}") from exc


def pattern_of(spec: Mapping[str, Any]) -> re.Pattern[str]:
    """A tokenizer.json pattern, ``{"String": text}`` (matched literally) or
    ``{"Regex": pattern}``, compiled."""
    if "String" in spec:
        return re.compile(re.escape(spec["String"]))
    if "Regex" in spec:
        return compile_pattern(spec["Regex"])
    raise FormatError(f"a pattern in tokenizer.json is {{'String': ...}} or "
                      f"{{'Regex': ...}}, not {dict(spec)!r}")


def is_punctuation(char: str) -> bool:
    """ASCII punctuation (symbols such as ``$`` and ``+`` included) or a Unicode ``P*``
    character: where BERT splits words."""
    return char in ASCII_PUNCTUATION or unicodedata.category(char)[0] == "P"


def is_word_char(char: str) -> bool:
    """A character of a word (Rust's ``\\w``): a letter, mark, decimal or letter number,
    or a connector such as ``_``."""
    category = unicodedata.category(char)
    return category[0] in "LM" or category in ("Nd", "Nl", "Pc")
