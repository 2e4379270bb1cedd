"""``python -m nlieval.cli``: the ``nlieval`` command."""

import sys

from . import main

sys.exit(main())
