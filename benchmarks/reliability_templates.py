"""Hostile templates and input files (see ``reliability_kit``): prompt-template bombs
(time, size, depth), chat templates in a model folder that loop or fail, template and
data files that are not regular files, a YAML alias bomb, non-finite numbers, label
maps whose keys collide, one-option tasks and ids that collide with the de-duplication
suffix. Each must end with one ``nlieval: error:`` line (or a warning where going on is
right) within the case's time, never a traceback, a hang or a silent result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from reliability_kit import Case, nli_rows, sci_task, task, write


def _chat_model(model: str, d: Path, name: str, chat_template: str) -> str:
    """A copy of the tiny model folder whose tokenizer_config.json has ``chat_template``."""
    folder = d / f"model_{name}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(model, folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["chat_template"] = chat_template
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    return str(folder)


def _fifo(d: Path, name: str) -> str:
    path = d / name
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _with_file(
    file: str, content: str | bytes, yaml_extra: str, name: str
) -> Callable[[Path], str]:
    """A task whose YAML names ``file`` (written with ``content``) through ``yaml_extra``."""

    def make(d: Path) -> str:
        write(d / file, content)
        return task(d, nli_rows(), yaml_extra, name=name)

    return make


def _one_option(d: Path) -> str:
    write(
        d / "one.jsonl",
        nli_rows().replace("neutral", "entailment").replace("contradiction", "entailment"),
    )
    return str(write(d / "one.yaml", "path: one.jsonl\nlabels: [entailment]\n"))


def _outside(d: Path) -> str:
    write(d.parent / f"{d.name}_outside.txt", "SECRET {{ premise }}")
    return task(d, nli_rows(), f"template: ../{d.name}_outside.txt\n", name="tout")


def _zero_link(d: Path) -> str:
    link = d / "zero.jsonl"
    if not link.is_symlink():
        link.symlink_to("/dev/zero")
    return str(write(d / "dz.yaml", "path: zero.jsonl\nlabels: [entailment, neutral]\n"))


def _dup_ids(d: Path) -> str:
    rows = nli_rows(3, "x").replace('"x0"', '"x"').replace('"x1"', '"x"').replace('"x2"', '"x#2"')
    return task(d, rows, "fields: {id: id}\n", name="dup")


def cases(model: str, bert: str) -> list[Case]:
    run = ["run", "--model", model, "--no-progress", "--limit", "2"]
    train = ["train", "--model", bert, "--epochs", "1", "--no-progress", "--no-test"]

    def with_template(name: str, template: str) -> Case:
        return Case(
            "run",
            f"template: {name}",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), name=f"tb_{_slug(name)}"),
                "--template",
                template,
                "--out",
                str(d / f"otb_{_slug(name)}"),
            ],
        )

    def yaml_case(command: str, name: str, make: Callable[[Path], str], out: str) -> Case:
        base = run if command == "run" else train
        return Case(command, name, lambda d: [*base, "--task", make(d), "--out", str(d / out)])

    def chat_case(command: str, name: str, chat_template: str) -> Case:
        def argv(d: Path) -> list[str]:
            folder = _chat_model(model, d, f"{command}_{_slug(name)}", chat_template)
            out = str(d / f"o_{command}_{_slug(name)}")
            if command == "instruct":
                sci = sci_task(d, f"sci_{_slug(name)}")
                return [
                    "instruct", "--model", folder, "--task", sci, "--shots", "0",
                    "--limit", "2", "--max-new-tokens", "2", "--out", out, "--no-progress",
                ]  # fmt: skip
            return [
                "generate", "--model", folder, "--task", "smoke", "--limit", "1",
                "--examples", "0", "--max-new-tokens", "2", "--out", out, "--no-progress",
            ]  # fmt: skip

        return Case(command, f"chat template: {name}", argv)

    pool = "pool: {name}.jsonl\n"
    return [
        # ------------------------------------------------ prompt-template bombs (run)
        with_template("ljust width", "{{ premise.ljust(2000000000) }} Answer:"),
        with_template("% width", '{{ "%5000000000s" % premise }} Answer:'),
        with_template("str.format width", '{{ "{:>5000000000}".format(premise) }} Answer:'),
        with_template("format_map width", '{{ "{p:>900000000}".format_map({"p": premise}) }}'),
        with_template("* repetition", "{{ premise * 1000000000 }} Answer:"),
        with_template("** big integer", "{{ premise }} {{ 9 ** (9 ** 9) }} Answer:"),
        with_template("replace quadratic", '{{ (premise * 99)|replace("", premise * 99) }}'),
        with_template(
            "~ doubling in a macro",
            "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s }}{% endif %}"
            "{% endmacro %}{{ d(premise, 40) }} Answer:",
        ),
        with_template(
            "join doubling in a macro",
            "{% macro d(s, n) %}{% if n %}{{ d([s, s]|join, n - 1) }}{% else %}{{ s }}"
            "{% endif %}{% endmacro %}{{ d(premise, 40) }} Answer:",
        ),
        with_template(
            "macro calling itself", "{% macro m(x) %}{{ m(x) }}{% endmacro %}{{ m(premise) }}"
        ),
        with_template(
            "nested loops over the premise",
            "{% for a in premise %}{% for b in premise %}{% for c in premise %}"
            "{% for e in premise %}{% for f in premise %}.{% endfor %}{% endfor %}{% endfor %}"
            "{% endfor %}{% endfor %}{{ hypothesis }} Answer:",
        ),
        with_template(
            "literal text in nested loops",
            "{% for a in premise %}{% for b in premise %}"
            + "x" * 60_000
            + "{% endfor %}{% endfor %}{{ premise }}",
        ),
        with_template("division by zero", "{{ premise }} {{ 1 // (options|length - 3) }}"),
        with_template("index out of range", "{{ options[7][1] }} {{ premise }}"),
        with_template("syntax error", "{{ premise }}\n{% for x in %}\nAnswer:"),
        # ------------------------------------------------ template and data file rules
        Case(
            "run",
            "--template /proc/self/environ",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), name="penv"),
                "--template",
                "/proc/self/environ",
                "--out",
                str(d / "openv"),
            ],  # fmt: skip
        ),
        Case(
            "run",
            "--template a FIFO",
            lambda d: [
                *run,
                "--task",
                task(d, nli_rows(), name="pfifo"),
                "--template",
                _fifo(d, "tpl.fifo"),
                "--out",
                str(d / "opfifo"),
            ],  # fmt: skip
        ),
        yaml_case(
            "run",
            "template: a path outside the YAML's folder",
            _outside,
            "otout",
        ),
        yaml_case(
            "run",
            "template_file larger than 64 KiB",
            _with_file(
                "big.j2",
                "{{ premise }}" + " " * 70_000 + "Answer:",
                "template_file: big.j2\n",
                "tbig",
            ),
            "otbig",
        ),
        yaml_case(
            "run",
            "template_file not UTF-8",
            _with_file(
                "latin.j2", b"{{ premise }}\n\xe9\nAnswer:", "template_file: latin.j2\n", "tlat"
            ),
            "otlat",
        ),
        yaml_case(
            "run",
            "template_file with an error on line 3",
            _with_file(
                "l3.j2",
                "P: {{ premise }}\nH: {{ hypothesis }}\n{{ options[1][1] ~ (1 / 0) }}\n",
                "template_file: l3.j2\n",
                "tl3",
            ),
            "otl3",
        ),
        yaml_case(
            "run",
            "data file is a FIFO",
            lambda d: str(
                write(
                    d / "ff.yaml",
                    f"path: {Path(_fifo(d, 'data.jsonl')).name}\n"
                    "labels: [entailment, neutral, contradiction]\n",
                )
            ),
            "off",
        ),
        yaml_case(
            "run",
            "data file a link to /dev/zero",
            _zero_link,
            "odz",
        ),
        # ------------------------------------------------ task YAML and data values
        yaml_case(
            "run",
            "YAML alias bomb",
            lambda d: str(
                write(
                    d / "laughs.yaml",
                    "path: t.jsonl\nlabels: [entailment, neutral, contradiction]\n"
                    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
                    + "".join(
                        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
                    ),
                )
            ),
            "olaughs",
        ),
        yaml_case(
            "run",
            "JSON number 1e400 as a premise",
            lambda d: task(
                d,
                nli_rows(3)
                + '{"id": "z", "premise": 1e400, "hypothesis": "h", "label": "neutral"}\n',
                name="inf",
            ),
            "oinf",
        ),
        yaml_case(
            "run",
            "JSON NaN literal",
            lambda d: task(
                d,
                '{"id": "n", "premise": NaN, "hypothesis": "h", "label": "neutral"}\n'
                + nli_rows(3),
                name="nan",
            ),
            "onan",
        ),
        yaml_case(
            "run",
            "label_map keys 1 and '1' collide",
            lambda d: task(
                d, nli_rows(), 'label_map: {1: entailment, "1": contradiction}\n', name="lmap"
            ),
            "olmap",
        ),
        yaml_case(
            "run",
            "one-option task",
            _one_option,
            "oone",
        ),
        Case(
            "run",
            "ids x, x, x#2 (the de-duplication suffix)",
            lambda d: [*run[:-2], "--task", _dup_ids(d), "--out", str(d / "odup")],
            expect="warning",  # every item is scored under an id of its own; the file is named
        ),
        # ------------------------------------------------ train reads the same files
        yaml_case(
            "train",
            "YAML alias bomb",
            lambda d: str(
                write(
                    d / "tlaughs.yaml",
                    "path: t.jsonl\nlabels: [entailment, neutral, contradiction]\n"
                    "x: &x [a, a, a, a, a, a, a, a]\ny: &y [*x, *x, *x, *x, *x, *x, *x, *x]\n",
                )
            ),
            "ttlaughs",
        ),
        yaml_case(
            "train",
            "JSON Infinity literal",
            lambda d: task(
                d,
                nli_rows(6)
                + '{"id": "q", "premise": "p", "hypothesis": -Infinity, "label": "neutral"}\n',
                pool.format(name="tinf"),
                name="tinf",
            ),
            "ttinf",
        ),
        yaml_case(
            "train",
            "label_map keys E and e collide",
            lambda d: task(
                d,
                nli_rows(),
                "label_map: {E: entailment, e: neutral}\n" + pool.format(name="tlm"),
                name="tlm",
            ),
            "ttlm",
        ),
        # ------------------------------------------------ chat templates in the model folder
        chat_case(
            "instruct",
            "loops forever",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
            "{% for m in messages %}{{ m.content }}{% endfor %}",
        ),
        chat_case(
            "instruct",
            "division by zero",
            "{% for m in messages %}{{ m.content }}{{ loop.index // 0 }}{% endfor %}",
        ),
        chat_case(
            "instruct",
            "namespace doubling",
            "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
            "{% endfor %}{{ ns.s }}",
        ),
        chat_case(
            "instruct",
            "raise_exception",
            "{{ raise_exception('This model does not chat') }}",
        ),
        chat_case(
            "generate",
            "macro calling itself",
            "{% macro m(x) %}{{ m(x ~ 'a') }}{% endmacro %}{{ m(messages[0].content) }}",
        ),
        chat_case(
            "generate",
            "ljust width",
            "{% for m in messages %}{{ m.content.ljust(3000000000) }}{% endfor %}",
        ),
        chat_case(
            "generate", "syntax error", "{% for m in messages %}{{ m.content }\n{% endfor %}"
        ),
    ]
