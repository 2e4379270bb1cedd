"""Class 1 of the reliability cases: a resume after what the numbers depend on changed.

Each case makes a run folder with a first invocation, changes one thing the folder's
records came from (a data or pool file, the template, the weights under the model's path,
the folder's config.json), and classes the outcome of the same command again: the right
answer is one line saying what changed, with the folder untouched; exit 0 (a metrics row
over two configurations) is a silent wrong result.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from reliability_kit import Case, invoke, nli_rows, sci_task, task, write

_n = itertools.count()


def _fresh(d: Path, stem: str) -> Path:
    folder = d / f"identity-{stem}-{next(_n)}"
    folder.mkdir()
    return folder


def _first(argv: list[str], cwd: Path) -> None:
    rc, err = invoke(argv, cwd)
    # generate exits 1 when a random model's answers do not parse: its records are kept.
    assert rc in (0, 1) and "nlieval: error" not in err, err


def _edit_line(path: Path, n: int, field: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[n])
    row[field] = value
    lines[n] = json.dumps(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def _replace_weights(path: Path) -> None:
    from tests.helpers.tiny_models import tiny_model  # the tests' tiny random Llama

    shutil.rmtree(path)
    tiny_model(path, "llama", seed=7)


def _copy_model(model: str, f: Path) -> Path:
    dst = f / "model"
    shutil.copytree(model, dst)
    return dst


def cases(model: str, bert: str) -> list[Case]:  # noqa: C901 (one closure per case)
    def run_argv(f: Path, t: str, *extra: str, m: str = model) -> list[str]:
        return ["run", "--model", m, "--task", t, "--no-progress", "--out", str(f / "o"), *extra]

    def data_edited(d: Path) -> list[str]:
        f = _fresh(d, "data")
        t = task(f, nli_rows())
        _first([*run_argv(f, t), "--limit", "3"], d)
        _edit_line(f / "t.jsonl", 4, "premise", "An edited premise.")
        return [*run_argv(f, t), "--limit", "6"]

    def other_data_dir(d: Path) -> list[str]:
        # The built-in task rte read from two --data-dir folders; b's copy has one edit.
        f = _fresh(d, "datadir")
        head = "index\tsentence1\tsentence2\tlabel\n"
        labs = ["entailment", "not_entailment"]
        rows = [f"{i}\tA man walks {i}.\tA man moves.\t{labs[i % 2]}\n" for i in range(8)]
        write(f / "a" / "rte" / "dev.tsv", head + "".join(rows))
        rows[5] = "5\tA man sits.\tA man moves.\tnot_entailment\n"
        write(f / "b" / "rte" / "dev.tsv", head + "".join(rows))
        base = ["run", "--model", model, "--task", "rte", "--no-progress", "--out", str(f / "o")]
        _first([*base, "--data-dir", str(f / "a"), "--limit", "2"], d)
        return [*base, "--data-dir", str(f / "b"), "--limit", "4"]

    def template_edited(d: Path) -> list[str]:
        f = _fresh(d, "template")
        t = task(f, nli_rows())
        tpl = write(f / "p.jinja", "Premise: {{ premise }}\nHypothesis: {{ hypothesis }}\n")
        _first([*run_argv(f, t, "--template", str(tpl)), "--limit", "2"], d)
        write(tpl, "P: {{ premise }}\nH: {{ hypothesis }}\n")
        return [*run_argv(f, t, "--template", str(tpl)), "--limit", "4"]

    def yaml_template_edited(d: Path) -> list[str]:
        f = _fresh(d, "yamltemplate")
        t = task(f, nli_rows(), 'template: "{{ premise }} ? {{ hypothesis }}"\n')
        _first([*run_argv(f, t), "--limit", "2"], d)
        task(f, nli_rows(), 'template: "{{ premise }} then {{ hypothesis }}"\n')
        return [*run_argv(f, t), "--limit", "4"]

    def labels_reordered(d: Path) -> list[str]:
        f = _fresh(d, "labels")
        t = task(f, nli_rows())
        _first([*run_argv(f, t), "--limit", "2"], d)
        write(Path(t), "path: t.jsonl\nlabels: [contradiction, neutral, entailment]\n")
        return [*run_argv(f, t), "--limit", "4"]

    def pool_edited(d: Path) -> list[str]:
        f = _fresh(d, "pool")
        write(f / "pool.jsonl", nli_rows(12, prefix="p"))
        t = task(f, nli_rows(), "pool: pool.jsonl\n")
        _first([*run_argv(f, t, "--shots", "2"), "--limit", "2"], d)
        _edit_line(f / "pool.jsonl", 1, "premise", "A changed shot.")
        return [*run_argv(f, t, "--shots", "2"), "--limit", "4"]

    def rows_appended(d: Path) -> list[str]:
        f = _fresh(d, "appended")
        t = task(f, nli_rows(6))
        _first([*run_argv(f, t), "--limit", "2"], d)
        with (f / "t.jsonl").open("a", encoding="utf-8") as out:
            out.write(
                json.dumps({"id": "new", "premise": "New.", "hypothesis": "H.", "label": "neutral"})
                + "\n"
            )
        return [*run_argv(f, t), "--limit", "4"]

    def weights_replaced(d: Path) -> list[str]:
        f = _fresh(d, "weights")
        m = _copy_model(model, f)
        _first([*run_argv(f, "smoke", m=str(m)), "--limit", "2"], d)
        _replace_weights(m)
        return [*run_argv(f, "smoke", m=str(m)), "--limit", "4"]

    def weights_config_edited(d: Path) -> list[str]:
        f = _fresh(d, "modelconfig")
        m = _copy_model(model, f)
        _first([*run_argv(f, "smoke", m=str(m)), "--limit", "2"], d)
        cfg = json.loads((m / "config.json").read_text())
        cfg["rms_norm_eps"] = 0.25
        write(m / "config.json", json.dumps(cfg))
        return [*run_argv(f, "smoke", m=str(m)), "--limit", "4"]

    def checkpoint_replaced(d: Path) -> list[str]:
        f = _fresh(d, "ckpt")
        a, b = _copy_model(model, f), f / "model-b"
        shutil.copytree(model, b)
        argv = [*run_argv(f, "smoke"), "--checkpoints", f"{a},{b}"]
        _first([*argv, "--limit", "2"], d)
        _replace_weights(b)
        return [*argv, "--limit", "4"]

    def config_deleted(d: Path) -> list[str]:
        f = _fresh(d, "noconfig")
        t = task(f, nli_rows())
        _first([*run_argv(f, t), "--limit", "2"], d)
        (f / "o" / "config.json").unlink()
        tpl = write(f / "other.jinja", "{{ premise }} // {{ hypothesis }}")
        return [*run_argv(f, t, "--template", str(tpl)), "--limit", "4"]

    def same_task_name(d: Path) -> list[str]:
        f = _fresh(d, "samename")
        a = task(f, nli_rows(), "name: dup\n", name="a")
        b = task(f, nli_rows(4, prefix="b"), "name: dup\n", name="b")
        return [
            "run",
            "--model",
            model,
            "--task",
            f"{a},{b}",
            "--no-progress",
            "--out",
            str(f / "o"),
        ]

    def other_kind(d: Path) -> list[str]:
        f = _fresh(d, "kind")
        t = sci_task(f, n=8, extra="name: sci\n")
        _first(
            [
                "instruct",
                "--model",
                model,
                "--task",
                t,
                "--shots",
                "0",
                "--runs",
                "1",
                "--max-new-tokens",
                "2",
                "--limit",
                "2",
                "--no-progress",
                "--out",
                str(f / "o"),
            ],
            d,
        )
        return [*run_argv(f, t), "--limit", "2"]

    def instruct_argv(f: Path, t: str, m: str = model) -> list[str]:
        return [
            "instruct",
            "--model",
            m,
            "--task",
            t,
            "--shots",
            "0",
            "--runs",
            "1",
            "--max-new-tokens",
            "2",
            "--no-progress",
            "--out",
            str(f / "o"),
        ]

    def instruct_data(d: Path) -> list[str]:
        f = _fresh(d, "idata")
        t = sci_task(f, n=8, extra="name: sci\n")
        _first([*instruct_argv(f, t), "--limit", "2"], d)
        _edit_line(f / "sci.jsonl", 3, "hypothesis", "It fails.")
        return [*instruct_argv(f, t), "--limit", "4"]

    def instruct_weights(d: Path) -> list[str]:
        f = _fresh(d, "iweights")
        t, m = sci_task(f, n=8, extra="name: sci\n"), _copy_model(model, f)
        _first([*instruct_argv(f, t, str(m)), "--limit", "2"], d)
        _replace_weights(m)
        return [*instruct_argv(f, t, str(m)), "--limit", "4"]

    def instruct_no_config(d: Path) -> list[str]:
        f = _fresh(d, "inoconfig")
        t = sci_task(f, n=8, extra="name: sci\n")
        _first([*instruct_argv(f, t), "--limit", "2"], d)
        (f / "o" / "config.json").unlink()
        return [*instruct_argv(f, t), "--limit", "4"]

    def generate_argv(f: Path, t: str, m: str = model) -> list[str]:
        return [
            "generate",
            "--model",
            m,
            "--task",
            t,
            "--examples",
            "0",
            "--attempts",
            "1",
            "--max-new-tokens",
            "2",
            "--no-progress",
            "--out",
            str(f / "o"),
        ]

    def generate_data(d: Path) -> list[str]:
        f = _fresh(d, "gdata")
        t = task(f, nli_rows())
        _first([*generate_argv(f, t), "--limit", "2"], d)
        _edit_line(f / "t.jsonl", 5, "premise", "Edited.")
        return [*generate_argv(f, t), "--limit", "3"]

    def generate_weights(d: Path) -> list[str]:
        f = _fresh(d, "gweights")
        t, m = task(f, nli_rows()), _copy_model(model, f)
        _first([*generate_argv(f, t, str(m)), "--limit", "2"], d)
        _replace_weights(m)
        return [*generate_argv(f, t, str(m)), "--limit", "3"]

    def train_argv(f: Path, t: str, enc: str = bert) -> list[str]:
        test = task(f, nli_rows(6, prefix="x"), name="test")
        return [
            "train",
            "--model",
            enc,
            "--task",
            t,
            "--epochs",
            "1",
            "--max-length",
            "16",
            "--dev-split",
            "test",
            "--no-progress",
            "--out",
            str(f / "o"),
            "--test-task",
            test,
        ]

    def train_data(d: Path) -> list[str]:
        f = _fresh(d, "tdata")
        t = task(f, nli_rows(12), "pool: t.jsonl\n")
        _first([*train_argv(f, t), "--seeds", "0,"], d)
        _edit_line(f / "t.jsonl", 2, "premise", "Edited training text.")
        return [*train_argv(f, t), "--seeds", "0,1"]

    def train_encoder(d: Path) -> list[str]:
        f = _fresh(d, "tenc")
        t = task(f, nli_rows(12), "pool: t.jsonl\n")
        enc = f / "enc"
        shutil.copytree(bert, enc)
        _first([*train_argv(f, t, str(enc)), "--seeds", "0,"], d)
        cfg = json.loads((enc / "config.json").read_text())
        cfg["layer_norm_eps"] = 0.01
        write(enc / "config.json", json.dumps(cfg))
        return [*train_argv(f, t, str(enc)), "--seeds", "0,1"]

    made: list[tuple[str, str, Callable[[Path], list[str]]]] = [
        ("run", "resume: data file edited", data_edited),
        ("run", "resume: --data-dir with other data", other_data_dir),
        ("run", "resume: --template file edited", template_edited),
        ("run", "resume: YAML template edited", yaml_template_edited),
        ("run", "resume: labels reordered in YAML", labels_reordered),
        ("run", "resume: pool file edited", pool_edited),
        ("run", "resume: a row appended to data", rows_appended),
        ("run", "resume: weights replaced, same path", weights_replaced),
        ("run", "resume: model config.json edited", weights_config_edited),
        ("run", "resume: a checkpoint replaced", checkpoint_replaced),
        ("run", "resume: config.json deleted", config_deleted),
        ("run", "two task YAMLs, one name", same_task_name),
        ("run", "resume an instruct folder", other_kind),
        ("instruct", "resume: data file edited", instruct_data),
        ("instruct", "resume: weights replaced", instruct_weights),
        ("instruct", "resume: config.json deleted", instruct_no_config),
        ("generate", "resume: data file edited", generate_data),
        ("generate", "resume: weights replaced", generate_weights),
        ("train", "resume: data file edited", train_data),
        ("train", "resume: encoder config edited", train_encoder),
    ]
    return [Case(cmd, name, fn) for cmd, name, fn in made]
