"""Analyses recomputed from saved records (no model needed): ChaosNLI and plots.

>>> from nlieval.analyses import chaosnli
>>> round(chaosnli.divergences([[50, 50]], [[0.5, 0.5]])["kl"], 6)
0.0
"""

from __future__ import annotations

from . import chaosnli

__all__ = ["chaosnli"]
