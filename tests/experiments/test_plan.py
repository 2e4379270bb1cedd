"""Planning: the count of cells checked against MAX_CELLS is the number planned."""

from __future__ import annotations

import pytest

from nlieval.experiments import count_cells, plan_cells
from nlieval.experiments import plan as plan_module
from nlieval.experiments.spec import parse_experiment
from nlieval.ground import DataError

# infer-build takes one `seed`: three seeds are three cells, though `each` is not given.
TEXT = """\
blocks: {items: {command: infer-build, task: smoke}}
matrix: [{block: items, seeds: [0, 1, 2]}]
"""


def test_a_singular_setting_split_is_counted() -> None:
    exp = parse_experiment(TEXT, "e.yaml")
    assert [c.name for c in plan_cells(exp, estimate=False)] == [
        "items-seed0",
        "items-seed1",
        "items-seed2",
    ]
    assert count_cells(exp) == 3


def test_a_singular_setting_split_cannot_pass_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "MAX_CELLS", 2)
    with pytest.raises(DataError, match="expands to 3 cells; at most 2"):
        plan_cells(parse_experiment(TEXT, "e.yaml"), estimate=False)
