"""Plotting chores shared by every PNG the package writes: a figure grid on an Agg canvas
(no display, no pyplot state), saving it, naming and colouring a series.

matplotlib is imported inside the functions that need it, so importing this module is
cheap; the plots themselves live with their families (:mod:`nlieval.analyses.plots`,
:func:`nlieval.contamination.plot_epg`, :mod:`nlieval.sci.report`).

>>> import pathlib, tempfile
>>> fig = grid(2, size=(2.0, 1.5))
>>> ax = fig.subplots(1, 2)[0]
>>> save(fig, pathlib.Path(tempfile.mkdtemp()) / "sub" / "f.png").name
'f.png'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Row = Mapping[str, Any]


def series_name(row: Row, with_k: bool = False) -> str:
    """A legend name for a row: the last component of its model path, ``@`` the last
    component of its checkpoint (when it has one), and `` k=<k>`` with ``with_k``.

    >>> series_name({"model": "/models/bert-base", "checkpoint": "out/step-100", "k": 4})
    'bert-base@step-100'
    >>> series_name({"model": "gpt2", "checkpoint": None, "k": 4}, with_k=True)
    'gpt2 k=4'
    """
    # Model paths are long; the last component names them well enough on a legend.
    name = Path(str(row["model"])).name or str(row["model"])
    if row.get("checkpoint"):
        name += f"@{Path(str(row['checkpoint'])).name}"
    if with_k and row.get("k") is not None:
        name += f" k={row['k']}"
    return name


def grid(n_panels: int, n_rows: int = 1, size: tuple[float, float] = (4.5, 3.4)) -> Figure:
    """An empty figure on an Agg canvas, ``size`` (inches) per panel, ``n_panels`` wide and
    ``n_rows`` high, with constrained layout; add the axes with ``fig.subplots``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size[0] * n_panels, size[1] * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG (120 dpi) at ``path``, creating its folder; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, format="png")
    return out


def colors(names: Iterable[str]) -> dict[str, str]:
    """A colour per series name, in sorted order from matplotlib's default cycle, so a
    series keeps its colour in every panel (matplotlib restarts the cycle per axes).

    >>> colors(["b", "a", "b"])
    {'a': 'C0', 'b': 'C1'}
    """
    return {name: f"C{i % 10}" for i, name in enumerate(sorted(set(names)))}
