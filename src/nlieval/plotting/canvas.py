"""Plotting chores shared by every PNG the package writes: a figure grid on an Agg canvas
(no display, no pyplot state), one legend for a figure, saving it, naming and colouring a
series.

Every plot goes through these helpers with matplotlib's object API: a
:class:`~matplotlib.figure.Figure` from :func:`grid`, its axes from ``fig.subplots``,
written by :func:`save`. Such a figure is never registered with pyplot, so nothing has
to be closed after saving: it is freed with its last reference.

matplotlib is imported inside the functions that need it, so importing this module is
cheap; the plots of results are beside it (:mod:`nlieval.plotting.results`).

>>> import pathlib, tempfile
>>> fig = grid(2, size=(2.0, 1.5))
>>> ax = fig.subplots(1, 2)[0]
>>> save(fig, pathlib.Path(tempfile.mkdtemp()) / "sub" / "f.png").name
'f.png'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
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


def short_names(models: Iterable[str]) -> dict[str, str]:
    """Legend names for model paths: the fewest last path components that still tell
    them apart (two checkpoint series both starting at ``.../step-0000`` keep their
    parent folders).

    >>> names = short_names(["runs/smol/step-0", "runs/gemma/step-0", "gpt2"])
    >>> [names[m] for m in ("runs/smol/step-0", "runs/gemma/step-0", "gpt2")]
    ['smol/step-0', 'gemma/step-0', 'gpt2']
    """
    unique = sorted(set(models))
    parts = {m: Path(m).parts or (m,) for m in unique}
    for depth in range(1, max((len(v) for v in parts.values()), default=1) + 1):
        names = {m: "/".join(parts[m][-depth:]) for m in unique}
        if len(set(names.values())) == len(unique):
            return names
    return {m: m for m in unique}


def grid(n_panels: int, n_rows: int = 1, size: tuple[float, float] = (4.5, 3.4)) -> Figure:
    """An empty figure on an Agg canvas, ``size`` (inches) per panel, ``n_panels`` wide and
    ``n_rows`` high, with constrained layout; add the axes with ``fig.subplots``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size[0] * n_panels, size[1] * n_rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


class PlotWriteError(ValueError):
    """A plot that cannot be written (a full disk, a path below a file, no permission):
    one line naming the path, as every bad input is."""


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG (120 dpi) at ``path``, creating its folder; returns the path.

    >>> save(grid(1), "/proc/no/such/plot.png")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.plotting.canvas.PlotWriteError: cannot write the plot /proc/no/such/plot.png: ...
    """
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120, format="png")
    except OSError as err:
        raise PlotWriteError(f"cannot write the plot {out}: {err.strerror or err}") from None
    return out


def legend(fig: Figure, axes: Sequence[Axes], extra: Sequence[Artist] = ()) -> None:
    """One legend for the whole figure, below the panels: each label of ``axes`` once
    (series repeat across panels), then the ``extra`` handles (e.g. line-style proxies);
    as many columns as the figure is wide in 3-inch steps. Nothing without labels.

    >>> fig = grid(2)
    >>> axes = fig.subplots(1, 2)
    >>> for ax in axes:
    ...     _ = ax.plot([0, 1], [0, 1], label="model-a")
    >>> legend(fig, axes)
    >>> [[t.get_text() for t in leg.get_texts()] for leg in fig.legends]
    [['model-a']]
    """
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    for handle in extra:
        seen.setdefault(str(handle.get_label()), handle)
    if seen:
        ncols = max(1, min(len(seen), int(fig.get_figwidth() // 3)))
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=ncols)


def colors(names: Iterable[str]) -> dict[str, str]:
    """A colour per series name, in sorted order from matplotlib's default cycle, so a
    series keeps its colour in every panel (matplotlib restarts the cycle per axes).

    >>> colors(["b", "a", "b"])
    {'a': 'C0', 'b': 'C1'}
    """
    return {name: f"C{i % 10}" for i, name in enumerate(sorted(set(names)))}
