"""The JSON Schema of experiment files that editors read: the committed
``experiments/schema.json`` is what ``nlieval experiment schema`` writes now, and it
takes exactly the keys the reader takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.experiments import experiment_schema, schema_text

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
