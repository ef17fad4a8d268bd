"""``python -m autodoc_core``: the ``autodoc`` command (for processes that start it by interpreter)."""

import sys

from autodoc_core.surface.cli import main

sys.exit(main())
