"""Every option of an output reaches the library function that makes it: for each kind,
each field of its settings class that the report does not set itself changes what the
library is called with or what the report writes; the report's own fields are refused in
one line naming the file, the line and the key.

The library functions are replaced by recorders here (what each is called with is the
point; their own tests check what they compute), so the test needs no run folder."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.analyses import chaosnli
from nlieval.experiments import report as rep
from nlieval.experiments.plan import Cell
from nlieval.experiments.spec import Resources, parse_experiment
from nlieval.ground import DataError, Table
from tests.helpers.figures import record_savefig, series_of

#: What each output needs to be an output at all.
BASE: dict[str, dict[str, Any]] = {
    "figure": {"figure": "shots"},
    "breakdown": {"by": ["genre"]},
    "infer-report": {"items": "other"},
    "epg": {"scores": "other"},
    # The two go together.
    "sci-report": {"in_domain": "snli", "out_of_domain": "mnli"},
    "chaosnli-figure": {"figure": "entropy"},
    "stats": {"tasks": ["smoke"]},
}

#: A value other than the default, for every option of every kind. A field added to a
#: settings class without a value here fails `test_every_option_has_a_value`.
VALUES: dict[tuple[str, str], Any] = {
    **{
        ("grid", k): v
        for k, v in {
            "name": ["m=Model M"],
            "rows": ["task"],
            "cols": ["model"],
            "metrics": ["macro_f1"],
            "reference": "runs/ref",
            "reference_by": "template=hyp-only",
            "no_average": True,
            "no_overall": True,
            "ci": 0.9,
            "resamples": 50,
            "seed": 3,
            "over_checkpoints": True,
            "allow_mixed": True,
            "percent": True,
            "digits": 1,
        }.items()
    },
    **{
        ("figure", k): v
        for k, v in {
            "width": "column",
            "name": ["m=Model M"],
            "sizes": ["m=1e9"],
            "pattern": r"step(\d+)",
            "scale": 2,
            "metric": "js_distance",
            "axis": "steps",
        }.items()
    },
    **{
        ("compare", k): v
        for k, v in {
            "resamples": 50,
            "seed": 3,
            "confidence": 0.9,
            "correction": "bh",
            "format": "latex",
        }.items()
    },
    **{
        ("breakdown", k): v
        for k, v in {"name": ["m=Model M"], "pool": True, "by": ["gold"]}.items()
    },
    **{
        ("items", k): v
        for k, v in {
            "name": ["m=Model M"],
            "filter": ["disagree"],
            "sort": "entropy",
            "limit": 5,
            "max_rows": 7,
            "data_dir": "data",
            "ids": ["12", "407"],
            "full": True,
            "format": "csv",
        }.items()
    },
    **{
        ("chaosnli", k): v
        for k, v in {
            "name": ["m=Model M"],
            "bins": 3,
            "human_splits": 10,
            "human_seed": 4,
            "human_js": ["chaosnli_snli=0.07"],
            "common_items": True,
            "against": "majority",
            "format": "latex",
        }.items()
    },
    **{
        ("dynamics", k): v
        for k, v in {
            "width": "column",
            "bins": 3,
            "human_splits": 10,
            "human_seed": 4,
            "human_js": ["chaosnli_snli=0.07"],
            "against": "majority",
            "format": "latex",
        }.items()
    },
    **{("figure", k): v for k, v in {"reference": ["smoke=0.5"], "reference_label": "R"}.items()},
    **{
        ("chaosnli-figure", k): v
        for k, v in {
            "width": "column",
            "name": ["m=Model M"],
            "bins": 3,
            "human_splits": 10,
            "human_seed": 4,
            "human_js": ["chaosnli_snli=0.07"],
            "common_items": True,
            "reference": ["chaosnli_snli=0.23"],
            "reference_label": "BERT (a paper)",
            "figure": "divergence",
            "metric": "kl",
            "curves": "majority",
            "models": ["m"],
        }.items()
    },
    **{
        ("logic-table", k): v
        for k, v in {
            "readings": ["reading.yaml"],
            "frames": "S5",
            "formulas": False,
            "citations": True,
        }.items()
    },
    **{
        ("stats", k): v
        for k, v in {
            "tasks": ["snli"],
            "data_dir": "data",
            "split": "all",
            "skip_bad": True,
        }.items()
    },
    **{
        ("sci-report", k): v
        for k, v in {
            "width": "column",
            "in_domain": "anli",
            "out_of_domain": "hans",
            "plot_format": "pdf",
            "over_checkpoints": True,
            "format": "latex",
        }.items()
    },
    **{("infer-report", k): v for k, v in {"readings": ["reading.yaml"], "frames": "S5"}.items()},
    **{
        ("epg", k): v
        for k, v in {
            "width": "column",
            "skip_bad": True,
            "thresholds": [0.5],
            "metric": "macro_f1",
        }.items()
    },
}

OPTIONS = [(kind, name) for kind in rep.KINDS for name in rep.option_fields(rep.KINDS[kind])]


def _experiment(folder: Path, kind: str, options: dict[str, Any]) -> Path:
    output = {"kind": kind, "blocks": ["base"], **BASE.get(kind, {}), **options}
    path = folder / "e.yaml"
    path.write_text(
        "models: {m: smollm2-135m}\n"
        "blocks:\n"
        "  base: {command: run, tasks: [smoke]}\n"
        "  other: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        "outputs:\n"
        f"  out: {json.dumps(output)}\n"
    )
    return path


#: The value an option's settings field holds, where the flag converts what the YAML
#: gives (written by hand from each flag's help: TASK=VALUE and NAME=LABEL entries are
#: pairs, a repeated or comma-separated flag is a tuple); any other option holds the
#: YAML's value itself, a list as a tuple.
CONVERTED: dict[tuple[str, str], Any] = {
    **{(kind, "name"): (("m", "Model M"),) for kind in rep.KINDS},
    **{(kind, "human_js"): (("chaosnli_snli", 0.07),) for kind in rep.KINDS},
    ("figure", "reference"): (("smoke", 0.5),),
    ("chaosnli-figure", "reference"): (("chaosnli_snli", 0.23),),
}

#: The report's calls that read a settings object and call on into the library (whose
#: own calls are recorded): spied on, not replaced.
SPIED = {
    "dynamics_of": "nlieval.analyses",
}


def _expected(kind: str, option: str) -> Any:
    if (kind, option) in CONVERTED:
        return CONVERTED[kind, option]
    value = VALUES[kind, option]
    return tuple(value) if isinstance(value, list) else value


class Calls:
    """The library functions of the report, each replaced by a recorder of its call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[str] = []
        #: Each call as made: the function's name, its arguments and keywords.
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        for name, module in SPIED.items():
            real = getattr(importlib.import_module(module), name)
            monkeypatch.setattr(f"{module}.{name}", self._recorder(name, None, real))
        fakes: dict[str, tuple[str, Any]] = {
            "grid_of": ("nlieval.reports", None),
            "render_grid": ("nlieval.analyses", "| a |\n|---|\n| 1 |"),
            "figure_from": ("nlieval.reports", Path("f.png")),
            "compare_report": ("nlieval.reports", []),
            "breakdown_from": ("nlieval.reports", "| a |\n|---|\n| 1 |"),
            "items_from": ("nlieval.reports", "| a |\n|---|\n| 1 |"),
            "chaosnli_scores": ("nlieval.analyses", (chaosnli.report([]), None)),
            "follow_run": (
                "nlieval.analyses.commands",
                {"rows": [], "written": [], "skipped": []},
            ),
            "sci_report": ("nlieval.sci", {"text": "t", "plots": [], "json": None}),
            "inferred_consistency": ("nlieval.metainference", {"rows": [], "readings": {}}),
            "contamination_report": ("nlieval.contamination", {"epg": []}),
            "chaosnli_figure": ("nlieval.analyses", Path("f.png")),
            "task_stats": ("nlieval.data", "task  split  items"),
            "decide_table": ("nlieval.metainference", ([], {})),
        }
        for name, (module, result) in fakes.items():
            monkeypatch.setattr(f"{module}.{name}", self._recorder(name, result))

    def _recorder(self, name: str, result: Any, real: Any = None) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            if real is not None:
                return real(*args, **kwargs)
            self.seen.append(f"{name}{args!r}{sorted(kwargs.items())!r}")
            return result

        return call


def _made(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    options: dict[str, Any],
    record: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None,
) -> tuple[list[str], list[str], dict[str, bytes], list[str]]:
    """What the report calls and writes for an output of ``kind`` with ``options``;
    ``record`` gets each library call as made."""
    folder = tmp_path / json.dumps(options, sort_keys=True).encode().hex()[:40]
    folder.mkdir()
    exp = parse_experiment(_experiment(folder, kind, options).read_text(), "e.yaml")
    out = exp.outputs[0]
    calls = Calls(monkeypatch)
    cell = Cell("other-m", "other", "run", "m", "smollm2-135m", (), Resources(), "e", 1, {}, ())
    inputs = {"items": [cell], "scores": [cell]}
    report = tmp_path / "report"  # one folder for both calls: the paths are the same
    report.mkdir(exist_ok=True)
    for old in report.rglob("*"):
        if old.is_file():
            old.unlink()
    runs = ("cells/base-m", "cells/other-m") if kind == "compare" else ("cells/base-m",)
    # A table that reads no cell (stats, logic-table, linking-phrases) is given none.
    if rep.KINDS[kind].reads_cells:
        files, notes = rep._write_output(exp, out, runs, report, inputs, [cell])
    else:
        files, notes = rep._write_output(exp, out, (), report)
    written = {f: (report / f).read_bytes() for f in files if (report / f).is_file()}
    if record is not None:
        record += calls.calls
    return calls.seen, files, written, notes


def _settings_in(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]], cls: type) -> list[Any]:
    """Every settings object of class ``cls`` handed to a recorded library call."""
    return [a for _, args, kwargs in calls for a in (*args, *kwargs.values()) if isinstance(a, cls)]


def test_every_option_has_a_value() -> None:
    missing = [o for o in OPTIONS if o not in VALUES]
    assert not missing, f"no test value for {missing}"


@pytest.mark.parametrize(("kind", "option"), OPTIONS)
def test_each_option_of_an_output_reaches_its_library_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, option: str
) -> None:
    base = _made(tmp_path, monkeypatch, kind, {})
    record: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    given = _made(tmp_path, monkeypatch, kind, {option: VALUES[kind, option]}, record)
    assert base[0], f"{kind}: no library call recorded"
    # The library was called otherwise, or the report wrote something else.
    assert given != base, f"{kind}: option {option} changed nothing"
    # And the value itself reached the call: the settings object the report hands the
    # library holds it, as the command's flag would have read it.
    handed = _settings_in(record, rep.KINDS[kind].cls())
    assert handed, f"{kind}: no {rep.KINDS[kind].cls().__name__} reached a library call"
    want = _expected(kind, option)
    for settings in handed:
        assert getattr(settings, option) == want, f"{kind}: {option}"


@pytest.mark.parametrize(
    ("kind", "value", "ext"),
    [
        ("items", "csv", "csv"),
        ("items", "latex", "tex"),
        ("compare", "latex", "tex"),
        ("chaosnli", "latex", "tex"),
        ("dynamics", "latex", "tex"),
        ("sci-report", "latex", "tex"),
    ],
)
def test_a_table_format_names_the_file_it_is_written_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, value: str, ext: str
) -> None:
    _, files, _, _ = _made(tmp_path, monkeypatch, kind, {"format": value})
    assert [f for f in files if f.endswith(f".{ext}")]
    assert not [f for f in files if f.endswith(".md")]


def test_a_compare_table_in_latex_is_booktabs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = [Table.of(["a"], [["1"]])]
    monkeypatch.setattr("nlieval.analyses.comparison_table", lambda rows: table)
    _, _, written, _ = _made(tmp_path, monkeypatch, "compare", {"format": "latex"})
    assert b"\\toprule" in written["out.tex"]


def test_options_refused_together_are_one_line_before_any_cell(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "sci-report", {"out_of_domain": None})
    exp = parse_experiment(path.read_text(), str(path))
    with pytest.raises(DataError, match=r"^.*e\.yaml:7: output kind sci-report: .*together"):
        rep.check_outputs(exp)


#: The ChaosNLI text of two items scored by a model "m" whose probabilities are the
#: humans' own (so its divergences are 0): item a, 100 of 100 annotators on entailment
#: (gold entailment, predicted entailment); item b, 50/50 entailment/neutral (gold
#: neutral, predicted entailment, majority entailment by its first-listed tie).
#: By hand, natural log: uniform vs a, M = (2/3, 1/6, 1/6), JS div = (ln 1.5 + ln2/3)/2
#: = 0.31826, distance 0.56414, KL = ln 3 = 1.09861; uniform vs b, M = (5/12, 5/12, 1/6),
#: JS div = (ln 1.2 + (2 ln 0.8 + ln 2)/3)/2 = 0.13230, distance 0.36374, KL = ln 1.5;
#: the means over a and b: 0.4639, 0.2253, 0.7520. Human split-half: 0 on a; on b the
#: expected JS distance between two halves of 50 (hypergeometric, checked with scipy in
#: the test): 0.02805 (its square's mean 0.00254), halved over the two items.
#: Entropy 0 and 1 bit, two quantile bins; Wilson 95% of 1/1 is [1/(1+z^2), 1] =
#: [0.207, 1], of 0/1 [0, z^2/(1+z^2)] = [0, 0.793]. Only item a is right for all.
CHAOSNLI_TEXT = """\
| model | task | k | n | JS distance | JS divergence | KL(human‖model) | acc original | acc majority |
|---|---|---|---|---|---|---|---|---|
| m | chaosnli_snli | 0 | 2 | 0.0000 | 0.0000 | 0.0000 | 0.5000 | 1.0000 |
| uniform (baseline) | chaosnli_snli | - | 2 | 0.4639 | 0.2253 | 0.7520 | - | - |
| human split-half (exact) | chaosnli_snli | - | 2 | 0.0280 | 0.0025 | - | - | - |

Accuracy by human-label entropy (quantile bins):

| model | task | k | entropy (bits) | n | acc original [95% Wilson] | acc majority [95% Wilson] | JS distance | KL(human‖model) |
|---|---|---|---|---|---|---|---|---|
| m | chaosnli_snli | 0 | 0.000–0.500 | 1 | 1.000 [0.207, 1.000] | 1.000 [0.207, 1.000] | 0.000 | 0.000 |
| m | chaosnli_snli | 0 | 0.500–1.000 | 1 | 0.000 [0.000, 0.793] | 1.000 [0.207, 1.000] | 0.000 | 0.000 |

[ , ]: 95% Wilson interval of the accuracy over the bin's n items (of the mean over seeds where there are several)

Items every compared system got right:

chaosnli_snli: 1 of 2 items right (against the original label) for all 1 systems

| model | task | k | n | JS distance | JS divergence | KL(human‖model) | acc original | acc majority |
|---|---|---|---|---|---|---|---|---|
| m | chaosnli_snli | 0 | 1 | 0.0000 | 0.0000 | 0.0000 | 1.0000 | 1.0000 |
| uniform (baseline) | chaosnli_snli | - | 1 | 0.5641 | 0.3183 | 1.0986 | - | - |
| human split-half (exact) | chaosnli_snli | - | 1 | 0.0000 | 0.0000 | - | - | - |
"""  # noqa: E501 (the tables as written)


def test_chaosnli_text_is_the_commands(tmp_path: Path) -> None:
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import hypergeom

    from nlieval.runs import RunFolder
    from nlieval.types import Record

    nli = ("entailment", "neutral", "contradiction")

    def rec(item: str, probs: tuple[float, ...], pred: str, gold: str, counts: list[int]) -> Record:
        meta = {"human_counts": counts, "majority_label": "entailment"}
        return Record("chaosnli_snli", item, "m", 0, 0, nli, (0.0,) * 3, probs, pred, gold,
                      meta=meta)  # fmt: skip

    run = tmp_path / "cells" / "base-m"
    run.mkdir(parents=True)
    RunFolder(str(run)).append(
        [
            rec("a", (1.0, 0.0, 0.0), "entailment", "entailment", [100, 0, 0]),
            rec("b", (0.5, 0.5, 0.0), "entailment", "neutral", [50, 50, 0]),
        ]
    )
    # The human line's digits above, from scipy: the halves' JS distance over every split.
    halves = [
        (hypergeom(100, 50, 50).pmf(x), jensenshannon([x, 50 - x, 0], [50 - x, x, 0]))
        for x in range(51)
    ]
    assert f"{sum(p * d for p, d in halves) / 2:.4f}" == "0.0280"
    assert f"{sum(p * d * d for p, d in halves) / 2:.4f}" == "0.0025"
    path = tmp_path / "e.yaml"
    path.write_text(
        "models: {m: smollm2-135m}\n"
        "blocks:\n"
        "  base: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        "outputs:\n"
        "  out: {kind: chaosnli, blocks: [base], bins: 2}\n"
    )
    exp = parse_experiment(path.read_text(), str(path))
    report = tmp_path / "report"
    report.mkdir()
    files, notes = rep._write_output(exp, exp.outputs[0], (str(run),), report, {}, [])
    assert (files, notes) == (["out.md", "out/chaosnli.json"], [])
    assert (report / "out.md").read_text() == CHAOSNLI_TEXT


OWN = [
    (kind, name)
    for kind, k in rep.KINDS.items()
    for name in k.own
    if name not in rep.BLOCK_OPTIONS.get(kind, ()) and name != "kind"
]


@pytest.mark.parametrize(("kind", "option"), OWN)
def test_an_option_the_report_sets_itself_is_one_line(
    tmp_path: Path, kind: str, option: str
) -> None:
    path = _experiment(tmp_path, kind, {option: "x"})
    exp = parse_experiment(path.read_text(), str(path))
    with pytest.raises(DataError) as err:
        rep.check_outputs(exp)
    assert str(err.value).startswith(f"{path}:7: field '{option}': not an option of output kind")
    assert "\n" not in str(err.value)


def test_a_repeatable_option_is_one_value_per_entry(tmp_path: Path) -> None:
    options = {"name": ["m=Model M", "N"], "human_js": ["chaosnli_snli=0.07", "chaosnli_mnli=0.1"]}
    path = _experiment(tmp_path, "chaosnli", options)
    exp = parse_experiment(path.read_text(), str(path))
    got = rep.output_options(exp, exp.outputs[0])
    assert got["name"] == (("m", "Model M"), ("", "N"))
    assert got["human_js"] == (("chaosnli_snli", 0.07), ("chaosnli_mnli", 0.1))


@pytest.mark.parametrize("kind", ["figure", "epg"])
def test_a_figure_is_drawn_once_and_saved_as_png_and_pdf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    from nlieval.contamination import write_scores
    from nlieval.runs import RunFolder
    from nlieval.types import Record

    # The real drawers on four hand-written records of one cell (k = 0): a and b right,
    # c and d wrong; the scan cell's contamination scores 1, 0.5, 0.2, 0.
    labels = ("entailment", "neutral")
    run = tmp_path / "cells" / "base-m"
    run.mkdir(parents=True)
    RunFolder(str(run)).append(
        [
            Record("smoke", i, "m", 0, 0, labels, (0.0, 0.0), (0.5, 0.5), pred, labels[0])
            for i, pred in zip("abcd", ("entailment",) * 2 + ("neutral",) * 2, strict=True)
        ]
    )
    scores = [("a", 1.0), ("b", 0.5), ("c", 0.2), ("d", 0.0)]
    write_scores(
        [{"task": "smoke", "item_id": i, "score": v} for i, v in scores],
        tmp_path / "cells" / "other-m" / "scores.jsonl",
    )
    saved = record_savefig(monkeypatch)
    exp = parse_experiment(_experiment(tmp_path, kind, {}).read_text(), "e.yaml")
    cell = Cell("other-m", "other", "run", "m", "smollm2-135m", (), Resources(), "e", 1, {}, ())
    report = tmp_path / "report"
    report.mkdir()
    files, _ = rep._write_output(exp, exp.outputs[0], (str(run),), report, {"scores": [cell]})
    assert {"out.png", "out.pdf"} <= set(files)
    assert (report / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (report / "out.pdf").read_bytes()[:5] == b"%PDF-"
    # One drawing, saved twice: once per format.
    [fig] = saved.figures
    assert saved.saves_of(fig) == 2
    [ax] = [a for a in fig.axes if a.get_visible()]
    # What it draws: accuracy 2/4 at k = 0 (shots); EPG 0.5 where c is in (t < 0.2) and
    # where it is not (0.2 <= t < 0.5), 0.5 - 1/3 = 1/6 from t = 0.5 (epg).
    (x, y), *rest = series_of(ax).values()
    assert not rest
    if kind == "figure":
        assert (x, y) == ([0.0], [0.5])
    else:
        assert (x, y) == (
            [75.0] * 2 + [50.0] * 3 + [25.0] * 5,
            [0.5] * 5 + [pytest.approx(1 / 6)] * 5,
        )
