"""A writer writes only inside its own folder (issue 43, rule 1).

Every command that writes into a folder that may already exist is walked: a symbolic link
is planted in its folder (a sub-folder, or a file) pointing to a sentinel folder
elsewhere, the command is run in this process, and the outcome must be one
``nlieval: error: ...`` line naming the link, with the sentinel folder's files byte for
byte as they were (and not rewritten: the same inode and modification time). The
ground's writers are walked the same way, and the source is searched for a raw write that
does not go through them (a future writer that bypasses the rule fails
:func:`test_no_raw_write_outside_the_ground`).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.ground import (
    FolderError,
    append_own,
    atomic_write,
    check_inside,
    cut_torn_tail,
    make_folder,
    open_own,
)
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.task_files import CUE, NOUNS, cue_task
from tests.helpers.tiny_bert import make_tiny_bert

pytestmark = pytest.mark.usefixtures("fresh_logging")

SRC = Path(__file__).resolve().parents[2] / "src" / "nlieval"


def _sentinel(tmp_path: Path) -> Path:
    """A folder elsewhere, holding files of someone else's."""
    s = tmp_path / "elsewhere"
    s.mkdir()
    (s / "meta.js").write_bytes(b"someone else's meta\n")
    (s / "records.jsonl").write_bytes(b'{"a": 1}\n{"torn')
    (s / "index.md").write_bytes(b"# not nlieval's\n")
    return s


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Each file's bytes, inode and modification time: a file rewritten through a link
    with the same bytes was written all the same."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (p.read_bytes(), st.st_ino, st.st_mtime_ns)
    return out


# --------------------------------------------------------------------------- the ground


GROUND_WRITERS: dict[str, Callable[[Path, Path], object]] = {
    "atomic_write": lambda p, root: atomic_write(p / "meta.js", "x", root=root),
    "atomic_write bytes": lambda p, root: atomic_write(p / "new.png", b"x", root=root),
    "make_folder": lambda p, root: make_folder(p / "figures", root=root),
    "append_own": lambda p, root: append_own(p / "records.jsonl", b"{}\n", root=root),
    "cut_torn_tail": lambda p, root: cut_torn_tail(p / "records.jsonl", root=root),
    "open_own": lambda p, root: os.close(
        open_own(p / "lock", os.O_RDWR | os.O_CREAT, in_place=True, root=root)
    ),
}


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("writer", list(GROUND_WRITERS))
def test_a_ground_writer_never_writes_through_a_link_below_its_folder(
    tmp_path: Path, writer: str, depth: int
) -> None:
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    root = tmp_path / "site"
    (root / "a").mkdir(parents=True)
    link = root / "data" if depth == 1 else root / "a" / "data"
    link.symlink_to(sentinel)
    with pytest.raises(FolderError, match=rf"^{link} is a symbolic link \(to {sentinel}\)"):
        GROUND_WRITERS[writer](link, root)
    assert _snapshot(sentinel) == before
    assert sorted(p.name for p in sentinel.iterdir()) == sorted(before)


@pytest.mark.parametrize("writer", list(GROUND_WRITERS))
def test_the_folder_a_user_names_may_itself_be_a_link(tmp_path: Path, writer: str) -> None:
    # A run kept on a bigger disk: the user named the link, it is the writer's folder.
    disk = tmp_path / "disk"
    disk.mkdir()
    (disk / "records.jsonl").write_bytes(b'{"a": 1}\n')
    root = tmp_path / "run"
    root.symlink_to(disk)
    GROUND_WRITERS[writer](root, root)


def test_a_path_outside_the_folder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    for path in (root / ".." / "x", tmp_path / "other" / "x"):
        with pytest.raises(FolderError, match="not inside"):
            check_inside(path, root)
    assert not (tmp_path / "x").exists()


def test_a_linked_file_below_a_real_folder_is_refused(tmp_path: Path) -> None:
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    root = tmp_path / "report"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "table-3.md").symlink_to(sentinel / "index.md")
    with pytest.raises(FolderError, match="table-3.md is a symbolic link"):
        atomic_write(root / "sub" / "table-3.md", "| a |\n", root=root)
    assert _snapshot(sentinel) == before


# --------------------------------------------------------------------------- commands


def _one_line_naming(capsys: pytest.CaptureFixture[str], rc: int, link: Path) -> None:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert rc != 0, err
    assert "Traceback" not in err, err
    assert lines[-1].startswith("nlieval: error: "), err
    assert str(link) in lines[-1], err
    assert "symbolic link" in lines[-1], err


def _record(item: str) -> Record:
    return Record("t", item, "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "a")


def _run_folder(path: Path) -> Path:
    """A run folder of two records made by the run folder's own writer (no model)."""
    path.mkdir()
    with RunFolder(path) as folder:
        folder.append([_record("1"), _record("2")])
    return path


def _plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():
        import shutil

        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)
    return link


@pytest.mark.parametrize("sub", ["data", "assets", "figures", "index.html"])
def test_view_never_writes_through_a_link_in_an_older_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sub: str
) -> None:
    run = _run_folder(tmp_path / "run")
    site = tmp_path / "site"
    assert main(["view", str(run), "--out", str(site)]) == 0
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    target = sentinel / "meta.js" if sub == "index.html" else sentinel
    link = _plant(site / sub, target)
    capsys.readouterr()
    _one_line_naming(capsys, main(["view", str(run), "--out", str(site)]), link)
    assert _snapshot(sentinel) == before
    assert link.is_symlink()


@pytest.mark.parametrize("name", ["records.jsonl", "results.json", "summary.md", "config.json"])
def test_import_never_writes_through_a_linked_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": f"smoke-0{n}", "label": "entailment"}) + "\n"
                             for n in (1, 2, 3)))  # fmt: skip
    out = tmp_path / "imp"
    argv = ["import", str(preds), "--format", "labels", "--task", "smoke", "--model", "m",
            "--out", str(out)]  # fmt: skip
    first = main(argv)
    assert first == 0, capsys.readouterr().err
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    link = _plant(out / name, sentinel / "records.jsonl")
    capsys.readouterr()
    _one_line_naming(capsys, main(argv), link)
    assert _snapshot(sentinel) == before


@pytest.mark.parametrize("name", ["s.jsonl", "s.summary.json"])
def test_contamination_never_writes_through_a_linked_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a man is sleeping on a bench in the park today\n")
    folder = tmp_path / "scores"
    folder.mkdir()
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    link = _plant(folder / name, sentinel / "index.md")
    argv = ["contamination", "--task", "smoke", "--corpus", str(corpus), "--limit", "2",
            "--workers", "1", "--out", str(folder / "s.jsonl")]  # fmt: skip
    _one_line_naming(capsys, main(argv), link)
    assert _snapshot(sentinel) == before


def test_figure_never_draws_through_a_linked_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_folder(tmp_path / "run")
    sentinel = _sentinel(tmp_path)
    before = _snapshot(sentinel)
    link = _plant(tmp_path / "figs" / "shots.svg", sentinel / "index.md")
    rc = main(["figure", "shots", str(run), "--out", str(link)])
    _one_line_naming(capsys, rc, link)
    assert _snapshot(sentinel) == before


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), [*NOUNS, *CUE.values(), "sees"])


@pytest.fixture(scope="module")
def syn(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A task YAML: a train split (pool) of 12 items, a test split of 6."""
    return cue_task(tmp_path_factory.mktemp("syn"), 12, 6)


@pytest.mark.parametrize(
    "again", [[], ["--seeds", "0,1"], ["--no-test"]], ids=["resume", "more-seeds", "no-test"]
)
def test_train_never_writes_a_seed_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bert: Path, syn: str, again: list[str]
) -> None:
    out = tmp_path / "train"
    argv = ["train", "--model", str(bert), "--task", syn, "--epochs", "1", "--seeds", "0,",
            "--max-length", "16", "--device", "cpu", "--no-progress",
            "--out", str(out)]  # fmt: skip
    # A finished run, its seed folder then moved away and linked back.
    assert main(argv) == 0, capsys.readouterr().err
    sentinel = _sentinel(tmp_path)
    for p in (out / "seed0").iterdir():
        p.rename(sentinel / p.name)
    before = _snapshot(sentinel)
    link = _plant(out / "seed0", sentinel)
    capsys.readouterr()
    _one_line_naming(capsys, main([*argv, *again]), link)
    assert _snapshot(sentinel) == before


EXPERIMENT = """\
experiment: links
backoff: 0
models:
  m: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 1, shots: [0]}
matrix:
  - {block: base, models: [m]}
outputs:
  table: {kind: grid, label: Table 3, blocks: [base], rows: [model, k]}
"""


@pytest.mark.parametrize(
    "sub", ["cells", "state", "report", "report/table.md", "report/table", "cells/base-m"]
)
def test_an_experiment_never_writes_through_a_link_in_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tiny_llama: Path, sub: str
) -> None:
    spec = tmp_path / "e.yaml"
    spec.write_text(EXPERIMENT.replace("MODEL", str(tiny_llama)))
    out = tmp_path / "exp"
    argv = ["experiment", "run", str(spec), "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    sentinel = _sentinel(tmp_path)
    if sub.endswith(".md"):
        written = sorted((out / "report").glob("*.md"))
        assert out / sub in written, written
        target = sentinel / "index.md"
    elif not (out / sub).exists():  # an output's sub-folder, as sci-report's plots
        target = sentinel
    else:
        target = sentinel / "moved"  # the folder's files, kept where the link points
        (out / sub).rename(target)
    before = _snapshot(sentinel)
    link = _plant(out / sub, target)
    capsys.readouterr()
    _one_line_naming(capsys, main(argv), link)
    assert _snapshot(sentinel) == before


@pytest.mark.parametrize("planted", ["models", "entry", "old-entry"])
def test_the_conversion_cache_is_never_written_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    from nlieval.backends.weights import ModelSource, local_hf_folder

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("NLIEVAL_CACHE", str(cache))
    sentinel = _sentinel(tmp_path)
    (sentinel / "config.json").write_text("{}")  # looks like a finished conversion
    before = _snapshot(sentinel)
    source = ModelSource("m", str(tmp_path), "m.gguf", cache_key="m-q8", source_sha256="ab")
    # The entry's folder is named by its key and its source's hash; one made before that
    # naming (key alone) is adopted when it holds, but never when it is a link.
    name = {"models": None, "entry": "m-q8-ab", "old-entry": "m-q8"}[planted]
    link = cache / "models" if name is None else cache / "models" / name
    _plant(link, sentinel)
    if planted == "models":
        # The conversions' folder itself may be a link the user made (the models on a
        # bigger disk), as the cache may: followed, and its entries still checked.
        (sentinel / "m-q8-ab").symlink_to(tmp_path)
        with pytest.raises(FolderError, match=rf"^{link / 'm-q8-ab'} is a symbolic link"):
            local_hf_folder(source)
        return
    if planted == "old-entry":
        with pytest.raises(OSError):  # not adopted: converting the (missing) GGUF fails
            local_hf_folder(source)
        assert link.is_symlink() and not (cache / "models" / "m-q8-ab").exists()
    else:
        with pytest.raises(FolderError, match=rf"^{link} is a symbolic link"):
            local_hf_folder(source)
    assert _snapshot(sentinel) == before


# --------------------------------------------------------------------------- the source

#: Calls that write, make or remove files. Each is made only by the ground's writers, or
#: at a place below (with the reason it needs no root there).
RAW = {"mkdir", "write_text", "write_bytes", "touch", "savefig", "save_pretrained",
       "rmtree", "replace", "rename", "symlink_to", "copy", "copy2", "copyfile",
       "copytree", "move", "save_file", "dump", "to_csv", "mkdtemp", "link",
       "hardlink_to", "makedirs"}  # fmt: skip
#: (module, function, call): why it may write without the ground's writer.
ALLOWED = {
    ("cli/__init__.py", "main", "open"):
        "os.devnull opened for writing (stdout of a closed pipe), no file of nlieval's",
    ("classifiers/model.py", "save_classifier", "mkdtemp"):
        "a fresh temporary folder beside the checkpoint, whose parent make_folder made",
    ("classifiers/model.py", "save_classifier", "save_pretrained"):
        "into the fresh temporary folder (no link can be in it)",
    ("classifiers/model.py", "save_classifier", "save_file"):
        "into the fresh temporary folder",
    ("classifiers/model.py", "save_classifier", "rmtree"):
        "the checkpoint folder, checked by check_inside: not a link",
    ("classifiers/model.py", "save_classifier", "replace"):
        "renames the temporary folder over the checked checkpoint folder",
    ("classifiers/model.py", "save_lora", "save_pretrained"):
        "called by save_classifier on its fresh temporary folder",
    ("backends/weights.py", "_adopted", "replace"):
        "renames an old-named conversion inside the cache (never one that is a link) to "
        "its new name, whose place check_inside then checks",
    ("backends/weights.py", "_convert_gguf", "mkdtemp"):
        "a fresh temporary folder in the cache, whose parent make_folder(root=cache) made",
    ("backends/weights.py", "_convert_gguf", "save_pretrained"):
        "into the fresh temporary folder",
    ("backends/weights.py", "_convert_gguf", "rmtree"):
        "the cache entry, checked by check_inside (root: the cache)",
    ("backends/weights.py", "_convert_gguf", "replace"):
        "renames the temporary folder over the checked cache entry",
    ("view/site.py", "build_site", "rmtree"):
        "an older site's data, assets, figures: each checked by check_inside first",
    ("sci/train.py", "_clear_seed", "rmtree"):
        "a seed folder of the run, refused above when it is a link",
    ("plotting/canvas.py", "save", "savefig"):
        "into memory (BytesIO); the bytes are written by atomic_write",
}  # fmt: skip


SHUTIL = {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"}


def _raw_writes() -> list[tuple[str, str, str, int]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel.startswith("ground/"):
            continue  # the writers themselves
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else (
                    node.func.id if isinstance(node.func, ast.Name) else ""
                )  # fmt: skip
                if name == "replace" and not (
                    isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "os"
                ):
                    continue  # str.replace, dataclasses.replace
                if name in SHUTIL and not (
                    isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "shutil"
                ):
                    continue  # list.copy, dict.copy
                if name == "dump" and not (
                    isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("json", "yaml", "pickle")
                ):
                    continue
                if name == "open" and _opens_for_writing(node):
                    found.append((rel, func.name, "open", node.lineno))
                elif name in RAW:
                    found.append((rel, func.name, name, node.lineno))
    return found


def _opens_for_writing(node: ast.Call) -> bool:
    args = [*node.args[1:2], *(k.value for k in node.keywords if k.arg in ("mode", "flags"))]
    for a in args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            if set(a.value) & set("wax+"):
                return True
        elif a is not None and any(
            isinstance(n, ast.Attribute) and n.attr in ("O_WRONLY", "O_RDWR", "O_CREAT")
            for n in ast.walk(a)
        ):
            return True
    return False


def test_no_raw_write_outside_the_ground() -> None:
    """Every write, folder made or tree removed in src/nlieval goes through the ground's
    writers (which take the writer's folder, ``root=``), or is one of :data:`ALLOWED`."""
    raw = [w for w in _raw_writes() if w[:3] not in ALLOWED]
    assert raw == [], "a raw write outside nlieval.ground (use atomic_write/make_folder):\n" + (
        "\n".join(f"  {m}:{line} in {f}: {c}" for m, f, c, line in raw)
    )
    used = {w[:3] for w in _raw_writes()}
    assert set(ALLOWED) <= used, f"allowed but gone (remove them): {set(ALLOWED) - used}"


def _ground_calls() -> list[tuple[str, int, str, ast.Call]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel.startswith("ground/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                out.append((rel, node.lineno, name, node))
    return out


def test_every_ground_writer_names_its_folder() -> None:
    """A file written, appended or cut names the folder it writes in (``root=``); a
    folder made below another one (a path built with ``/``) names it too."""
    missing = []
    for rel, line, name, node in _ground_calls():
        has_root = any(k.arg == "root" for k in node.keywords)
        writes = name in ("atomic_write", "append_own", "cut_torn_tail") or (
            name == "open_own" and _opens_for_writing_flags(node)
        )
        if writes and not has_root:
            missing.append(f"{rel}:{line}: {name}")
        elif (
            name == "make_folder"
            and not has_root
            and node.args
            and isinstance(node.args[0], ast.BinOp)
            and isinstance(node.args[0].op, ast.Div)
        ):
            missing.append(f"{rel}:{line}: make_folder of a path below a folder")
    assert missing == [], "writers without root=:\n" + "\n".join(missing)


def _opens_for_writing_flags(node: ast.Call) -> bool:
    flags = node.args[1] if len(node.args) > 1 else None
    return flags is not None and any(
        isinstance(n, ast.Attribute) and n.attr in ("O_WRONLY", "O_RDWR", "O_CREAT")
        for n in ast.walk(flags)
    )
