"""Plotting chores shared by every figure the package writes: the one style (an rc file
shipped with the package, :func:`styled`), a figure grid at a paper's width on an Agg
canvas (no display, no pyplot state), one legend for a figure, saving it in the format of
its extension, naming a series and giving each model one colour and marker (:func:`styles`).

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

import functools
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ..ground import FolderError, atomic_write, make_folder
from ..settings import setting

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


#: Widths a figure is drawn at, in inches: one column of a two-column paper, and the text
#: width (ACL's and NeurIPS' 6.3-6.75 in). ``--width`` takes either name or a number.
WIDTHS = {"column": 3.3, "text": 6.5}
#: The formats a figure is written in, by the output's extension; PNG at :data:`PNG_DPI`.
FORMATS = {".pdf": "pdf", ".svg": "svg", ".png": "png"}
PNG_DPI = 300
#: The matplotlib style of every figure (an rc file shipped with the package).
STYLE = Path(__file__).resolve().parent.parent / "resources" / "paper.mplstyle"
#: The markers given to series, in order (with matplotlib's ten colours: :func:`styles`).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")

P = ParamSpec("P")
R = TypeVar("R")


def paper_width(spec: str | float) -> float:
    """A figure width in inches from ``--width``: ``column`` (3.3), ``text`` (6.5) or a
    number of inches between 1 and 20.

    >>> paper_width("column"), paper_width("7"), paper_width(3)
    (3.3, 7.0, 3.0)
    >>> paper_width("wide")
    Traceback (most recent call last):
    ValueError: a width is column, text or a number of inches (1-20), not 'wide'
    """
    if isinstance(spec, str) and spec in WIDTHS:
        return WIDTHS[spec]
    try:
        inches = float(spec)
    except ValueError:
        inches = math.nan
    if not 1.0 <= inches <= 20.0:
        raise ValueError(f"a width is column, text or a number of inches (1-20), not {spec!r}")
    return inches


def figure_format(path: str | Path) -> str:
    """The format a figure at ``path`` is written in, from its extension (case ignored);
    another extension is one line naming the path.

    >>> figure_format("fig.PDF"), figure_format("a/b.svg"), figure_format("c.png")
    ('pdf', 'svg', 'png')
    >>> figure_format("fig.jpg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.plotting.canvas.PlotWriteError: cannot write the plot fig.jpg: unknown extension ...
    """
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise PlotWriteError(
            f"cannot write the plot {path}: unknown extension {Path(path).suffix!r} "
            "(use .pdf, .svg or .png)"
        )
    return fmt


def styled(draw: Callable[P, R]) -> Callable[P, R]:
    """``draw`` run under the package's matplotlib style (:data:`STYLE`): every plot
    function is wrapped in this, so no figure patches its own fonts or line widths.

    >>> @styled
    ... def font_size() -> float:
    ...     import matplotlib
    ...     return float(matplotlib.rcParams["font.size"])
    >>> font_size()
    8.0
    """

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import matplotlib.style

        with matplotlib.style.context(str(STYLE)):
            return draw(*args, **kwargs)

    return wrapper


#: The narrowest a panel of a one-row figure is drawn: more panels wrap onto new rows.
MIN_PANEL = 1.6


def _columns(n_panels: int, inches: float) -> int:
    return max(1, min(n_panels, int(inches // MIN_PANEL)))


def grid(
    n_panels: int,
    n_rows: int = 1,
    size: tuple[float, float] = (4.5, 3.4),
    *,
    width: float | None = None,
) -> Figure:
    """An empty figure on an Agg canvas for ``n_panels`` panels a row and ``n_rows`` rows,
    with constrained layout. The figure is ``width`` inches wide (the text width when
    None); ``size`` (width, height) gives a panel's shape, and a panel is kept between
    1.7 and 3 inches high (2.4 in several rows). Panels of one row narrower than
    :data:`MIN_PANEL` wrap onto more rows: add them with :func:`panels` (a figure of
    several rows adds its axes with ``fig.subplots``).

    >>> fig = grid(2, size=(4.0, 3.0), width=6.0)
    >>> [round(float(x), 2) for x in fig.get_size_inches()]
    [6.0, 2.25]
    >>> [round(float(x), 2) for x in grid(3, width=3.3).get_size_inches()]  # 2 + 1 panels
    [3.3, 3.4]
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    inches = WIDTHS["text"] if width is None else width
    cols = n_panels if n_rows > 1 else _columns(n_panels, inches)
    rows = n_rows if n_rows > 1 else math.ceil(n_panels / cols)
    # A figure of several rows stays within a page: its panels at most 2.4 inches high.
    tallest = 3.0 if rows == 1 else 2.4
    panel_height = min(tallest, max(1.7, inches / max(1, cols) * size[1] / size[0]))
    fig = Figure(figsize=(inches, panel_height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def panels(fig: Figure, n_panels: int) -> list[Axes]:
    """The axes of a figure of :func:`grid` for ``n_panels``: one row, or as many rows
    as its width needs (:data:`MIN_PANEL`), left to right and top to bottom.

    >>> len(panels(grid(3, width=3.3), 3)), len(panels(grid(3), 3))
    (3, 3)
    """
    cols = _columns(n_panels, float(fig.get_figwidth()))
    axes = list(fig.subplots(math.ceil(n_panels / cols), cols, squeeze=False).flat)
    for ax in axes[n_panels:]:  # the empty end of the last row
        ax.remove()
    return axes[:n_panels]


class PlotWriteError(ValueError):
    """A plot that cannot be written (a full disk, a path below a file, no permission, an
    unknown extension): one line naming the path, as every bad input is."""


#: Where a figure is written: one path, or several (the same drawing in each format).
FigurePaths = str | Path | tuple[str | Path, ...]


def save(fig: Figure, path: FigurePaths, *, root: str | Path | None = None) -> Path:
    """Write ``fig`` at ``path`` in the format of its extension (:func:`figure_format`:
    vector PDF or SVG, or PNG at 300 dpi), creating its folder; returns the path. Several
    paths (``("f.png", "f.pdf")``) write the one drawing in each of their formats and
    return the first. The files carry no date, so drawing the same figure twice writes
    the same bytes. Each file is written inside ``root`` (the writer's folder: no symbolic
    link below it, :func:`nlieval.ground.check_inside`), and never through a link.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> save(grid(1), (folder / "f.png", folder / "f.pdf")).name, sorted(
    ...     p.name for p in folder.iterdir())
    ('f.png', ['f.pdf', 'f.png'])
    >>> save(grid(1), "/proc/no/such/plot.png")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.plotting.canvas.PlotWriteError: cannot write the plot /proc/no/such/plot.png: ...
    """
    outs = [Path(p) for p in (path if isinstance(path, tuple) else (path,))]
    if not outs:
        raise PlotWriteError("cannot write a plot: no path given")
    # Every extension checked before anything is written.
    formats = [figure_format(out) for out in outs]
    import matplotlib

    for out, fmt in zip(outs, formats, strict=True):
        # No creation date (PDF) or date (SVG): the same figure is the same file.
        metadata: dict[str, Any] = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(
            fmt, {}
        )
        # Drawn into memory, then written by the ground's writer: never through a link
        # (a figure that is a link to a file elsewhere is refused, not overwritten).
        buf = io.BytesIO()
        with matplotlib.rc_context({"svg.hashsalt": "nlieval"}):
            fig.savefig(buf, dpi=PNG_DPI, format=fmt, metadata=metadata)
        try:
            make_folder(out.parent, root=root)
            atomic_write(out, buf.getvalue(), root=root)
        except FolderError as err:
            raise PlotWriteError(f"cannot write the plot {out}: {err}") from None
    return outs[0]


def legend(fig: Figure, axes: Sequence[Axes], extra: Sequence[Artist] = ()) -> None:
    """One legend for the whole figure, below the panels: each label of ``axes`` once
    (series repeat across panels), then the ``extra`` handles (e.g. line-style proxies);
    as many columns as fit the figure's width, the figure made taller by its rows.
    Nothing without labels.

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
        longest = max(len(label) for label in seen)
        # A 7-pt character is about 0.055 in wide; the handle and padding about 0.5 in.
        per_entry = max(1.2, 0.5 + 0.055 * longest)
        ncols = max(1, min(len(seen), int(fig.get_figwidth() // per_entry)))
        # The legend's rows are added below the panels, not taken from them (7-pt lines).
        rows = math.ceil(len(seen) / ncols)
        fig.set_figheight(fig.get_figheight() + 0.16 * rows + 0.08)
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=ncols)


def styles(names: Iterable[str], extra: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """A colour and a marker per series name, by the name's place in the sorted names:
    the i-th name gets colour ``C<i mod 10>`` and the i-th of :data:`MARKERS`, so the same
    names give every figure of a call the same styles, whichever subset a figure draws
    (pass every name of the call). ``extra`` names (not among ``names``) come after them,
    in sorted order, so they never move a name's style. Past ten names the colours come
    round again, and each round shifts the markers by one, so no two of up to 100 names
    look alike. Keyword arguments of ``plot`` and ``errorbar``.

    >>> s = styles(["gpt2", "bert", "gpt2"])
    >>> s["bert"], s["gpt2"]
    ({'color': 'C0', 'marker': 'o'}, {'color': 'C1', 'marker': 's'})
    >>> eleven = styles(f"m{i:02d}" for i in range(11))
    >>> eleven["m00"], eleven["m10"]
    ({'color': 'C0', 'marker': 'o'}, {'color': 'C0', 'marker': 's'})
    """
    ordered = sorted(set(names))
    ordered += sorted(set(extra) - set(ordered))
    return {
        name: {"color": f"C{i % 10}", "marker": MARKERS[(i + i // 10) % len(MARKERS)]}
        for i, name in enumerate(ordered)
    }


def display_name(model: str) -> str:
    """The name a figure gives a model: the last component of its path or hub id, as
    :func:`series_name` names a series (``org/model-c`` and ``model-c`` are one model).

    >>> display_name("org/model-c"), display_name("model-c"), display_name("gpt2@step-1")
    ('model-c', 'model-c', 'gpt2@step-1')
    """
    return Path(model).name or model


def palette(names: Iterable[str] | None, shown: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The style of every series of a figure, the one rule every figure follows: the
    call's model ``names`` (raw, ``org/model-c``, or as figures name them, ``model-c``:
    :func:`display_name`) take :func:`styles` of their display names, and the figure's
    ``shown`` series that are none of them (a checkpoint series ``m@step-1``) come after,
    so a model keeps its colour and marker in every figure of the call whatever else a
    figure draws. Keyed by display name and by each raw name given.

    >>> p = palette(["org/model-c", "org/model-a"], ["model-c", "model-c@step-1"])
    >>> p["model-c"] == p["org/model-c"] == styles(["model-a", "model-c"])["model-c"]
    True
    >>> p["model-c@step-1"]
    {'color': 'C2', 'marker': '^'}
    """
    given = list(names or ())
    own = sorted({display_name(n) for n in given})
    rest = sorted(set(shown) - set(own))
    out = styles(own, rest)
    out.update({n: out[display_name(n)] for n in given})
    return out


def std_note(label: str = "error bars: ±1 std over seeds") -> Artist:
    """A legend entry that says what the error bars are (:func:`legend`'s ``extra``).

    >>> std_note().get_label()
    'error bars: ±1 std over seeds'
    """
    from matplotlib.lines import Line2D

    return Line2D([], [], color="0.3", marker="|", markersize=8, ls="none", label=label)


def _width_value(text: str) -> str:
    paper_width(text)  # refused here, as the flag is parsed
    return text


@dataclass(frozen=True, kw_only=True)
class FigureWidth:
    """The ``--width`` of every command that draws a figure (:func:`paper_width`).

    >>> FigureWidth(width="column").inches
    3.3
    """

    width: str = setting(
        "text",
        help="figure width: column (3.3 in), text (6.5 in) or inches; fonts are 7-8 pt at it",
        parse=_width_value,
        metavar="column|text|INCHES",
    )

    @property
    def inches(self) -> float:
        """The width in inches."""
        return paper_width(self.width)
