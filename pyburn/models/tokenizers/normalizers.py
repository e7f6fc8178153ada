"""Normalizers: text -> text, before a tokenizer splits it into words. Llama 2's files
prepend "▁" and replace spaces by it (``Prepend``, ``Replace``); BERT's lower-case the text,
strip its accents and put spaces around Chinese characters (``BertNormalizer``); others
apply a Unicode normal form (``NFC``, ``NFD``, ``NFKC``, ``NFKD``).

>>> run = build({"type": "Sequence", "normalizers": [
...     {"type": "Prepend", "prepend": "▁"},
...     {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})
>>> run("Hello world")
'▁Hello▁world'
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from .components import Spec, chain, sequence
from .components import build as build_component
from .unicode import WHITE_SPACE, pattern_of

Normalizer = Callable[[str], str]

#: the CJK blocks whose characters BERT treats as words of their own
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _prepend(spec: Spec) -> Normalizer:
    prefix = spec["prepend"]
    return lambda text: prefix + text if text else text


def _replace(spec: Spec) -> Normalizer:
    pattern, content = pattern_of(spec["pattern"]), spec["content"]
    return lambda text: pattern.sub(lambda _: content, text)


def _unicode_form(spec: Spec) -> Normalizer:
    form = spec["type"]
    return lambda text: unicodedata.normalize(form, text)


def lowercase(text: str) -> str:
    """`text` lower-cased one character at a time, as Rust's ``char::to_lowercase`` does:
    a final capital sigma becomes σ, where Python's `str.lower` writes ς."""
    return "".join(char.lower() for char in text)


def strip_accents(text: str) -> str:
    """`text` decomposed (NFD) without its nonspacing marks: "é" -> "e"."""
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def _bert_clean(char: str) -> str:
    # drop U+FFFD and the control, format and private-use characters but tab, newline and
    # carriage return; then white space of any kind becomes " ". Unassigned characters stay,
    # as in Hugging Face's (whose tables predate Python's: a format character that Unicode
    # added since, such as U+0890, is dropped here and kept there)
    category = unicodedata.category(char)
    if char == "\ufffd" or category[0] == "C" and category != "Cn" and char not in "\t\n\r":
        return ""
    return " " if char in WHITE_SPACE else char


def _bert_chinese(char: str) -> str:
    code = ord(char)
    return f" {char} " if any(lo <= code <= hi for lo, hi in _CJK) else char


def _bert(spec: Spec) -> Normalizer:
    lower = spec.get("lowercase", True)
    accents = spec.get("strip_accents")
    steps: list[Normalizer] = []
    if spec.get("clean_text", True):
        steps.append(lambda text: "".join(map(_bert_clean, text)))
    if spec.get("handle_chinese_chars", True):
        steps.append(lambda text: "".join(map(_bert_chinese, text)))
    if lower if accents is None else accents:
        steps.append(strip_accents)
    if lower:
        steps.append(lowercase)
    return chain(steps)


BUILDERS: dict[str, Callable[[Spec], Normalizer]] = {
    "Prepend": _prepend,
    "Replace": _replace,
    "NFC": _unicode_form, "NFD": _unicode_form, "NFKC": _unicode_form, "NFKD": _unicode_form,
    "Lowercase": lambda spec: lowercase,
    "BertNormalizer": _bert,
}
BUILDERS["Sequence"] = sequence("normalizers", BUILDERS, "normalizer")


def build(spec: Spec | None) -> Normalizer | None:
    """The normalizer of a tokenizer.json (None for null)."""
    return build_component(spec, BUILDERS, "normalizer")
