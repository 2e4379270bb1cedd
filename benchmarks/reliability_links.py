"""A writer writes only inside its own folder (issue 43, rule 1): one case per writer.

Each case makes the folder a command writes into (most with a first invocation of the
command itself), plants a symbolic link in it, a sub-folder or a file, pointing to a
sentinel folder elsewhere that holds someone else's files, then runs the command again.
The right answer is one ``nlieval: error: ...`` line naming the link; exit 0 is a write
through the link or a folder followed out of its own. Every case also checks the sentinel
folder afterwards (bytes, inode, modification time): any change, a file rewritten even with
the same bytes, is counted as data lost.

    python benchmarks/reliability.py --kills 0 --files links
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from reliability_kit import Case, invoke, nli_rows, task, write

_n = itertools.count()
#: The sentinel folder of each case and its files as planted.
_PLANTED: dict[str, tuple[Path, dict[str, tuple[bytes, int, int]]]] = {}


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    # Bytes, inode and modification time: a file rewritten with the same bytes (a site's
    # meta.js written again from the same runs) was written through the link all the same.
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(folder))] = (p.read_bytes(), st.st_ino, st.st_mtime_ns)
    return out


def _sentinel(d: Path, tag: str) -> Path:
    s = d / f"links-{tag}-elsewhere"
    write(s / "meta.js", "someone else's meta\n")
    write(s / "records.jsonl", '{"a": 1}\n{"torn')
    write(s / "index.md", "# not nlieval's\n")
    return s


def _first(argv: list[str], cwd: Path | None = None) -> None:
    rc, err = invoke(argv, cwd)
    assert rc == 0 and "nlieval: error" not in err, err


def _plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


def _case(
    command: str,
    name: str,
    make: Callable[[Path, str], list[str]],
    sub: str,
    kind: str = "folder",
) -> Case:
    """``make(d, tag)`` makes the folder and returns ``(argv)``; the folder is the
    argv's ``--out`` (or the path after ``--out``'s flag); ``sub`` is planted in it as a
    link to the sentinel folder (``kind`` folder) or to a file in it (``file``)."""
    key = f"{command}:{name}"

    def argv(d: Path) -> list[str]:
        tag = f"{command.replace(' ', '-')}-{next(_n)}"
        args = make(d, tag)
        out = Path(args[args.index("--out") + 1])
        folder = out if kind != "out-file" else out.parent
        sentinel = _sentinel(d, tag)
        if kind == "folder":
            moved = sentinel / "moved"  # the folder's own files, kept where the link points
            if (folder / sub).is_dir():
                shutil.copytree(folder / sub, moved)
            else:
                moved.mkdir()
            _plant(folder / sub, moved)
        else:
            _plant(folder / sub, sentinel / "index.md")
        _PLANTED[key] = (sentinel, _snapshot(sentinel))
        return args

    def lost(d: Path) -> bool:
        sentinel, before = _PLANTED[key]
        return _snapshot(sentinel) != before

    return Case(command, name, argv, lost=lost)


def _run_folder(d: Path, model: str, tag: str) -> list[str]:
    args = ["run", "--model", model, "--task", "smoke", "--limit", "2", "--no-progress"]
    args += ["--out", str(d / f"links-{tag}")]
    _first(args)
    return [*args[:6], "3", *args[7:]]  # one item more: records to append


def _view(model: str) -> Callable[[Path, str], list[str]]:
    def make(d: Path, tag: str) -> list[str]:
        run = d / f"links-{tag}-run"
        _first(["run", "--model", model, "--task", "smoke", "--limit", "2", "--no-progress",
                "--out", str(run)])  # fmt: skip
        args = ["view", str(run), "--out", str(d / f"links-{tag}-site")]
        _first(args)
        return args

    return make


def _import(d: Path, tag: str) -> list[str]:
    preds = write(
        d / f"links-{tag}.jsonl",
        "".join(json.dumps({"id": f"smoke-0{n}", "label": "entailment"}) + "\n" for n in (1, 2)),
    )
    args = ["import", str(preds), "--format", "labels", "--task", "smoke", "--model", "m",
            "--out", str(d / f"links-{tag}")]  # fmt: skip
    _first(args)
    return args


def _contamination(d: Path, tag: str) -> list[str]:
    corpus = write(d / f"links-{tag}.txt", "a man is sleeping on a bench in the park today\n")
    out = d / f"links-{tag}" / "s.jsonl"
    out.parent.mkdir(parents=True)
    return ["contamination", "--task", "smoke", "--corpus", str(corpus), "--limit", "2",
            "--workers", "1", "--out", str(out)]  # fmt: skip


def _figure(model: str) -> Callable[[Path, str], list[str]]:
    def make(d: Path, tag: str) -> list[str]:
        run = d / f"links-{tag}-run"
        _first(["run", "--model", model, "--task", "smoke", "--limit", "2", "--no-progress",
                "--out", str(run)])  # fmt: skip
        return ["figure", "shots", str(run), "--out", str(d / f"links-{tag}" / "shots.svg")]

    return make


def _grid(model: str) -> Callable[[Path, str], list[str]]:
    def make(d: Path, tag: str) -> list[str]:
        run = d / f"links-{tag}-run"
        _first(["run", "--model", model, "--task", "smoke", "--limit", "2", "--no-progress",
                "--out", str(run)])  # fmt: skip
        return ["grid", str(run), "--out", str(d / f"links-{tag}" / "grid.md")]

    return make


def _infer(d: Path, tag: str) -> list[str]:
    args = ["infer", "build", "--task", "smoke", "--limit", "6", "--overwrite",
            "--out", str(d / f"links-{tag}")]  # fmt: skip
    _first(args)
    return args


def _distant(d: Path, tag: str) -> list[str]:
    docs = "".join(
        json.dumps({"id": f"d{i}", "text": f"The model {i} is small. Therefore, it runs fast."})
        + "\n"
        for i in range(6)
    )
    corpus = write(d / f"links-{tag}-papers.jsonl", docs)
    args = ["build", "distant", "--corpus", str(corpus), "--out", str(d / f"links-{tag}")]
    _first(args)
    return args


def _train(bert: str) -> Callable[[Path, str], list[str]]:
    def make(d: Path, tag: str) -> list[str]:
        folder = d / f"links-{tag}-task"
        yaml = task(folder, nli_rows(12), "pool: t.jsonl\n")
        args = ["train", "--model", bert, "--task", yaml, "--epochs", "1", "--seeds", "0,",
                "--max-length", "16", "--device", "cpu", "--no-progress", "--no-test",
                "--out", str(d / f"links-{tag}")]  # fmt: skip
        _first(args)
        return args

    return make


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


def _experiment(model: str) -> Callable[[Path, str], list[str]]:
    def make(d: Path, tag: str) -> list[str]:
        spec = write(d / f"links-{tag}.yaml", EXPERIMENT.replace("MODEL", model))
        args = ["experiment", "run", str(spec), "--out", str(d / f"links-{tag}")]
        _first(args)
        return args

    return make


def _gguf_case() -> Case:
    """A GGUF model (a file of no real weights: the cache is checked before it is read)
    whose conversion cache (``NLIEVAL_CACHE``, set for this case alone) has ``models/``
    a link elsewhere."""
    key = "cache:models"
    old: dict[str, str | None] = {}

    def argv(d: Path) -> list[str]:
        tag = f"cache-{next(_n)}"
        model = write(d / f"links-{tag}-model" / "m.gguf", b"GGUF not really")
        cache = d / f"links-{tag}-cache"
        sentinel = _sentinel(d, tag)
        _plant(cache / "models", sentinel)
        _PLANTED[key] = (sentinel, _snapshot(sentinel))
        old["cache"] = os.environ.get("NLIEVAL_CACHE")
        os.environ["NLIEVAL_CACHE"] = str(cache)
        return ["run", "--model", str(model), "--task", "smoke", "--limit", "1",
                "--no-progress", "--out", str(d / f"links-{tag}-run")]  # fmt: skip

    def lost(d: Path) -> bool:
        if old.get("cache") is None:
            os.environ.pop("NLIEVAL_CACHE", None)
        else:
            os.environ["NLIEVAL_CACHE"] = str(old["cache"])
        sentinel, before = _PLANTED[key]
        return _snapshot(sentinel) != before

    return Case("run (GGUF cache)", "cache models/ a link", argv, lost=lost)


def cases(model: str, bert: str) -> list[Case]:
    return [
        _case("view", "older site's data/ a link", _view(model), "data"),
        _case("view", "older site's assets/ a link", _view(model), "assets"),
        _case("view", "older site's figures/ a link", _view(model), "figures"),
        _case("view", "index.html a link", _view(model), "index.html", "file"),
        _case(
            "run", "summary.md a link", lambda d, t: _run_folder(d, model, t), "summary.md", "file"
        ),  # fmt: skip
        _case(
            "run",
            "records.jsonl a link",
            lambda d, t: _run_folder(d, model, t),
            "records.jsonl",
            "file",
        ),  # fmt: skip
        _case("import", "results.json a link", _import, "results.json", "file"),
        _case(
            "contamination", "the summary a link", _contamination, "s.summary.json", "out-file"
        ),  # fmt: skip
        _case("figure", "--out a link", _figure(model), "shots.svg", "out-file"),
        _case("grid", "--out a link", _grid(model), "grid.md", "out-file"),
        _case("infer build", "items.jsonl a link", _infer, "items.jsonl", "file"),
        _case("build distant", "distant.jsonl a link", _distant, "distant.jsonl", "file"),
        _case("train", "seed0/ a link (resume)", _train(bert), "seed0"),
        _case("experiment", "cells/ a link", _experiment(model), "cells"),
        _case("experiment", "state/ a link", _experiment(model), "state"),
        _case("experiment", "report/ a link", _experiment(model), "report"),
        _case(
            "experiment", "report/table.md a link", _experiment(model), "report/table.md", "file"
        ),  # fmt: skip
        _case("experiment", "a cell a link", _experiment(model), "cells/base-m"),
        _gguf_case(),
    ]
