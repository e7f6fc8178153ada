"""Post-processors: the ids of one encoded text -> the ids the model takes, with the special
tokens its training put around each text: Llama's beginning-of-text token and BERT's
``[CLS] ... [SEP]`` (``TemplateProcessing``, ``BertProcessing``, ``RobertaProcessing``). The
``ByteLevel`` post-processor only trims offsets, which pyburn does not compute.

>>> run = build({"type": "BertProcessing", "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]})
>>> run([7592, 2088])
[101, 7592, 2088, 102]
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import FormatError
from .components import Spec, sequence
from .components import build as build_component

Processor = Callable[[list[int]], list[int]]


def _around(before: list[int], after: list[int]) -> Processor:
    return lambda ids: [*before, *ids, *after]


def _template(spec: Spec) -> Processor:
    # the "single" template: special tokens (each one or more ids) around the sequence "A"
    special, items = spec.get("special_tokens") or {}, spec["single"]
    sequence_at = [n for n, item in enumerate(items) if "Sequence" in item]
    if len(sequence_at) != 1:
        raise FormatError("tokenizer.json: a TemplateProcessing's single template holds the "
                          f"sequence once, not {len(sequence_at)} times")
    parts: list[list[int]] = []
    for item in items:
        name = item.get("SpecialToken", {}).get("id")
        if name is not None and name not in special:
            raise FormatError(f"tokenizer.json: the template's special token {name!r} has no "
                              "entry in its special_tokens")
        parts.append([] if name is None else list(special[name]["ids"]))
    split = sequence_at[0]
    return _around([i for part in parts[:split] for i in part],
                   [i for part in parts[split + 1:] for i in part])


def _cls_sep(spec: Spec) -> Processor:
    return _around([spec["cls"][1]], [spec["sep"][1]])


BUILDERS: dict[str, Callable[[Spec], Processor]] = {
    "TemplateProcessing": _template,
    "BertProcessing": _cls_sep,
    "RobertaProcessing": _cls_sep,
    "ByteLevel": lambda spec: list,
}
BUILDERS["Sequence"] = sequence("processors", BUILDERS, "post-processor")


def build(spec: Spec | None) -> Processor | None:
    """The post-processor of a tokenizer.json (None for null)."""
    return build_component(spec, BUILDERS, "post-processor")
