"""``python -m nlieval``: the ``nlieval`` command."""

import sys

from .cli import main

sys.exit(main())
