"""The report of an experiment: every table and figure its ``outputs`` ask for, written
into ``DIR/report/`` by the library functions the commands across run folders call
(``grid``, ``figure``, ``compare``, ``breakdown``, ``items``, ``chaosnli``, ``dynamics``,
``sci-report``), and ``index.md`` listing each file with the study's label and the cells
it was made from. Everything is recomputed from the cells' records: a second call
writes the same bytes.

An output's options are the settings of its command (``rows``, ``metrics``,
``percent`` of ``grid``; ``by`` of ``breakdown``; ...), but for the run folders, which
are its blocks' cells, and the files, which the report names. A ``figure`` output names
which figure with ``figure: shots`` (``size``, ``dynamics``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from ..commands import OUTPUTS, TABLE, load
from ..ground import DataError, check_inside
from ..runs import atomic_write, make_folder
from ..settings import UNSET, flag_of, from_flat_dict
from .commands import coerce
from .plan import Cell
from .spec import Experiment, Output, suggest

#: The folder of the report in an experiment folder.
REPORT = "report"


@dataclass(frozen=True)
class Kind:
    """An output kind: its settings class, the fields the report sets itself, and the
    function that writes its files (a reference, :func:`nlieval.commands.load`), as the
    table declares them with its command."""

    name: str
    cls: Callable[[], type[Any]]
    own: tuple[str, ...]
    #: False: the output reads data files or the library alone (a dataset table, a list
    #: of phrases, the logic table), so it is written whatever its blocks' cells are.
    reads_cells: bool = True
    write: str = ""


def _kind(name: str) -> Kind:
    command = TABLE[name]
    spec = command.output
    if spec is None:
        raise KeyError(name)
    # Loaded when an output of the kind is checked: each family loads its own libraries.
    cls = functools.partial(load, command.settings[-1])
    return Kind(name, cls, spec.own, spec.reads_cells, spec.write)


#: The kinds of output, by name.
KINDS: dict[str, Kind] = {name: _kind(name) for name in OUTPUTS}

#: The options of an output that name blocks (their cells' folders), by kind: an
#: ``infer-report`` reads the inferred items of its ``items`` block's one cell and the
#: source items' run of the same model in its ``sources`` block.
BLOCK_OPTIONS = {
    name: spec.block_options
    for name in OUTPUTS
    if (spec := TABLE[name].output) is not None and spec.block_options
}

#: Why an output is not written when a block it reads makes no cell.
LEFT_OUT = (
    "{} makes no cell in this experiment (an axis given as [], or its input, such as a "
    "corpus, not given: see the file's comments)"
)


@dataclass(frozen=True)
class Job:
    """What the writer of an output (:attr:`Kind.write`) is given: the experiment, the
    output, its options read as its command's flags, the folders of its done cells, the
    report's folder, the done cells of each block an option names, its done cells, and
    the models of every cell (a model keeps its colour and marker in every figure)."""

    exp: Experiment
    out: Output
    opts: dict[str, Any]
    runs: tuple[str, ...]
    report: Path
    inputs: dict[str, list[Cell]]
    ready: Sequence[Cell]
    palette: Sequence[str]


#: The file extension of each table format (``format`` of an output that writes one
#: table: ``items``, ``compare``, ``chaosnli``, ``dynamics``, ``sci-report``).
EXTENSIONS = {"md": "md", "csv": "csv", "json": "json", "latex": "tex"}

#: The formats a figure output is written in, each from the one drawing.
FIGURE_FORMATS = ("png", "pdf")


def option_fields(kind: Kind) -> dict[str, Any]:
    """The options an output of ``kind`` may set (its settings less the report's own)."""
    return {f.name: f for f in fields(kind.cls()) if f.name not in kind.own}


def output_options(exp: Experiment, out: Output) -> dict[str, Any]:
    """The options of ``out`` read as its command's flags; an unknown kind or option is
    one DataError naming the file, the line and the key."""
    kind = KINDS.get(out.kind)
    if kind is None:
        raise DataError(
            exp.source,
            out.line,
            "kind",
            f"no output kind {out.kind!r}{suggest(out.kind, KINDS)} "
            f"(the kinds: {', '.join(KINDS)})",
        )
    known = option_fields(kind)
    values: dict[str, Any] = {}
    for s in out.options:
        if s.key in BLOCK_OPTIONS.get(out.kind, ()):
            names = [b.name for b in exp.blocks]
            if s.value not in names:
                raise s.error(f"no block {s.value!r}{suggest(str(s.value), names)}")
            values[s.key] = s.value
            continue
        if out.kind == "figure" and s.key == "figure":
            from ..reports import FIGURES

            if s.value not in FIGURES:
                raise s.error(f"expected one of {', '.join(FIGURES)}, found {s.value!r}")
            values["figure"] = s.value
            continue
        f = known.get(s.key)
        if f is None:
            extra = ["figure"] if out.kind == "figure" else list(BLOCK_OPTIONS.get(out.kind, ()))
            raise s.error(
                f"not an option of output kind {out.kind}{suggest(s.key, [*known, *extra])}"
            )
        values[s.key] = coerce(f, s)
    if out.kind == "chaosnli-figure":
        named = {m.name for m in exp.models}
        for s in out.options:
            if s.key == "models":
                for m in values.get("models") or ():
                    if m not in named:
                        raise s.error(f"no model {m!r}{suggest(m, sorted(named))}")
    if out.kind == "figure" and "figure" not in values:
        from ..reports import FIGURES

        raise DataError(
            exp.source,
            out.line,
            "figure",
            f"a figure output names its figure (figure: {_one_of(list(FIGURES))})",
        )
    if out.kind == "epg" and "scores" not in values:
        raise DataError(
            exp.source, out.line, "scores", "an epg output names its contamination block"
        )
    if out.kind == "infer-report" and "items" not in values:
        raise DataError(
            exp.source, out.line, "items", "an infer-report output names its items block"
        )
    _build(exp, out, kind, values)
    return values


def _one_of(names: Sequence[str]) -> str:
    """``names`` as a sentence lists them.

    >>> _one_of(("shots", "size", "dynamics"))
    'shots, size or dynamics'
    """
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _required(f: Any) -> bool:
    flag = flag_of(f)
    return (
        f.default is MISSING
        and f.default_factory is MISSING
        and (flag is None or flag.cli_default is UNSET)
    )


#: What the report's own settings are taken as when an output is checked, before any
#: cell exists.
_STAND_INS: dict[str, Any] = {
    "runs": ["cell"],
    "run": "cell",
    "items": "cell",
    "out": "figure.png",
    "scores": "scores.jsonl",
    "plot": "figure.png",
}


def _build(exp: Experiment, out: Output, kind: Kind, values: dict[str, Any]) -> None:
    """Build the settings class of ``out``'s kind from its options now, as a block's is:
    a missing or refused option is one line before any cell runs, not a traceback when
    the report is written after them all."""
    cls = kind.cls()
    known = option_fields(kind)
    for name, f in known.items():
        if name not in values and _required(f):
            raise DataError(
                exp.source,
                out.line,
                name,
                f"an output of kind {out.kind} needs the option {name!r}",
            )
    # The report gives its own settings from the cells (or a named block's): stand-ins
    # make the class whole now, so that options refused together (in_domain without
    # out_of_domain) are refused before any cell runs.
    given = {k: v for k, v in values.items() if k in known}
    given.update((k, v) for k, v in _STAND_INS.items() if k in kind.own)
    try:
        from_flat_dict(cls, given)
    except (ValueError, TypeError) as err:
        raise DataError(exp.source, out.line, None, f"output kind {out.kind}: {err}") from None


def check_outputs(exp: Experiment) -> None:
    """Every output's kind and options, checked before any cell runs."""
    for out in exp.outputs:
        output_options(exp, out)


def _cells_of(out: Output, cells: Sequence[Cell]) -> list[Cell]:
    own = [c for c in cells if c.block in out.blocks]
    chosen, _ = _chosen_models(out, own)
    return chosen


def _chosen_models(out: Output, own: Sequence[Cell]) -> tuple[list[Cell], str | None]:
    """The cells of the models a ``chaosnli-figure`` names (Figure 5 a draws two of the
    study's nine); when none of them has a cell (a laptop run of other models), every
    cell, and the note that says so."""
    models = next((s.value for s in out.options if s.key == "models"), None)
    if out.kind != "chaosnli-figure" or models is None:
        return list(own), None
    wanted = [
        str(m).strip() for m in (models if isinstance(models, list) else str(models).split(","))
    ]
    chosen = [c for c in own if c.model_name in wanted]
    if chosen or not own:
        return chosen, None
    ran = sorted({str(c.model_name) for c in own})
    return list(own), (
        f"none of its models ({', '.join(wanted)}) has a cell here: drawn with "
        f"{', '.join(ran)} instead"
    )


def write_report(exp: Experiment, cells: Sequence[Cell], folder: Path, done: set[str]) -> list[str]:
    """Write ``folder/report``: each output from those of its cells that are done, and
    ``index.md`` listing its files and its cells (those not done named as missing; an
    output with none done is listed as not written). Returns the paths written,
    relative to ``folder``."""
    report = folder / REPORT
    make_folder(report, root=folder)
    written: list[str] = []
    index = [f"# {exp.name}: report", ""]
    if exp.description:
        index += [exp.description.strip(), ""]
    index += [
        f"From {len(cells)} cells of `{Path(exp.source).name}`; every file below is "
        "recomputed from the cells' records.",
        "",
    ]
    # The models of the experiment's cells, so that a model keeps its colour and marker
    # in every figure (not every model the file names: a study's file names many that a
    # laptop run leaves out, and more than ten names would cycle the styles).
    palette = sorted({c.model for c in cells if c.model})
    for out in exp.outputs:
        # An output's own sub-folder (plots of sci-report, chaosnli's) is the report's.
        check_inside(report / out.name, folder)
        own = _cells_of(out, cells)
        title = f"## {out.label + ': ' if out.label else ''}{out.name} ({out.kind})"
        index += [title, ""]
        ready = [c for c in own if c.name in done]
        missing = [c.name for c in own if c.name not in done]
        kind = KINDS.get(out.kind)
        if kind is not None and not kind.reads_cells:
            files, _ = _write_output(exp, out, (), report)
            written += [str(Path(REPORT) / f) for f in files]
            index += [f"- [{f}]({f})" for f in files] + [""]
            continue
        empty = [b for b in out.blocks if not any(c.block == b for c in cells)]
        if empty:
            # A table over several blocks without one of them would be another table
            # under the same label (Table 5's ID column without its OOD column).
            index += [f"not written: skipped: {LEFT_OUT.format(', '.join(empty))}", ""]
            continue
        if not ready:
            why = (
                f"waiting for {', '.join(missing)}"
                if missing
                else f"skipped: {LEFT_OUT.format(', '.join(out.blocks))}"
            )
            index += [f"not written: {why}", ""]
            continue
        runs = tuple(str(folder / "cells" / c.name) for c in ready)
        inputs = _block_inputs(exp, out, cells, done)
        if isinstance(inputs, str):
            index += [f"not written: {inputs}", ""]
            continue
        files, notes = _write_output(exp, out, runs, report, inputs, ready, palette)
        _, instead = _chosen_models(out, [c for c in cells if c.block in out.blocks])
        notes += [instead] if instead else []
        written += [str(Path(REPORT) / f) for f in files]
        index += [f"- [{f}]({f})" for f in files]
        index += [f"- {_within(n, folder)}" for n in notes]
        index += ["", f"cells: {', '.join(c.name for c in ready)}"]
        if missing:
            # What is shown without them says so: never a table that looks whole.
            index += [f"without (not done): {', '.join(missing)}"]
        index += [""]
    _write(report / "index.md", "\n".join(index).rstrip())
    written.append(str(Path(REPORT) / "index.md"))
    return written


def _within(note: str, folder: Path) -> str:
    """``note`` with the paths inside the experiment ``folder`` written relative to it
    (the functions behind the outputs name the files they were given, which the driver
    gives under ``folder``): a report moved elsewhere stays byte for byte the same, and
    holds no path of the machine that wrote it.

    >>> _within("skipped /x/e/report/d.png: no ChaosNLI records in /x/e/cells/c", Path("/x/e"))
    'skipped report/d.png: no ChaosNLI records in cells/c'

    Only a whole path is rewritten, in the form the folder was given and as an absolute
    path; a folder named by a relative word (``mm``, ``runs``) alone is left as it is, as
    are words and other folders that merely contain it.

    >>> _within("gemma3-270m, runs of mm, /x/e2/report/d.png, mm/report/a.png", Path("mm"))
    'gemma3-270m, runs of mm, /x/e2/report/d.png, report/a.png'
    >>> _within("/x/e2/report/d.png in /x/e", Path("/x/e"))
    '/x/e2/report/d.png in .'
    """
    start = r"(?<![\w.~/-])"  # the path starts here: not inside a word or another path
    for form in dict.fromkeys((str(folder), str(folder.absolute()))):
        at = re.escape(form)
        note = re.sub(start + at + re.escape(os.sep) + r"(?=\S)", "", note)
        if os.path.isabs(form):
            note = re.sub(start + at + r"(?![\w.~/-])", ".", note)
    return note


def _block_inputs(
    exp: Experiment, out: Output, cells: Sequence[Cell], done: set[str]
) -> dict[str, list[Cell]] | str:
    """The done cells of each block an option of ``out`` names, or the names of those
    not done (the output waits for them)."""
    opts = {s.key: str(s.value) for s in out.options}
    found: dict[str, list[Cell]] = {}
    missing: list[str] = []
    for key in BLOCK_OPTIONS.get(out.kind, ()):
        if key in opts:
            own = [c for c in cells if c.block == opts[key]]
            if not own:
                return f"skipped: {LEFT_OUT.format(opts[key])}"
            missing += [c.name for c in own if c.name not in done]
            found[key] = [c for c in own if c.name in done]
    return f"waiting for {', '.join(missing)}" if missing else found


def _write(path: Path, text: str) -> None:
    # Every file of a report lies directly in its folder, checked by write_report.
    atomic_write(path, text if text.endswith("\n") else text + "\n", root=path.parent)


def _write_output(
    exp: Experiment,
    out: Output,
    runs: tuple[str, ...],
    report: Path,
    inputs: dict[str, list[Cell]] | None = None,
    ready: Sequence[Cell] = (),
    palette: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    # The writer the table declares with the output's command.
    opts = output_options(exp, out)
    job = Job(exp, out, opts, runs, report, inputs or {}, ready, palette)
    written: tuple[list[str], list[str]] = load(KINDS[out.kind].write)(job)
    return written


def write_text(job: Job) -> tuple[list[str], list[str]]:
    """The text its command's library function (:attr:`nlieval.commands.Command.function`)
    returns for its cells, in the output's format (its settings class's ``format``,
    Markdown when it has none): the writer of a command that prints that text."""
    command = TABLE[job.out.kind]
    cls = load(command.settings[-1])
    kw = dict(job.opts)
    if "runs" in {f.name for f in fields(cls)}:
        kw["runs"] = job.runs
    cfg = cls(**kw)
    name = f"{job.out.name}.{EXTENSIONS[getattr(cfg, 'format', 'md')]}"
    _write(job.report / name, load(command.function)(cfg))
    return [name], []


def write_grid(job: Job) -> tuple[list[str], list[str]]:
    """The grid of its cells, in Markdown, CSV and LaTeX (the records read once)."""
    from ..analyses import render_grid
    from ..reports import GridConfig, grid_of

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    grid_cfg = GridConfig(runs=runs, **opts)
    g = grid_of(grid_cfg)  # the records read once, written in each format
    for fmt in ("md", "csv", "latex"):
        ext = EXTENSIONS[fmt]
        text = render_grid(g, fmt, percent=grid_cfg.percent, digits=grid_cfg.digits)
        _write(report / f"{name}.{ext}", text)
        files.append(f"{name}.{ext}")
    return files, []


def write_figure(job: Job) -> tuple[list[str], list[str]]:
    """The figure it names (``figure:``), in PNG and PDF from the one drawing."""
    from ..reports import FigureConfig, figure_from

    opts = job.opts
    runs = job.runs
    report = job.report
    palette = job.palette
    name = job.out.name
    files: list[str] = []
    kind = opts.pop("figure")
    first, *more = (report / f"{name}.{ext}" for ext in FIGURE_FORMATS)
    figure_from(
        FigureConfig(kind=kind, runs=runs, out=str(first), **opts),
        palette=palette,
        also=more,
    )
    files += [f"{name}.{ext}" for ext in FIGURE_FORMATS]
    return files, []


def write_compare(job: Job) -> tuple[list[str], list[str]]:
    """The tests of its two cells: a table in its format, and the rows as JSON."""
    from ..analyses import comparison_table
    from ..ground import render
    from ..reports import CompareConfig, compare_report

    exp = job.exp
    out = job.out
    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    if len(runs) != 2:
        raise DataError(
            exp.source,
            out.line,
            "blocks",
            f"a compare output reads 2 cells, its blocks have {len(runs)}",
        )
    compare_cfg = CompareConfig(a=runs[0], b=runs[1], **opts)
    rows = compare_report(compare_cfg)
    table = f"{name}.{EXTENSIONS[compare_cfg.format]}"
    _write(report / table, render(comparison_table(rows), compare_cfg.format))
    _write(report / f"{name}.json", json.dumps(rows, indent=2, sort_keys=True, default=str))
    files += [table, f"{name}.json"]
    return files, []


def write_breakdown(job: Job) -> tuple[list[str], list[str]]:
    """The metrics of its cells by item field, in Markdown and CSV."""
    from ..reports import BreakdownConfig, breakdown_from

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    for fmt in ("md", "csv"):
        text = breakdown_from(BreakdownConfig(runs=runs, **opts), fmt)
        _write(report / f"{name}.{fmt}", text)
        files.append(f"{name}.{fmt}")
    return files, []


def write_items(job: Job) -> tuple[list[str], list[str]]:
    """Its cells' items side by side (items a study names that no cell scored: a note)."""
    from ..reports import ItemsConfig, items_from

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    notes: list[str] = []
    items_cfg = ItemsConfig(runs=runs, **opts)
    table = f"{name}.{EXTENSIONS[items_cfg.format]}"
    try:
        text = items_from(items_cfg)
    except ValueError as err:
        # The items a study names (its Table 2) that the cells did not score (a run
        # with --set limit=N): said in the index, not a failed report.
        if not items_cfg.ids or not str(err).startswith("--ids: no record"):
            raise
        notes.append(f"not written: {err} in its cells (a run of fewer items?)")
    else:
        _write(report / table, text)
        files.append(table)
    return files, notes


def write_chaosnli(job: Job) -> tuple[list[str], list[str]]:
    """The ChaosNLI scores of its cells: a table in its format (and chaosnli.json)."""
    from ..analyses import ChaosnliConfig, chaosnli, chaosnli_scores
    from ..ground import render

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    notes: list[str] = []
    chaos_cfg = ChaosnliConfig(runs=runs, out=str(report / name), **opts)
    found = chaosnli_scores(chaos_cfg)
    if found is None:
        notes.append("no ChaosNLI records in its cells")
    else:
        result, path = found
        table = f"{name}.{EXTENSIONS[chaos_cfg.format]}"
        _write(report / table, render(chaosnli.format_report(result), chaos_cfg.format))
        files.append(table)
        if path is not None:  # written: out= names the report folder
            files.append(str(path.relative_to(report)))
    return files, notes


def write_dynamics(job: Job) -> tuple[list[str], list[str]]:
    """Per cell: the dynamics table in its format and its figures."""
    from ..analyses import DynamicsConfig, dynamics_of, format_dynamics
    from ..ground import render

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    notes: list[str] = []
    for run in runs:
        cell = Path(run).name
        cfg = DynamicsConfig(
            run=run,
            plot=str(report / f"{name}-{cell}.png"),
            entropy_plot=str(report / f"{name}-{cell}-entropy.png"),
            **opts,
        )
        # Drawn once, saved as PNG and PDF as every figure of the report.
        result = dynamics_of(cfg, also=FIGURE_FORMATS[1:])
        table = f"{name}-{cell}.{EXTENSIONS[cfg.format]}"
        _write(report / table, render(format_dynamics(result["rows"]), cfg.format))
        files.append(table)
        files += [str(Path(p).relative_to(report)) for p in result["written"]]
        notes += list(result["skipped"])
    return files, notes


def write_chaosnli_figure(job: Job) -> tuple[list[str], list[str]]:
    """A figure of the ChaosNLI records of its cells, in PNG and PDF."""
    from ..analyses import ChaosnliFigureConfig, chaosnli_figure

    opts = job.opts
    runs = job.runs
    report = job.report
    palette = job.palette
    name = job.out.name
    files: list[str] = []
    notes: list[str] = []
    first, *more = (report / f"{name}.{ext}" for ext in FIGURE_FORMATS)
    drawn = chaosnli_figure(
        ChaosnliFigureConfig(runs=runs, plot=str(first), **opts), palette, also=more
    )
    if drawn is None:
        notes.append("no ChaosNLI records in its cells")
    else:
        files += [f"{name}.{ext}" for ext in FIGURE_FORMATS]
    return files, notes


def write_epg(job: Job) -> tuple[list[str], list[str]]:
    """EPG of its cells against the scores of its ``scores`` block: a table and a figure."""
    from ..contamination import ContaminationConfig, contamination_report, format_epg
    from ..ground import render
    from .commands import SCORES

    opts = job.opts
    runs = job.runs
    report = job.report
    inputs = job.inputs
    name = job.out.name
    files: list[str] = []
    notes: list[str] = []
    scans = (inputs or {}).get("scores", [])
    if len(scans) != 1:
        notes.append(f"block {opts['scores']} has {len(scans)} cells, not 1: no EPG")
    else:
        scores = str(report.parent / "cells" / scans[0].name / SCORES)
        kw = {k: v for k, v in opts.items() if k != "scores"}
        first, *more = (report / f"{name}.{ext}" for ext in FIGURE_FORMATS)
        got = contamination_report(
            ContaminationConfig(scores=scores, run=runs, plot=str(first), **kw), also=more
        )
        _write(report / f"{name}.md", render(format_epg(got["epg"]), "md"))
        files += [f"{name}.md", *(f"{name}.{ext}" for ext in FIGURE_FORMATS)]
    return files, notes


def write_infer_report(job: Job) -> tuple[list[str], list[str]]:
    """Per cell: the consistency report on the inferred items of its ``items`` block."""
    return _infer_report_files(job.exp, job.out, job.opts, job.inputs, job.ready, job.report)


def write_sci_report(job: Job) -> tuple[list[str], list[str]]:
    """The scientific-NLI report of its cells: a table, its JSON and the confusion plots."""
    from ..sci import SciReportConfig, sci_report

    opts, runs, report, name = job.opts, job.runs, job.report, job.out.name
    files: list[str] = []
    notes: list[str] = []
    sci_cfg = SciReportConfig(
        runs=runs, plot_dir=str(report / name), json=str(report / f"{name}.json"), **opts
    )
    sci = sci_report(sci_cfg)
    if sci is None:
        notes.append("no labelled records in its cells")
    else:
        table = f"{name}.{EXTENSIONS[sci_cfg.format]}"
        _write(report / table, sci["text"])
        files += [table, f"{name}.json"]
        files += [str(Path(p).relative_to(report)) for p in sci["plots"]]
    return files, notes


def write_logic_table(job: Job) -> tuple[list[str], list[str]]:
    """The readings' logic table: its aligned text, and its rows as JSON."""
    from ..metainference import LogicTableConfig, decide_table, logic

    cfg = LogicTableConfig(**job.opts)
    rows, _readings = decide_table(cfg)
    table = logic.format_table(rows, citations=cfg.citations)
    cited = [{**r, "paper": list(logic.CITATIONS.get(r["relation"], ()))} for r in rows]
    texts = {"md": f"```text\n{table}\n```"}
    texts["json"] = json.dumps(cited if cfg.citations else rows, indent=2, ensure_ascii=False)
    return _write_texts(job, texts), []


def write_stats(job: Job) -> tuple[list[str], list[str]]:
    """The dataset table of ``nlieval stats``, in Markdown and LaTeX."""
    from ..data import TasksToRead, task_stats

    texts: dict[str, str] = {}
    for fmt in ("md", "latex"):
        text = task_stats(TasksToRead(**job.opts, format=fmt))
        # `stats` prints aligned text for md: fenced, so that Markdown keeps it.
        texts[fmt] = f"```text\n{text}\n```" if fmt == "md" else text
    return _write_texts(job, texts), []


def write_linking_phrases(job: Job) -> tuple[list[str], list[str]]:
    """The linking phrases of distant supervision, in Markdown and LaTeX."""
    from ..ground import render
    from ..sci import linking_phrase_table

    texts = {fmt: render(linking_phrase_table(), fmt) for fmt in ("md", "latex")}
    return _write_texts(job, texts), []


def _write_texts(job: Job, texts: dict[str, str]) -> list[str]:
    # An output that writes one text per format: its name, the format's extension.
    files = []
    for fmt, text in texts.items():
        name = f"{job.out.name}.{EXTENSIONS[fmt]}"
        _write(job.report / name, text)
        files.append(name)
    return files


def _infer_report_files(
    exp: Experiment,
    out: Output,
    opts: dict[str, Any],
    inputs: dict[str, list[Cell]],
    ready: Sequence[Cell],
    report: Path,
) -> tuple[list[str], list[str]]:
    from ..ground import render
    from ..metainference import InferReportConfig, inferred, inferred_consistency

    cells_dir = report.parent / "cells"
    items = inputs.get("items", [])
    if len(items) != 1:
        raise DataError(
            exp.source, out.line, "items", f"block {opts['items']} has {len(items)} cells, not 1"
        )
    kw = {k: v for k, v in opts.items() if k not in ("items", "sources")}
    files: list[str] = []
    notes: list[str] = []
    for cell in ready:
        source = [c for c in inputs.get("sources", []) if c.model_name == cell.model_name]
        cfg = InferReportConfig(
            run=str(cells_dir / cell.name),
            items=str(cells_dir / items[0].name),
            source_run=str(cells_dir / source[0].name) if source else None,
            **kw,
        )
        got = inferred_consistency(cfg)
        doc = inferred.report_document(got["rows"], got["readings"])
        stem = f"{out.name}-{cell.name}"
        for fmt in ("md", "latex"):
            _write(report / f"{stem}.{EXTENSIONS[fmt]}", render(doc, fmt))
            files.append(f"{stem}.{EXTENSIONS[fmt]}")
        frames = {r.name: r.frames for r in got["readings"].values()}
        rows = [{**row, "frames": frames} for row in got["rows"]]
        _write(report / f"{stem}.json", json.dumps(rows, indent=2, sort_keys=True, default=str))
        files.append(f"{stem}.json")
        if "sources" in opts and not source:
            notes.append(
                f"{cell.name}: no cell of block {opts['sources']} of its model: unfiltered only"
            )
    return files, notes
