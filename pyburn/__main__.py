"""``python -m pyburn ...``: the same as the ``pyburn`` command."""

import sys

from .cli import main

sys.exit(main())
