"""Make the example scripts importable by name (`import async_training`), as they are run."""

from __future__ import annotations

import sys

from .helpers import EXAMPLES

if str(EXAMPLES) not in sys.path:
    # The examples are scripts, not a package: they import their neighbours (`_data`) by name.
    sys.path.insert(0, str(EXAMPLES))
