"""``nlieval view``: a static site of run folders (an overview, the results grid, an item
browser with human and model label distributions; for scientific-NLI and meta-inference
folders their confusion matrices and inferred items, :mod:`nlieval.view.sci`) that opens
from ``file://`` with no network, or is served on 127.0.0.1.

Start at :func:`build_site` (writes the site of a :class:`ViewConfig`) and :func:`serve`
(an HTTP server over the site folder alone). The numbers come from the library functions
of the other commands (``grid``: :func:`nlieval.reports.grid_of`; ``items``:
:func:`nlieval.analyses.item_listing` and its filters, :func:`nlieval.analyses.item_flags`),
so the pages show what the command line prints.
"""

from __future__ import annotations

from .site import ViewConfig, build_site, script_json, serve, site_data, site_figures

__all__ = ["ViewConfig", "build_site", "script_json", "serve", "site_data", "site_figures"]
