"""Bad experiment files: each is one line naming the file, the line and the key, and an
experiment folder that holds computed cells is left as it was (no byte, no file more).

Every case replaces one line of a good file (:data:`GOOD`); the line it names is that
line's number, counted by hand in the text below.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nlieval.experiments import LocalExecutor, read_experiment, run_experiment
from nlieval.ground import DataError

# Line numbers: 1 experiment, 2 backoff, 3 models, 4 tiny, 5 other, 6 blocks, 7 base,
# 8 matrix, 9 the entry, 10 outputs, 11 table.
GOOD = """\
experiment: t
backoff: 0
models:
  tiny: {model: MODEL}
  other: {model: MODEL, dtype: float32}
blocks:
  base: {command: run, tasks: [smoke], limit: 2}
matrix:
  - {block: base, models: [tiny]}
outputs:
  table: {kind: grid, label: Table 3, blocks: [base]}
"""

#: (line replaced, its new text, the key named, a part of the message)
CASES = [
    (1, "experimnt: t", "experimnt", "did you mean 'experiment'"),
    (7, "  base: {command: run, tsks: [smoke], limit: 2}", "tsks", "did you mean 'tasks'"),
    (7, "  base: {command: rn, tasks: [smoke]}", "command", "no command 'rn'"),
    (9, "  - {block: base, models: [tiyn]}", "models", "no model 'tiyn'"),
    (7, "  base: {command: run, tasks: [smokee], limit: 2}", "tasks", "did you mean 'smoke'"),
    (11, "  table: {kind: grid, blocks: [bsae]}", "blocks", "no block 'bsae'"),
    (5, "  tiny: {model: MODEL}", "tiny", "given twice (first on line 4)"),
    (9, "  - {block: base, models: [tiny, tiny]}", "matrix", "cell base-tiny comes twice"),
    (7, "  base: {command: run, tasks: [smoke], shots: [-1]}", "shots", "0 or more"),
    (
        7,
        "  base: {command: run, tasks: [smoke], limit: many}",
        "limit",
        "expected a positive integer, got 'many'",
    ),
    (11, "  table: {kind: gird, blocks: [base]}", "kind", "did you mean 'grid'"),
    (11, "  table: {kind: grid, rws: [model], blocks: [base]}", "rws", "did you mean 'rows'"),
    (11, "  table: {kind: figure, blocks: [base]}", "figure", "names its figure"),
    (11, "  table: {kind: items, sort: loudest, blocks: [base]}", "sort", "expected one of"),
    (5, "  other: {model: MODEL, dtyp: float32}", "dtyp", "did you mean 'dtype'"),
    (4, "  tiny: {model: MODEL, resources: {gpu: 1}}", "gpu", "did you mean 'gpus'"),
    (9, "  - {block: base, models: [tiny], shot: [0]}", "shot", "did you mean 'shots'"),
    (9, "  - {block: base, models: [tiny], each: [shot]}", "each", "not an axis"),
    (4, "  a/b: {model: MODEL}", "a/b", "names folders and files"),
    (9, "  - {block: base}", "models", "names no model"),
    (7, "  base: {command: run, tasks: [smoke], out: x}", "out", "not a setting of command run"),
    (2, "backoff: -1", "backoff", "from 0 to 3600"),
    # Before any cell runs, not a KeyError when the report is written after them all.
    (11, "  table: {kind: breakdown, blocks: [base]}", "by", "needs the option 'by'"),
    # Read when the file is, not by Slurm after other cells' jobs went in; a bare number
    # is not megabytes.
    (4, "  tiny: {model: MODEL, resources: {time: 1h}}", "time", "not a time limit"),
    (4, "  tiny: {model: MODEL, resources: {memory: 8}}", "memory", "with its unit"),
    (
        9,
        "  - {block: base, models: [tiny], seeds: [1, 2], each: [seeds], tasks: [smoke]}",
        None,
        None,
    ),
]


def _file(tmp_path: Path, model: Path, line: int, text: str) -> Path:
    lines = GOOD.replace("MODEL", str(model)).splitlines()
    lines[line - 1] = text
    path = tmp_path / "bad.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def computed(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> tuple[Path, Path]:
    """An experiment folder with its one cell done (the good file run once)."""
    root = tmp_path_factory.mktemp("computed")
    good = root / "good.yaml"
    good.write_text(GOOD.replace("MODEL", str(tiny_llama)))
    summary = run_experiment(read_experiment(good), root / "out")
    assert not summary.failed
    return root / "out", tiny_llama


def _assert_refused(path: Path, out: Path, line: int, key: str, part: str) -> None:
    before = _snapshot(out)
    with pytest.raises(DataError) as err:
        run_experiment(read_experiment(path), out, executor=LocalExecutor(sleep=lambda s: None))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}:{line}: field '{key}': "), msg
    assert part in msg, msg
    assert _snapshot(out) == before


@pytest.mark.parametrize(("line", "text", "key", "part"), [c for c in CASES if c[2] is not None])
def test_bad_file_is_one_line_and_touches_nothing(
    tmp_path: Path, computed: tuple[Path, Path], line: int, text: str, key: str, part: str
) -> None:
    out, model = computed
    _assert_refused(_file(tmp_path, model, line, text), out, line, key, part)


def test_a_good_variant_is_not_refused(tmp_path: Path, computed: tuple[Path, Path]) -> None:
    # The last case is a good file (a split axis): the checks above are not "refuse all".
    _, model = computed
    line, text, _, _ = CASES[-1]
    from nlieval.experiments import plan_cells

    names = [
        c.name
        for c in plan_cells(read_experiment(_file(tmp_path, model, line, text)), estimate=False)
    ]
    assert names == ["base-tiny-seed1", "base-tiny-seed2"]


def test_alias_bomb_is_refused_before_it_expands(
    tmp_path: Path, computed: tuple[Path, Path]
) -> None:
    out, model = computed
    path = tmp_path / "bomb.yaml"
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):  # 9 ** 9 strings, were the aliases expanded
        prev = chr(ord("a") + i - 1)
        lines.append(f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [*{prev}, *{prev}, *{prev}]")
    path.write_text(GOOD.replace("MODEL", str(model)) + "\n".join(lines) + "\n")
    before = _snapshot(out)
    with pytest.raises(DataError) as err:
        read_experiment(path)
    # Line 13 holds the first alias (*a): the 11 lines of GOOD, then line 12 defines &a.
    assert str(err.value) == f"{path}:13: invalid YAML: aliases (*name) are not allowed"
    assert _snapshot(out) == before


def test_a_million_cells_are_refused_before_any_is_made(
    tmp_path: Path, computed: tuple[Path, Path]
) -> None:
    out, model = computed
    seeds = ", ".join(str(i) for i in range(1001))
    # 1001 seeds x 1001 checkpoints, each its own cell: 1002001 cells.
    axes = f"seeds: [{seeds}], checkpoints: [{seeds}], each: [seeds, checkpoints]"
    text = f"  - {{block: base, models: [tiny], {axes}}}"
    path = _file(tmp_path, model, 9, text)
    _assert_refused(path, out, 9, "matrix", "expands to 1002001 cells; at most 10000")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("limit", "--set: expected KEY=VALUE, got 'limit'"),
        (
            "modles=tiny",
            "--set modles=tiny: field 'modles': no block has a setting 'modles'; "
            "did you mean 'models'?",
        ),
        ("models=smol", "field 'models': no model 'smol' in"),
        ("limit=x", "--set limit=x: field 'limit': expected a positive integer, got 'x'"),
        ("base.shots=0,-2", "--set base.shots=0,-2: field 'shots': shot counts are 0 or more"),
        (
            "bsae.limit=3",
            "--set bsae.limit=3: field 'bsae.limit': no block 'bsae'; did you mean 'base'?",
        ),
    ],
)
def test_bad_override_is_one_line(
    tmp_path: Path, computed: tuple[Path, Path], override: str, message: str
) -> None:
    out, model = computed
    path = tmp_path / "good.yaml"
    path.write_text(GOOD.replace("MODEL", str(model)))
    before = _snapshot(out)
    with pytest.raises(DataError) as err:
        run_experiment(read_experiment(path, [override]), out)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert _snapshot(out) == before


def test_an_executor_not_available_is_one_line() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nlieval",
            "experiment",
            "run",
            "e.yaml",
            "--out",
            "x",
            "--executor",
            "dask",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "argument --executor: invalid choice: 'dask' (choose from 'local', 'slurm', 'ray')"
        )
    )


@pytest.mark.parametrize(
    ("name", "module", "extra"), [("slurm", "submitit", "cluster"), ("ray", "ray", "scale")]
)
def test_an_executor_not_installed_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, module: str, extra: str
) -> None:
    from nlieval.experiments import executor_named

    monkeypatch.setitem(sys.modules, module, None)  # import fails as when not installed
    with pytest.raises(ValueError) as err:
        executor_named(name, tmp_path)
    assert str(err.value).startswith(f"--executor {name} needs ")
    assert str(err.value).endswith(f"pip install 'nlieval[{extra}]'")
