"""Bad inputs by command, and kill -9 on `run`: what a hostile new user sees.

Each case runs ``nlieval.cli.main(argv)`` in this process (``--subprocess``: ``python -m
nlieval.cli ...`` in a child process, the same outcomes, slower) on files made here (a
tiny random Llama and BERT are built for the commands that need a model; no network)
and is classed by what the user gets:

* clear error: exit status != 0 and stderr is one ``nlieval: error: ...`` line that
  names the file (or the flag) at fault;
* warning: exit 0, and a warning on stderr naming the file (cases whose right answer is
  to go on: a blank line in records.jsonl, an identical copy of a record);
* traceback: a Python traceback on stderr (target 0);
* silent: exit 0 without a word (target 0), or a hang past the time limit.

Then ``--kills N`` trials of kill -9 on ``nlieval run`` at a random moment, each resumed
by the same command: the records must hold one row per key and equal an uninterrupted
run's predictions.

    python benchmarks/reliability.py            # all cases, 5 kill -9 trials
    python benchmarks/reliability.py --kills 0 --only report,build
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.helpers: the tiny-model builders of the test suite
sys.path.insert(0, str(ROOT / "benchmarks"))

from reliability_kit import LABELS3, Case, nli_rows, sci_task, task, write  # noqa: E402


def POOL(name: str) -> str:  # noqa: N802
    """A task YAML line that makes the data file its own train split (``train`` needs one)."""
    return f"pool: {name}.jsonl\n"


def _csv_task(d: Path) -> str:
    write(d / "c.csv", "premise,hypothesis,label\na,b,entailment\na,b,neutral,extra\n")
    return str(write(d / "c.yaml", f"path: c.csv\nlabels: {LABELS3}\n"))


def _gz_cut(d: Path, name: str, line: str) -> str:
    whole = gzip.compress((line * 3000).encode())
    return str(write(d / name, whole[: len(whole) // 2]))


def _records_case(change: Callable[[list[str]], list[str]]) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        folder = d / "good_run"
        lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        bad = d / f"bad_run_{random.random():.9f}"
        bad.mkdir()
        for f in ("config.json", "results.json", "timing.json"):
            (bad / f).write_bytes((folder / f).read_bytes())
        (bad / "records.jsonl").write_text("".join(change(lines)), encoding="utf-8")
        return ["report", str(bad)]

    return argv


def _without_gold(lines: list[str]) -> list[str]:
    row = json.loads(lines[3])
    del row["gold"]
    return lines[:3] + [json.dumps(row) + "\n"] + lines[4:]


def _conflict(lines: list[str]) -> list[str]:
    row = json.loads(lines[2])
    row["pred"] = next(lab for lab in row["labels"] if lab != row["pred"])
    return lines + [json.dumps(row) + "\n"]


def _folder_file(name: str, content: bytes) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        bad = d / f"bad_{name}_{len(content)}"
        bad.mkdir()
        for f in ("config.json", "results.json", "records.jsonl"):
            (bad / f).write_bytes((d / "good_run" / f).read_bytes())
        (bad / name).write_bytes(content)
        return ["report", str(bad)]

    return argv


def cases(model: str, bert: str) -> list[Case]:
    run = ["run", "--model", model, "--no-progress"]
    doc = json.dumps({"id": "d", "text": "A b. However, c d. E f. G h."}) + "\n"
    train = ["train", "--model", bert, "--epochs", "1", "--no-progress", "--no-test"]
    return [
        # ---------------------------------------------------------------- run
        Case(
            "run",
            "task file missing",
            lambda d: [*run, "--task", str(d / "no.yaml"), "--out", str(d / "o1")],
        ),
        Case(
            "run",
            "task YAML not YAML",
            lambda d: [*run, "--task", str(write(d / "b.yaml", "a: [")), "--out", str(d / "o2")],
        ),
        Case(
            "run",
            "task YAML unknown key",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), "colour: red\n"),
                "--out",
                str(d / "o3"),
            ],
        ),
        Case(
            "run",
            "pool: missing.jsonl",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), "pool: missing.jsonl\n"),
                "--shots",
                "1",
                "--out",
                str(d / "o4"),
            ],
        ),
        Case(
            "run",
            "data line not JSON",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(3) + "{oops\n" + nli_rows(2), name="nj"),
                "--out",
                str(d / "o5"),
            ],
        ),
        Case(
            "run",
            "data not UTF-8",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(2).encode() + b'{"premise": "\xff"}\n', name="nu"),
                "--out",
                str(d / "o6"),
            ],
        ),
        Case(
            "run",
            "unknown label",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(2).replace("neutral", "maybe"), name="ul"),
                "--out",
                str(d / "o7"),
            ],
        ),
        Case(
            "run",
            "empty data file",
            lambda d: [*run, "--task", task(d, "", name="em"), "--out", str(d / "o8")],
        ),
        Case(
            "run",
            "template escapes to os",
            lambda d: [
                *run,
                "--task",
                "smoke",
                "--limit",
                "1",
                "--out",
                str(d / "o9"),
                "--template",
                "{{ cycler.__init__.__globals__.os.popen('id').read() }}{{ premise }}",
            ],
        ),
        Case(
            "run",
            "template unknown variable",
            lambda d: [
                *run,
                "--task",
                "smoke",
                "--limit",
                "1",
                "--out",
                str(d / "o10"),
                "--template",
                "{{ nonexistent_var }}",
            ],
        ),
        Case(
            "run",
            "negative shots",
            lambda d: [*run, "--task", "smoke", "--shots", "-1", "--out", str(d / "o11")],
        ),
        Case(
            "run",
            "model folder missing",
            lambda d: [
                "run",
                "--model",
                str(d / "nomodel"),
                "--task",
                "smoke",
                "--out",
                str(d / "o12"),
            ],
        ),
        Case(
            "run",
            "--out holds another command's run",
            lambda d: [
                *run,
                "--task",
                "smoke",
                "--limit",
                "1",
                "--out",
                str(write(d / "o13" / "config.json", '{"kind": "instruct"}').parent),
            ],
        ),
        # ---------------------------------------------------------------- stats
        Case("stats", "task file missing", lambda d: ["stats", "--task", str(d / "no.yaml")]),
        Case(
            "stats",
            "data line not JSON",
            lambda d: ["stats", "--task", task(d, "{oops\n", name="snj")],
        ),
        Case(
            "stats",
            "data not UTF-8",
            lambda d: ["stats", "--task", task(d, b'{"premise": "\xff"}\n', name="snu")],
        ),
        # ---------------------------------------------------------------- report
        Case("report", "not a run folder", lambda d: ["report", str(d / "nothing")]),
        Case(
            "report",
            "blank middle record",
            _records_case(lambda ls: ls[:4] + ["\n"] + ls[4:]),
            expect="warning",
        ),
        Case("report", "record without gold", _records_case(_without_gold)),
        Case("report", "two records, one key, other pred", _records_case(_conflict)),
        Case(
            "report",
            "identical copy of every record",
            _records_case(lambda ls: ls + ls),
            expect="warning",
        ),
        Case(
            "report", "corrupt middle record", _records_case(lambda ls: ls[:3] + ["{x\n"] + ls[3:])
        ),
        Case("report", "records not UTF-8", _folder_file("records.jsonl", b'{"task": "\xff"}\n')),
        Case("report", "config.json empty", _folder_file("config.json", b"")),
        Case("report", "config.json truncated", _folder_file("config.json", b'{"kind": "ru')),
        # ---------------------------------------------------------------- build
        Case(
            "build distant",
            "empty corpus",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "empty.jsonl", "")),
                "--out",
                str(d / "b1"),
            ],
        ),
        Case(
            "build distant",
            "corpus missing",
            lambda d: ["build", "distant", "--corpus", str(d / "none.txt"), "--out", str(d / "b2")],
        ),
        Case(
            "build distant",
            "truncated .gz",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                _gz_cut(d, "cut.jsonl.gz", doc),
                "--out",
                str(d / "b3"),
            ],
        ),
        Case(
            "build distant",
            "corpus not UTF-8",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "nu.txt", b"A b. However, \xff c.")),
                "--out",
                str(d / "b4"),
            ],
        ),
        Case(
            "build distant",
            "jsonl line not JSON",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "nj.jsonl", doc + "{x\n")),
                "--out",
                str(d / "b5"),
            ],
        ),
        Case(
            "build distant",
            "text field missing",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "nf.jsonl", '{"id": 1}\n')),
                "--out",
                str(d / "b6"),
            ],
        ),
        Case(
            "build distant",
            "text field a number",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "nn.jsonl", '{"text": 3}\n')),
                "--out",
                str(d / "b7"),
            ],
        ),
        Case(
            "build implicit",
            "scores file missing",
            lambda d: [
                "build",
                "implicit",
                "--corpus",
                str(write(d / "c.jsonl", doc)),
                "--out",
                str(d / "b8"),
                "--scores",
                str(d / "none.jsonl"),
            ],
        ),
        Case(
            "build implicit",
            "scores not JSON",
            lambda d: [
                "build",
                "implicit",
                "--corpus",
                str(write(d / "c.jsonl", doc)),
                "--out",
                str(d / "b9"),
                "--scores",
                str(write(d / "s.jsonl", "{x\n")),
            ],
        ),
        Case(
            "build implicit",
            "scores with NaN",
            lambda d: [
                "build",
                "implicit",
                "--corpus",
                str(write(d / "c.jsonl", doc)),
                "--out",
                str(d / "b10"),
                "--scores",
                str(
                    write(
                        d / "sn.jsonl",
                        "".join(
                            json.dumps({"id": f"d:{i}-{j}", "probs": [float("nan"), 0, 0, 1]})
                            + "\n"
                            for i in range(4)
                            for j in range(i + 1, 4)
                        ),
                    )
                ),
            ],
        ),
        Case(
            "build implicit",
            "classifier not a classifier",
            lambda d: [
                "build",
                "implicit",
                "--corpus",
                str(write(d / "c.jsonl", doc)),
                "--out",
                str(d / "b11"),
                "--classifier",
                str(d),
            ],
        ),
        Case(
            "build implicit",
            "truncated .gz",
            lambda d: [
                "build",
                "implicit",
                "--corpus",
                _gz_cut(d, "cut2.jsonl.gz", doc),
                "--out",
                str(d / "b12"),
                "--scores",
                str(write(d / "s2.jsonl", "")),
            ],
        ),
        # ---------------------------------------------------------------- contamination
        Case(
            "contamination",
            "truncated .gz corpus",
            lambda d: [
                "contamination",
                "--task",
                "smoke",
                "--corpus",
                _gz_cut(d, "corp.txt.gz", "a man walks in the park with his dog today\n"),
                "--out",
                str(d / "c1.jsonl"),
                "--workers",
                "1",
            ],
        ),
        Case(
            "contamination",
            "corpus missing",
            lambda d: [
                "contamination",
                "--task",
                "smoke",
                "--corpus",
                str(d / "none.txt"),
                "--out",
                str(d / "c2.jsonl"),
            ],
        ),
        # ---------------------------------------------------------------- train
        Case(
            "train",
            "task file missing",
            lambda d: [*train, "--task", str(d / "no.yaml"), "--out", str(d / "t1")],
        ),
        Case(
            "train",
            "one label only",
            lambda d: [
                *train,
                "--task",
                task(
                    d,
                    nli_rows(9)
                    .replace("neutral", "entailment")
                    .replace("contradiction", "entailment"),
                    name="one",
                    extra=POOL("one"),
                ),
                "--out",
                str(d / "t2"),
            ],
            expect="warning",  # a pipeline stage may yield one class: warned, not refused
        ),
        Case(
            "train",
            "dev fraction 1.5",
            lambda d: [
                *train,
                "--task",
                task(d, nli_rows(), name="tf", extra=POOL("tf")),
                "--dev-fraction",
                "1.5",
                "--out",
                str(d / "t3"),
            ],
        ),
        Case(
            "train",
            "zero epochs",
            lambda d: [
                *train,
                "--task",
                task(d, nli_rows(), name="te", extra=POOL("te")),
                "--epochs",
                "0",
                "--out",
                str(d / "t4"),
            ],
        ),
        Case(
            "train",
            "negative learning rate",
            lambda d: [
                *train,
                "--task",
                task(d, nli_rows(), name="tl", extra=POOL("tl")),
                "--lr",
                "-1",
                "--out",
                str(d / "t5"),
            ],
        ),
        Case(
            "train",
            "model not an encoder",
            lambda d: [
                "train",
                "--model",
                model,
                "--task",
                task(d, nli_rows(), name="tm", extra=POOL("tm")),
                "--epochs",
                "1",
                "--no-progress",
                "--no-test",
                "--out",
                str(d / "t6"),
            ],
        ),
        Case(
            "train",
            "data not UTF-8",
            lambda d: [
                *train,
                "--task",
                task(d, nli_rows(4).encode() + b"\xff\n", name="tu", extra=POOL("tu")),
                "--out",
                str(d / "t7"),
            ],
        ),
        # ---------------------------------------------------------------- instruct
        Case(
            "instruct",
            "shots not a multiple of 4",
            lambda d: ["instruct", "--task", sci_task(d), "--shots", "3", "--out", str(d / "i1")],
        ),
        Case(
            "instruct",
            "api base not http",
            lambda d: [
                "instruct",
                "--task",
                sci_task(d),
                "--api-base",
                "localhost:8000",
                "--model",
                "x",
                "--shots",
                "0",
                "--out",
                str(d / "i2"),
            ],
        ),
        Case(
            "instruct",
            "three-way task",
            lambda d: [
                "instruct",
                "--model",
                model,
                "--task",
                task(d, nli_rows(), name="i3"),
                "--out",
                str(d / "i3o"),
                "--no-progress",
            ],
        ),
        Case(
            "instruct",
            "server down",
            lambda d: [
                "instruct",
                "--task",
                sci_task(d),
                "--api-base",
                "http://127.0.0.1:9/v1",
                "--model",
                "x",
                "--shots",
                "0",
                "--retries",
                "0",
                "--out",
                str(d / "i4"),
                "--no-progress",
            ],
        ),
        # ---------------------------------------------------------------- more of each
        Case(
            "run",
            "batch size 0",
            lambda d: [*run, "--task", "smoke", "--batch-size", "0", "--out", str(d / "o14")],
        ),
        Case(
            "run",
            "limit -3",
            lambda d: [*run, "--task", "smoke", "--limit", "-3", "--out", str(d / "o15")],
        ),
        Case(
            "run",
            "YAML labels empty",
            lambda d: [
                *run,
                "--task",
                str(write(d / "le.yaml", "path: t.jsonl\nlabels: []\n")),
                "--out",
                str(d / "o16"),
            ],
        ),
        Case(
            "run",
            "field map to a missing column",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), "fields: {premise: sentence1}\n", name="fm"),
                "--out",
                str(d / "o17"),
            ],
        ),
        Case(
            "run",
            "csv row with too many columns",
            lambda d: [
                *run,
                "--task",
                _csv_task(d),
                "--out",
                str(d / "o18"),
            ],
        ),
        Case("report", "results.json truncated", _folder_file("results.json", b'{"metrics": [')),
        Case("report", "timing.json not JSON", _folder_file("timing.json", b"<html>")),
        Case(
            "report",
            "log-likelihood not a number",
            _records_case(
                lambda ls: ls[:2] + [ls[2].replace('"loglik": [', '"loglik": ["x", ')] + ls[3:]
            ),
        ),
        Case("stats", "empty data file", lambda d: ["stats", "--task", task(d, "", name="se")]),
        Case("stats", "unknown task name", lambda d: ["stats", "--task", "no-such-task"]),
        Case(
            "build distant",
            "duplicate document id",
            lambda d: [
                "build",
                "distant",
                "--corpus",
                str(write(d / "dup.jsonl", doc + doc)),
                "--out",
                str(d / "b13"),
            ],
        ),
        Case(
            "build distant",
            "corpus is a folder",
            lambda d: ["build", "distant", "--corpus", str(d), "--out", str(d / "b14")],
        ),
        Case(
            "contamination",
            "n-gram length 0",
            lambda d: [
                "contamination",
                "--task",
                "smoke",
                "--corpus",
                str(write(d / "ok.txt", "a b c\n")),
                "--n",
                "0",
                "--out",
                str(d / "c3.jsonl"),
            ],
        ),
        Case(
            "contamination",
            "unknown tokenizer",
            lambda d: [
                "contamination",
                "--task",
                "smoke",
                "--corpus",
                str(write(d / "ok.txt", "a b c\n")),
                "--tokenizer",
                str(d / "no-tokenizer"),
                "--out",
                str(d / "c4.jsonl"),
            ],
        ),
        Case(
            "chaosnli-score",
            "negative probabilities",
            lambda d: [
                "chaosnli-score",
                "--task",
                "chaosnli_snli",
                str(
                    write(
                        d / "neg.json",
                        json.dumps(
                            {"m": {"x": {"uid": "x", "predicted_probabilities": [-0.5, 1.0, 0.5]}}}
                        ),
                    )
                ),
            ],
        ),
        Case(
            "chaosnli-score",
            "prediction given as a list",
            lambda d: [
                "chaosnli-score",
                "--task",
                "chaosnli_snli",
                str(write(d / "lst.json", json.dumps({"m": {"x": [0.2, 0.3, 0.5]}}))),
            ],
        ),
        Case(
            "chaosnli-score",
            "file not UTF-8",
            lambda d: [
                "chaosnli-score",
                "--task",
                "chaosnli_snli",
                str(write(d / "nu.json", b'{"m": "\xff"}')),
            ],
        ),
        Case(
            "train",
            "task with no labels in data",
            lambda d: [
                *train,
                "--task",
                task(d, nli_rows().replace('"label"', '"gold"'), name="nl", extra=POOL("nl")),
                "--out",
                str(d / "t8"),
            ],
        ),
        Case(
            "generate",
            "api base not http",
            lambda d: [
                "generate",
                "--task",
                "smoke",
                "--model",
                "m",
                "--api-base",
                "localhost:1",
                "--out",
                str(d / "g1"),
            ],
        ),
        Case(
            "generate",
            "server down",
            lambda d: [
                "generate",
                "--task",
                "smoke",
                "--model",
                "m",
                "--api-base",
                "http://127.0.0.1:9/v1",
                "--retries",
                "0",
                "--out",
                str(d / "g2"),
                "--no-progress",
            ],
        ),
    ]


#: The case files beside this script, one per class of hostile input (see reliability_kit).
CASE_FILES = (
    "reliability_identity",
    "reliability_server",
    "reliability_templates",
    "reliability_folders",
    "reliability_numbers",
    "reliability_bounds",
    "reliability_trust",
    "reliability_logic_caches",
    "reliability_links",
    "reliability_counts",
)


def all_cases(model: str, bert: str, files: set[str] | None = None) -> list[Case]:
    """This file's cases, then each case file's (a missing case file is skipped);
    ``files`` keeps only those named (``main`` for this file's own)."""
    import importlib

    out = list(cases(model, bert)) if files is None or "main" in files else []
    for name in CASE_FILES:
        if files is not None and name.removeprefix("reliability_") not in files:
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        out.extend(module.cases(model, bert))
    return out


def classify(case: Case, rc: int | None, err: str) -> str:
    if rc is None:
        return "silent"  # a hang
    if "Traceback" in err:
        return "traceback"
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    if rc != 0:
        # A warning said before the error (a --limit that misses labels) is not part of it.
        lines = [ln for ln in lines if not ln.startswith("WARNING ")] or lines
        # One `nlieval: error: ...` line, or argparse's usage line and its error line.
        last = lines[-1] if lines else ""
        one_line = len(lines) == 1 or (len(lines) >= 2 and lines[0].startswith("usage:"))
        ok = one_line and re.match(r"nlieval( [\w-]+)*: error: ", last) is not None
        return "clear error" if ok else "traceback"
    if case.expect == "warning" and any("WARNING" in ln for ln in lines):
        return "warning"
    return "silent"


class _Hang(BaseException):
    """Raised by the alarm when a case runs past its time: counted as a hang."""


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def _in_process(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, str]:
    """``nlieval.cli.main(argv)`` here (no interpreter start per case): an exception that
    escapes it is what the user would see as a traceback; past ``timeout`` s, a hang
    (rc None), stopped by SIGALRM in the main thread."""
    import contextlib
    import io
    import logging
    import traceback

    from nlieval.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]  # main()'s basicConfig is then a no-op
    root.setLevel(logging.WARNING)
    old = Path.cwd()
    os.chdir(cwd)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc: int | None = cli_main(argv)
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 1
            except _Hang:
                rc = None
            except BaseException:
                err.write(traceback.format_exc())
                rc = 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def _cli(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1")
    try:
        p = subprocess.run(
            [sys.executable, "-m", "nlieval.cli", *argv],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, "", ""
    return p.returncode, p.stdout, p.stderr


def kill_trials(model: str, n: int, d: Path, seed: int) -> dict[str, int]:
    """kill -9 ``nlieval run`` at a random moment, resume, compare with a clean run."""
    args = [
        "run",
        "--model",
        model,
        "--task",
        "smoke",
        "--shots",
        "0,3",
        "--seeds",
        "2",
        "--batch-size",
        "2",
        "--no-progress",
    ]
    rc, _, err = _cli([*args, "--out", str(d / "ref")], d, 600)
    assert rc == 0, err
    ref = {
        (r["k"], r["seed"], r["item_id"]): r["pred"]
        for r in map(json.loads, (d / "ref" / "records.jsonl").read_text().splitlines())
    }
    rng = random.Random(seed)
    out = Counter[str]()
    for t in range(n):
        folder = d / f"kill{t}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "nlieval.cli", *args, "--out", str(folder)],
            cwd=d,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Kill once records have started, after a random extra delay.
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            rec = folder / "records.jsonl"
            if rec.is_file() and rec.stat().st_size:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rec = folder / "records.jsonl"
        before = len(rec.read_text().splitlines()) if rec.is_file() else 0
        out["killed mid-run"] += 0 < before < len(ref)
        rc, _, err = _cli([*args, "--out", str(folder)], d, 600)
        rows = [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]
        keys = [(r["k"], r["seed"], r["item_id"]) for r in rows]
        out["trials"] += 1
        out["resumed ok"] += rc == 0
        out["duplicates"] += len(keys) - len(set(keys))
        out["missing"] += len(set(ref) - set(keys))
        out["predictions differ"] += sum(
            ref.get(k) != r["pred"] for k, r in zip(keys, rows, strict=True)
        )
    return dict(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=5, help="kill -9 trials on `run` [5]")
    ap.add_argument("--only", default=None, help="comma-separated commands to try")
    ap.add_argument(
        "--files",
        default=None,
        help="comma-separated case files to run (main: this script's own; identity, "
        "server, templates, folders, numbers, bounds, trust, logic_caches, links, counts: "
        "reliability_<name>.py) [all]",
    )
    ap.add_argument("--timeout", type=float, default=180, help="seconds per case [180]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the folder of files made")
    ap.add_argument("--json", default=None, help="write the counts and every case here")
    ap.add_argument(
        "--subprocess",
        action="store_true",
        help="each case in its own `python -m nlieval.cli` (slower; default: in this "
        "process, an escaping exception counted as a traceback)",
    )
    opts = ap.parse_args()
    from tests.helpers.tiny_bert import make_tiny_bert
    from tests.helpers.tiny_models import tiny_model  # the tests' tiny random Llama

    d = Path(tempfile.mkdtemp(prefix="nlieval-reliability-"))
    model = str(tiny_model(d / "tiny-llama", "llama"))
    words = ["a", "man", "walks", "moves", "in", "the", "park"] + [str(i) for i in range(10)]
    bert = str(make_tiny_bert(d / "tiny-bert", words))
    rc, _, err = _cli(
        [
            "run",
            "--model",
            model,
            "--task",
            "smoke",
            "--limit",
            "4",
            "--no-progress",
            "--out",
            str(d / "good_run"),
        ],
        d,
        600,
    )
    assert rc == 0, err
    only = set(opts.only.split(",")) if opts.only else None
    table: dict[str, Counter[str]] = {}
    detail = []
    files = set(opts.files.split(",")) if opts.files else None
    for case in all_cases(model, bert, files):
        if only and not any(case.command.startswith(o) for o in only):
            continue
        argv = case.argv(d)
        if opts.subprocess:
            rc, out, err = _cli(argv, d, opts.timeout)
        else:
            rc, out, err = _in_process(argv, d, opts.timeout)
        outcome = classify(case, rc, err)
        table.setdefault(case.command, Counter())[outcome] += 1
        if case.lost is not None and case.lost(d):
            table[case.command]["data lost"] += 1  # besides how it ended
            outcome += ", data lost"
        last = (err.strip().splitlines() or [""])[-1][:160]
        detail.append(
            {
                "command": case.command,
                "case": case.name,
                "rc": rc,
                "outcome": outcome,
                "stderr": last,
                # All of it where the outcome is wrong: what to look at first.
                **({"stderr_all": err[-4000:]} if outcome in ("traceback", "silent") else {}),
            }
        )
        print(f"{outcome:<12} {case.command:<15} {case.name:<36} {last}", flush=True)
    cols = ["clear error", "warning", "traceback", "silent", "data lost"]
    print("\n| command | cases | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    total = Counter[str]()
    for cmd, c in table.items():
        total.update(c)
        n = sum(c.values()) - c["data lost"]  # a case that lost data is counted once
        print(f"| {cmd} | {n} | " + " | ".join(str(c[k]) for k in cols) + " |")
    n = sum(total.values()) - total["data lost"]
    print(f"| **all** | {n} | " + " | ".join(str(total[k]) for k in cols) + " |")
    kills = kill_trials(model, opts.kills, d, opts.seed) if opts.kills else {}
    if kills:
        print(
            "\nkill -9 on `run`, then the same command: "
            + ", ".join(f"{k} {v}" for k, v in kills.items())
        )
    if opts.json:
        Path(opts.json).write_text(json.dumps({"cases": detail, "kill_9": kills}, indent=2) + "\n")
    if opts.keep:
        print(f"files in {d}")
    else:
        shutil.rmtree(d, ignore_errors=True)
    return 0 if total["traceback"] == total["silent"] == total["data lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
