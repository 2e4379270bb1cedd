"""Input files that cannot eat the machine or mislead a run: task YAMLs (no aliases,
bounded size), template files (named by template_file:, regular, bounded, UTF-8), data
files (regular only, finite numbers), label maps whose keys collide, one-option tasks,
ids that collide with the de-duplication suffix, and chat templates in a model folder
(rendered in the bounded sandbox before the weights load)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from nlieval.choice import PromptBuilder
from nlieval.data import DataError, get_task, load_task, read_items
from nlieval.data.parsers import ChaosParser, FieldError
from nlieval.types import NLI3, Item, Label

ROW = {"premise": "A cat naps.", "hypothesis": "A cat rests.", "label": "entailment"}
LABELS3 = "labels: [entailment, neutral, contradiction]\n"


@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    # A FIFO read without the rules blocks forever: fail the test instead of hanging.
    def hang(signum: int, frame: object) -> None:
        raise TimeoutError("blocked: the file was waited on, not refused")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _task(d: Path, rows: str | None = None, extra: str = "", name: str = "t") -> Path:
    (d / f"{name}.jsonl").write_text(
        rows if rows is not None else json.dumps(ROW) + "\n", encoding="utf-8"
    )
    yml = d / f"{name}.yaml"
    yml.write_text(f"path: {name}.jsonl\n{LABELS3}{extra}", encoding="utf-8")
    return yml


# ---------------------------------------------------------------- task YAML


def test_yaml_aliases_are_refused_with_file_and_line(tmp_path: Path) -> None:
    yml = _task(tmp_path, extra="description: &d [a, b]\nname: *d\n")
    with pytest.raises(DataError, match=r"t\.yaml:4: invalid YAML: aliases \(\*name\)"):
        get_task(str(yml))


def test_billion_laughs_is_refused_at_once(tmp_path: Path) -> None:
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    yml = _task(tmp_path, extra=laughs)
    with pytest.raises(DataError, match="aliases"):
        get_task(str(yml))


def test_a_huge_yaml_file_is_refused(tmp_path: Path) -> None:
    yml = _task(tmp_path, extra="# padding\n" * 120_000)
    with pytest.raises(DataError, match=r"t\.yaml: larger than 1,048,576 bytes"):
        get_task(str(yml))


# ---------------------------------------------------------------- template files


def test_template_file_is_read_relative_to_the_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "block.j2").write_text("P: {{ premise }}\nAnswer:", encoding="utf-8")
    yml = _task(tmp_path, extra="template_file: sub/block.j2\n")
    monkeypatch.chdir("/")  # not where the YAML is
    spec = get_task(str(yml))
    assert spec.template == "P: {{ premise }}\nAnswer:"
    item = Item("1", "A cat naps.", "h", Label.ENTAILMENT)
    assert (
        PromptBuilder("nli3", NLI3, [], spec.template).build(item).block
        == "P: A cat naps.\nAnswer:"
    )


def test_an_error_in_a_template_file_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "block.j2").write_text("P: {{ premise }}\n{{ 1 // 0 }}\nAnswer:", encoding="utf-8")
    spec = get_task(str(_task(tmp_path, extra="template_file: block.j2\n")))
    item = Item("i7", "A cat naps.", "h", Label.ENTAILMENT)
    with pytest.raises(ValueError) as err:
        PromptBuilder("nli3", NLI3, [], spec.template).build(item)
    origin = f"template_file {tmp_path / 'block.j2'} of {tmp_path / 't.yaml'}"
    assert str(err.value).startswith(f"{origin} line 2 (item i7): ZeroDivisionError")


def test_template_key_is_text_never_a_path(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET {{ premise }}", encoding="utf-8")
    (tmp_path / "tasks").mkdir()
    yml = _task(tmp_path / "tasks", extra="template: ../outside.txt\n")
    with pytest.raises(DataError, match="field 'template': .* name it with template_file:"):
        get_task(str(yml))


def test_template_and_template_file_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "b.j2").write_text("{{ premise }}", encoding="utf-8")
    yml = _task(tmp_path, extra='template: "{{ premise }}"\ntemplate_file: b.j2\n')
    with pytest.raises(DataError, match="not both"):
        get_task(str(yml))


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda d: "/proc/self/environ", r"/proc/self/environ: not a regular file \(under /proc\)"),
        (lambda d: "/dev/zero", r"/dev/zero: not a regular file \(under /dev\)"),
        (lambda d: str(_fifo(d / "t.fifo")), r"t\.fifo: not a regular file \(a FIFO\)"),
        (lambda d: str(d), r"not a regular file \(a directory\)"),
        (
            lambda d: str(_write(d / "big.j2", "{{ premise }}" + " " * 70_000)),
            "larger than 65,536 bytes",
        ),
        (lambda d: str(_write(d / "l.j2", b"{{ premise }}\n\xe9")), r"l\.j2:2: not UTF-8 text"),
    ],
)
def test_template_file_rules(tmp_path: Path, make: object, pattern: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    # --template FILE and template_file: follow one rule.
    with pytest.raises(ValueError, match=pattern) as err:
        PromptBuilder("nli3", NLI3, [], path)
    assert "\n" not in str(err.value)
    yml = _task(tmp_path, extra=f"template_file: {path}\n")
    with pytest.raises(DataError, match=r"t\.yaml: field 'template_file': .*" + pattern):
        get_task(str(yml))


def test_a_cli_template_that_is_neither_file_nor_template_is_refused() -> None:
    with pytest.raises(ValueError, match="uses none of .*every prompt would be the same"):
        PromptBuilder("nli3", NLI3, [], "prompt.j2")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ---------------------------------------------------------------- data files


def test_a_data_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    yml = _task(tmp_path)
    (tmp_path / "t.jsonl").unlink()
    os.mkfifo(tmp_path / "t.jsonl")
    with pytest.raises(DataError, match=r"t\.jsonl: not a regular file \(a FIFO\)"):
        load_task(str(yml))


def test_a_data_file_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    yml = _task(tmp_path)
    (tmp_path / "t.jsonl").unlink()
    (tmp_path / "t.jsonl").symlink_to("/dev/zero")
    with pytest.raises(DataError, match=r"t\.jsonl: not a regular file \(under /dev\)"):
        load_task(str(yml))


@pytest.mark.parametrize(
    ("value", "field", "literal"),
    [
        ('"premise": 1e400', "premise", "1e400"),
        ('"premise": -1e999', "premise", "-1e999"),
        ('"premise": NaN', "premise", "NaN"),
        ('"hypothesis": Infinity', "hypothesis", "Infinity"),
        ('"meta": {"scores": [1, -Infinity]}', r"meta\.scores\[1\]", "-Infinity"),
    ],
)
def test_non_finite_numbers_are_refused(
    tmp_path: Path, value: str, field: str, literal: str
) -> None:
    good = json.dumps(ROW) + "\n"
    row = '{"premise": "p", "hypothesis": "h", "label": "neutral", ' + value + "}\n"
    row = row.replace('"premise": "p", ', "") if '"premise"' in value else row
    row = row.replace('"hypothesis": "h", ', "") if '"hypothesis"' in value else row
    yml = _task(tmp_path, good + row)
    with pytest.raises(
        DataError, match=rf"t\.jsonl:2: field '{field}': {literal} is not a finite number"
    ):
        load_task(str(yml))
    assert len(load_task(str(yml), skip_bad=True).items) == 1


def test_a_finite_float_still_reads() -> None:
    ds = read_items(_write_rows([{**ROW, "premise": 1.5}]))
    assert ds.items[0].premise == "1.5"


def _write_rows(rows: list[dict[str, object]]) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_chaosnli_entropy_must_be_finite() -> None:
    row = {
        "uid": "u",
        "example": {"premise": "p", "hypothesis": "h"},
        "label_count": [1, 2, 3],
        "majority_label": "c",
        "old_label": "e",
        "entropy": "nan",
    }
    with pytest.raises(FieldError, match="not a finite number"):
        ChaosParser(NLI3)(row, 1)


# ---------------------------------------------------------------- labels and ids


@pytest.mark.parametrize(
    ("label_map", "keys"),
    [
        ('{1: entailment, "1": contradiction}', "keys 1 and '1'"),
        ("{E: entailment, e: neutral}", "keys 'E' and 'e'"),
        ('{" n": neutral, n: neutral}', "keys ' n' and 'n'"),
        ('{true: entailment, "true": neutral}', "keys True and 'true'"),
    ],
)
def test_label_map_keys_that_collide_are_refused(tmp_path: Path, label_map: str, keys: str) -> None:
    yml = _task(tmp_path, extra=f"label_map: {label_map}\n")
    with pytest.raises(DataError, match=rf"t\.yaml: field 'label_map': {keys}"):
        get_task(str(yml))


def test_distinct_label_map_keys_still_read(tmp_path: Path) -> None:
    rows = "".join(json.dumps({**ROW, "label": v}) + "\n" for v in (0, 1, "2"))
    yml = _task(tmp_path, rows, "label_map: {0: entailment, 1: neutral, 2: contradiction}\n")
    assert [it.label for it in load_task(str(yml)).items] == list(NLI3)


def test_a_one_option_task_is_refused(tmp_path: Path) -> None:
    yml = tmp_path / "one.yaml"
    (tmp_path / "one.jsonl").write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    yml.write_text("path: one.jsonl\nlabels: [entailment]\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"one\.yaml: field 'labels': 1 label\(s\): a task needs at least two"
    ):
        get_task(str(yml))
    with pytest.raises(DataError, match="at least two"):
        read_items(tmp_path / "one.jsonl", labels=(Label.ENTAILMENT,))


def test_repeated_ids_never_collide_with_their_suffix(tmp_path: Path) -> None:
    # An official file that repeats ids (alpha-NLI's story_id) gets #n suffixes.
    ids = ["x", "x", "x#2", "x", "y", "x#3"]
    art = {"obs1": "A man sat.", "obs2": "He stood.", "hyp1": "He rested.", "hyp2": "He left."}
    rows = "".join(json.dumps({**art, "story_id": i}) + "\n" for i in ids)
    (tmp_path / "dev.jsonl").write_text(rows, encoding="utf-8")
    (tmp_path / "dev-labels.lst").write_text("1\n" * len(ids), encoding="utf-8")
    got = [it.id for it in load_task("alphanli", tmp_path).items]
    assert got == ["x", "x#4", "x#2", "x#5", "y", "x#3"]
    assert len(set(got)) == len(got)


# ---------------------------------------------------------------- chat templates


def _model_with_chat_template(src: Path, dst: Path, template: str) -> Path:
    shutil.copytree(src, dst)
    (dst / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((dst / "tokenizer_config.json").read_text(encoding="utf-8"))
    cfg["chat_template"] = template
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return dst


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "refused: more than 1,000,000 steps",
        ),
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "refused: calls nested deeper than 64"),
        ("{{ messages[0].content.ljust(3000000000) }}", "refused: ljust would build 3,000,000,000"),
        ("{{ raise_exception('No chat here') }}", "raised: No chat here"),
        ("{% for m in messages %}{{ m.content }\n{% endfor %}", "unexpected '}'"),
    ],
)
def test_a_bad_chat_template_stops_before_the_weights_load(
    tiny_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str, message: str
) -> None:
    from nlieval.backends import generator

    folder = _model_with_chat_template(tiny_llama, tmp_path / "m", template)

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the weights must not load for a template that cannot render")

    monkeypatch.setattr(generator, "load_causal_lm", no_load)
    with pytest.raises(ValueError) as err:
        generator.LocalChat(str(folder))
    assert str(err.value).startswith(
        f"chat template {folder / 'tokenizer_config.json'} line 1: {message}"
    )
    assert "\n" not in str(err.value)


def test_the_chat_template_renders_in_the_bounded_sandbox(tiny_llama: Path) -> None:
    from nlieval.backends.generator import LocalChat

    chat = LocalChat(str(tiny_llama))
    conv = [{"role": "user", "content": "Hi"}]
    want = chat.tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    assert chat._chat_template().render(conv, add_generation_prompt=True) == want
    # A template whose loop never ends is cut by the sandbox's bounds, not by transformers'.
    chat.tok.chat_template = (
        "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    )
    with pytest.raises(ValueError, match="refused: more than 1,000,000 steps"):
        chat.generate([conv], max_new_tokens=1)
