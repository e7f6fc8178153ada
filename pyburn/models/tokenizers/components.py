"""How a tokenizer.json component becomes a function: each kind (normalizer, pre-tokenizer,
post-processor, decoder) has a table from the component's ``"type"`` to a builder that reads
the rest of its JSON object; `build` looks the type up and names what pyburn supports when
it is missing. ``"Sequence"`` components chain the ones they list with `chain`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ...errors import FormatError

T = TypeVar("T")
Spec = Mapping[str, Any]


def build(spec: Spec | None, builders: Mapping[str, Callable[[Spec], Callable[[T], T]]],
          kind: str) -> Callable[[T], T] | None:
    """The component that `spec` describes (None for a JSON null), built by
    ``builders[spec["type"]]``; `FormatError` naming the component when pyburn does not
    support it."""
    if spec is None:
        return None
    name = spec.get("type") if isinstance(spec, Mapping) else None
    if not isinstance(name, str) or name not in builders:
        raise FormatError(f"tokenizer.json: the {kind} {name!r} is not supported by pyburn "
                          f"(supported: {', '.join(sorted(builders))})")
    return builders[name](spec)


def chain(steps: Sequence[Callable[[T], T]]) -> Callable[[T], T]:
    """The steps applied one after the other (a ``"Sequence"`` component)."""
    def run(value: T) -> T:
        for step in steps:
            value = step(value)
        return value
    return run


def sequence(key: str, builders: Mapping[str, Callable[[Spec], Callable[[T], T]]],
             kind: str) -> Callable[[Spec], Callable[[T], T]]:
    """The builder of a ``"Sequence"`` whose components `spec[key]` lists."""
    def build_sequence(spec: Spec) -> Callable[[T], T]:
        steps = [build(part, builders, kind) for part in spec[key]]
        return chain([step for step in steps if step is not None])
    return build_sequence
