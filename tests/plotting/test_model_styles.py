"""One model, one look: a hub name (``org/model-c``) gets the same colour and marker in
every kind of figure of a call, whether the call names it raw (the experiment report) or
as figures name it (``model-c``: the view), and whatever other series a figure draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.colors import to_hex

from nlieval.plotting import results, studies

NAMES = ["org/model-a", "org/model-b", "org/model-c"]
# By hand: the display names sorted, model-a, model-b, model-c: model-c is the third,
# colour C2 and the third marker "^"; model-a the first, C0 and "o".
WANT = {"model-a": ("C0", "o"), "model-c": ("C2", "^")}


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures the plots save, kept to look into."""
    figures: list[Any] = []
    for module in (results, studies):
        save = module.save

        def keep(fig: Any, path: Any, save: Any = save) -> Path:
            figures.append(fig)
            return save(fig, path)

        monkeypatch.setattr(module, "save", keep)
    return figures


def _looks(fig: Any) -> dict[str, tuple[str, str]]:
    # Each model's line in the figure: its label's model -> (colour, marker).
    # An errorbar's label is its container's, the data line its first part.
    out: dict[str, tuple[str, str]] = {}
    for ax in fig.axes:
        labelled = [(str(line.get_label()), line) for line in ax.get_lines()]
        labelled += [(str(c.get_label()), c.lines[0]) for c in ax.containers if c.lines[0]]
        for label, line in labelled:
            for model in WANT:
                if label.startswith(model) and "@" not in label:
                    look = (to_hex(line.get_color()), str(line.get_marker()))
                    assert out.setdefault(model, look) == look, label
    return out


def _rows(models: list[str]) -> list[dict[str, Any]]:
    return [
        {"model": m, "checkpoint": None, "task": "snli", "k": k, "accuracy": 0.4 + 0.1 * k,
         "accuracy_std": 0.0, "labels": ["e", "n", "c"], "seeds": [0]}
        for m in models
        for k in (0, 1)
    ]  # fmt: skip


@pytest.mark.parametrize("names", [NAMES, [n.split("/")[1] for n in NAMES]])
def test_a_model_has_one_colour_and_marker_in_every_figure(
    names: list[str], drawn: list[Any], tmp_path: Path
) -> None:
    from matplotlib import rc_context

    from nlieval.plotting.canvas import STYLE

    with rc_context(fname=str(STYLE)):  # the package's colour cycle, as the figures'
        want = {m: (to_hex(c), mk) for m, (c, mk) in WANT.items()}
    # model-c alone; model-c beside a checkpoint series of model-a; both: each figure
    # draws another subset, and model-c keeps its look in all.
    results.plot_accuracy_vs_shots(_rows(["org/model-c"]), tmp_path / "a.png", names=names)
    ckpt = [{**r, "model": "org/model-a", "checkpoint": "step-1"} for r in _rows(["x"])]
    results.plot_accuracy_vs_shots(
        [*ckpt, *_rows(["org/model-c"])], tmp_path / "b.png", names=names
    )
    results.plot_accuracy_vs_size(
        _rows(["org/model-a", "org/model-c"]),
        {"org/model-a": 1e8, "org/model-c": 1e9},
        tmp_path / "c.png",
        names=names,
    )
    dyn = [
        {**r, "checkpoint": f"step{s}", "accuracy": 0.3 + 0.1 * s}
        for s in (1, 2)
        for r in _rows(["org/model-c"])
        if r["k"] == 0
    ]
    results.plot_dynamics(dyn, {"step1": 1e6, "step2": 2e6}, tmp_path / "d.png", names=names)
    epg = [{"task": "snli", "model": "org/model-c", "checkpoint": None, "k": 0, "threshold": t,
            "pct_contaminated": 50 - 10 * t, "epg": 0.01 * t, "metric": "accuracy"}
           for t in (0.1, 0.5)]  # fmt: skip
    studies.plot_epg(epg, tmp_path / "e.png", names=names)
    shots_c, shots_ac, _size, dynamics, epg_fig = drawn
    for fig in (shots_c, shots_ac, dynamics, epg_fig):
        assert _looks(fig)["model-c"] == want["model-c"]
    # The size figure marks each point with its model's marker (the colour is its k),
    # named in the legend.
    size_markers = {
        str(text.get_text()): str(handle.get_marker())
        for handle, text in zip(
            _size.legends[0].legend_handles, _size.legends[0].get_texts(), strict=True
        )
    }
    assert size_markers["model-c"] == "^" and size_markers["model-a"] == "o"
