"""The JSON Schema of experiment files that editors read: the committed
``experiments/schema.json`` is what ``nlieval experiment schema`` writes now, and it
takes exactly the keys the reader takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.experiments import experiment_schema, schema_text
from nlieval.experiments.commands import COMMAND_NAMES
from nlieval.settings import read_value

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_current() -> None:
    committed = (ROOT / "experiments" / "schema.json").read_text()
    assert committed == schema_text(), (
        "run: nlieval experiment schema --out experiments/schema.json"
    )


def test_schema_knows_each_command_setting_and_refuses_others() -> None:
    schema = experiment_schema()
    run = schema["$defs"]["block-run"]
    assert run["additionalProperties"] is False
    # Flags of `nlieval run` (as field names) and of its engine options.
    for key in (
        "tasks",
        "shots",
        "seeds",
        "limit",
        "batch_size",
        "save_prompts",
        "dtype",
        "api_base",
    ):
        assert key in run["properties"], key
    assert "out" not in run["properties"]  # the driver names each cell's folder
    assert run["properties"]["save_prompts"]["type"] == "boolean"
    grid = schema["$defs"]["output-grid"]["properties"]
    assert "rows" in grid and "runs" not in grid and "format" not in grid


def test_shipped_experiment_files_validate() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "experiments" / "schema.json").read_text())
    import yaml

    files = sorted((ROOT / "experiments").glob("*.yaml"))
    assert files
    for path in files:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_the_schema_command_writes_the_committed_schema_into_a_new_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nlieval.cli import main

    out = tmp_path / "new" / "schema.json"
    assert main(["experiment", "schema", "--out", str(out)]) == 0
    assert out.read_text() == (ROOT / "experiments" / "schema.json").read_text()
    assert capsys.readouterr().out == f"written: {out}\n"


#: Values a file may give any setting: texts, lists of texts, a switch, null.
VALUES = ("1", "0,2", "abc", ["a", "b"], ["x"], True, None)


def _settings() -> list[tuple[str, str, Any]]:
    # Every setting of every block command and output kind, with its schema.
    from nlieval.experiments.commands import setting_fields
    from nlieval.experiments.report import KINDS, option_fields

    schema = experiment_schema()["$defs"]
    out = []
    for name in COMMAND_NAMES:
        props = schema[f"block-{name}"]["properties"]
        out += [(f"block-{name}", k, f) for k, f in setting_fields(name).items() if k in props]
    for kind in KINDS:
        props = schema[f"output-{kind}"]["properties"]
        out += [(f"output-{kind}", k, f) for k, f in option_fields(KINDS[kind]).items()]
    return out


def test_every_value_the_reader_takes_the_schema_takes() -> None:
    # The schema and the reader are one rule: an editor never flags a value the
    # experiment runs with (a repeatable flag's list: `run: [a, b]`). Expected: the
    # reader's own verdict on each value, checked by jsonschema against the schema.
    jsonschema = pytest.importorskip("jsonschema")
    schema = experiment_schema()["$defs"]
    for where, key, f in _settings():
        for value in VALUES:
            try:
                read = read_value(f, value)
            except ValueError:
                continue
            if isinstance(read, (str, int, float)) and type(read) is not type(value):
                continue  # a scalar the reader converts (--set's texts): not the file's type
            errors = list(
                jsonschema.Draft202012Validator(schema[where]["properties"][key]).iter_errors(value)
            )
            assert not errors, (where, key, value)


def test_a_metric_added_to_the_table_is_a_value_of_the_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # docs/contributing.md: a metric is one line of METRICS; the experiment schema's
    # metric choices are the table's, so a new one needs no second edit.
    from nlieval.contamination import ContaminationConfig
    from nlieval.metrics import METRICS, Metric

    assert ContaminationConfig  # its settings declared before the metric is added
    new = Metric("brier", "Brier score", item=lambda r: 0.0)
    monkeypatch.setitem(METRICS, "brier", new)
    schema = experiment_schema()["$defs"]
    assert "brier" in schema["block-contamination"]["properties"]["metric"]["enum"]
    assert "brier" in schema["output-epg"]["properties"]["metric"]["enum"]
