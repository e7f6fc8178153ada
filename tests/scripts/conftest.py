"""The set-up scripts (scripts/) are run as programs, not imported from a package: their
folder goes on sys.path here so that the tests import them as the scripts import each other."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
