"""The kernel tests keep autotune's picks in a folder of their own (not the user's cache)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _picks_kept_apart(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path_factory.getbasetemp() / "pyburn-data"))
