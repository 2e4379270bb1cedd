"""The command line: every command, and one-line errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval.cli import main
from tests.helpers.records import saved_records

GOOD = (
    '{"pairID": "%d", "sentence1": "A dog runs.", "sentence2": "An animal moves.", '
    '"gold_label": "%s"}\n'
)


def _task(tmp_path: Path, lines: str) -> Path:
    (tmp_path / "d.jsonl").write_text(lines)
    yaml = tmp_path / "task.yaml"
    yaml.write_text(
        "name: mine\npath: d.jsonl\n"
        "fields: {id: pairID, premise: sentence1, hypothesis: sentence2, label: gold_label}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    return yaml


def _good_lines(n: int) -> str:
    labels = ["entailment", "neutral", "contradiction"]
    return "".join(GOOD % (i, labels[i % 3]) for i in range(n))


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (_good_lines(2) + '{"pairID": "9", "sentence1": \n', [":3:", "JSON"]),
        (
            _good_lines(1) + '{"pairID": "9", "sentence1": "a", "gold_label": "neutral"}\n',
            [":2:", "sentence2"],
        ),
        (_good_lines(1) + GOOD % (7, "maybe"), [":2:", "gold_label", "maybe"]),
        ("", ["empty"]),
    ],
)
def test_bad_input_gives_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expect: list[str]
) -> None:
    yaml = _task(tmp_path, content)
    assert main(["stats", "--task", str(yaml)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "d.jsonl" in err
    for word in expect:
        assert word in err


def test_wrong_path_and_wrong_model_fail_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--task", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    out = tmp_path / "run"
    assert main(["run", "--model", "no-such-model", "--task", "smoke", "--out", str(out)]) == 2
    assert "no-such-model" in capsys.readouterr().err
    assert not out.exists()


def test_skip_bad_counts_skipped_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    yaml = _task(tmp_path, _good_lines(3) + "{oops\n" + GOOD % (8, "maybe"))
    assert main(["stats", "--task", str(yaml), "--skip-bad"]) == 0
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith("mine")][0]
    assert " 3 " in row and "bad lines=2" in row


def test_run_report_and_tasks(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _task(tmp_path, _good_lines(12))
    out = tmp_path / "run"
    argv = [
        "run",
        "--model",
        str(tiny_llama),
        "--task",
        f"smoke,{yaml}",
        "--shots",
        "0,2",
        "--seeds",
        "2",
        "--limit",
        "6",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| smoke | 2 | 6 | 2 |" in table.replace(str(tiny_llama), "M")
    records = saved_records(out)
    # 2 tasks x 6 items x (k=0 once + k=2 for two seeds)
    assert len(records) == 2 * 6 * 3
    assert main(["report", str(out)]) == 0
    assert "| mine | 2 | 6 | 2 |" in capsys.readouterr().out.replace(str(tiny_llama), "M")
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    for name in (
        "snli",
        "mnli_m",
        "hans",
        "anli_r3",
        "alphanli",
        "chaosnli_snli",
        "scinli",
        "sick",
        "rte",
    ):
        assert name in listing


def test_run_sample_is_the_same_whatever_the_batch_size(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collections import Counter

    from nlieval.data import load_task

    scores = []
    for bs in ("1", "5"):
        out = tmp_path / f"bs{bs}"
        argv = ["run", "--model", str(tiny_llama), "--task", "smoke", "--sample", "9"]
        assert main([*argv, "--batch-size", bs, "--out", str(out), "--no-progress"]) == 0
        scores.append({r.item_id: r.loglik for r in saved_records(out)})
    assert scores[0].keys() == scores[1].keys() and len(scores[0]) == 9
    for item_id, loglik in scores[0].items():
        assert loglik == pytest.approx(scores[1][item_id], abs=1e-4)
    gold = {it.id: it.label for it in load_task("smoke").items}
    shares = Counter(gold[i] for i in scores[0])
    assert Counter(gold.values()) == {lab: 16 for lab in shares} and set(shares.values()) == {3}
    assert "sample 9 by label (seed 0)" in (tmp_path / "bs1" / "summary.md").read_text()


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    # `nlieval tasks | head -0`: the reader has closed the pipe before the first write;
    # the writer must neither print a traceback nor claim an error of its own.
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "nlieval.cli", "tasks"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and proc.returncode == 141, err
