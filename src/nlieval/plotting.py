"""Plotting chores shared by every family's figures: a figure grid without pyplot's
global state, saving a PNG, series names for legends.

>>> series_name({"model": "/models/smollm2-135m", "checkpoint": "runs/step-10", "k": 5}, True)
'smollm2-135m@step-10 k=5'
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

Row = Mapping[str, Any]


def series_name(row: Row, with_k: bool = False) -> str:
    """The legend name of a row: the model folder name, @checkpoint, and k."""
    # Model paths are long; the last component names them well enough on a legend.
    name = Path(str(row["model"])).name or str(row["model"])
    if row.get("checkpoint"):
        name += f"@{Path(str(row['checkpoint'])).name}"
    if with_k and row.get("k") is not None:
        name += f" k={row['k']}"
    return name


def grid(n_panels: int, n_rows: int = 1, size: tuple[float, float] = (4.5, 3.4)) -> Figure:
    """A figure of ``n_rows`` x ``n_panels`` panel sizes, with its own Agg canvas."""
    fig = Figure(figsize=(size[0] * n_panels, size[1] * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG (folders made as needed); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, format="png")
    return out
