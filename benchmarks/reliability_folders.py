"""Hostile run folders and ``--out`` paths: files of the folder that are links to files
elsewhere (a write or a torn-line repair through them would change the other file), a
hard-linked records file, ``--out`` that is a file or lies below one, a folder that cannot
be written, and ``chaosnli-import`` of prediction files that give one item twice.

Every case is an error: the folder is refused, with one line naming the file, before
anything is written. That the file a link points to is left unchanged is checked by
``tests/runs/test_folder_files.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from reliability_kit import Case, invoke, write

#: ChaosNLI items (premise/hypothesis and 100 human labels) for chaosnli-import.
COUNTS = {"u1": [80, 15, 5], "u2": [10, 50, 40], "u3": [0, 0, 100]}


def _chaos_dir(d: Path) -> str:
    rows = [
        {
            "uid": uid,
            "label_counter": dict(zip("enc", c, strict=True)),
            "majority_label": "enc"[c.index(max(c))],
            "label_dist": [x / 100 for x in c],
            "label_count": c,
            "entropy": 0.0,
            "example": {"uid": uid, "premise": "A man naps.", "hypothesis": "He sleeps."},
            "old_label": "enc"[c.index(max(c))],
        }
        for uid, c in COUNTS.items()
    ]
    write(d / "chaos" / "chaosnli" / "chaosNLI_snli.jsonl", "".join(map(_line, rows)))
    return str(d / "chaos")


def _line(row: object) -> str:
    return json.dumps(row) + "\n"


def _predictions(d: Path, name: str, probs: list[float]) -> str:
    return str(write(d / name, "".join(_line({"id": u, "probs": probs}) for u in COUNTS)))


def _import(d: Path, out: Path, *files: str, seed: int = 0) -> list[str]:
    return [
        "chaosnli-import",
        *files,
        "--seed",
        str(seed),
        "--task",
        "chaosnli_snli",
        "--model",
        "bert",
        "--data-dir",
        _chaos_dir(d),
        "--out",
        str(out),
    ]


def _imported(d: Path, name: str) -> Path:
    """A finished chaosnli-import run folder ``d/name`` (made by the command itself)."""
    out = d / name
    rc, err = invoke(_import(d, out, _predictions(d, f"{name}.jsonl", [0.6, 0.3, 0.1])))
    assert rc == 0, err
    return out


def _linked(name: str, command: str) -> Callable[[Path], list[str]]:
    """A finished folder whose ``name`` is a symbolic link to a file outside it, then
    ``command`` on it (``import``: the same import again; ``report``)."""

    def argv(d: Path) -> list[str]:
        tag = f"lnk_{command}_{name.strip('.')}"
        out = _imported(d, tag)
        outside = d / f"{tag}.outside"
        if (out / name).exists():
            outside.write_bytes((out / name).read_bytes())
            (out / name).unlink()
        else:
            write(outside, "someone else's file\n")
        (out / name).symlink_to(outside)
        if command == "report":
            return ["report", str(out)]
        return _import(d, out, str(d / f"{tag}.jsonl"))

    return argv


def _run_linked(model: str, name: str) -> Callable[[Path], list[str]]:
    """A finished ``run`` folder of 1 item whose ``name`` is a link to an outside file
    (a records file of another run, with a torn last line), then a run of 2 items."""

    def argv(d: Path) -> list[str]:
        out = d / f"run_lnk_{name.strip('.')}"
        base = ["run", "--model", model, "--task", "smoke", "--no-progress", "--out", str(out)]
        rc, err = invoke([*base, "--limit", "1"])
        assert rc == 0, err
        outside = write(d / f"run_lnk_{name.strip('.')}.outside", '{"a": 1}\n{"torn')
        (out / name).unlink()
        (out / name).symlink_to(outside)
        return [*base, "--limit", "2"]

    return argv


def _hard_linked(d: Path) -> list[str]:
    out = _imported(d, "hard_records")
    copy = d / "hard_records.backup.jsonl"
    os.link(out / "records.jsonl", copy)  # a backup made with `cp -l`
    # Another seed of the classifier: records to append.
    return _import(d, out, _predictions(d, "hard_more.jsonl", [0.6, 0.3, 0.1]), seed=1)


def _out_is_a_file(d: Path) -> list[str]:
    return _import(d, write(d / "out_file.txt", "notes\n"), _predictions(d, "of.jsonl", [1, 0, 0]))


def _out_below_a_file(d: Path) -> list[str]:
    notes = write(d / "below_file.txt", "notes\n")
    return _import(d, notes / "run", _predictions(d, "bf.jsonl", [1, 0, 0]))


def _read_only(d: Path) -> list[str]:
    parent = d / "read_only"
    parent.mkdir()
    parent.chmod(0o555)  # empty: the scratch folder is still removed at the end
    return _import(d, parent / "run", _predictions(d, "ro.jsonl", [1, 0, 0]))


def _twice(d: Path) -> list[str]:
    a = _predictions(d, "twice_a.jsonl", [0.6, 0.3, 0.1])
    b = _predictions(d, "twice_b.jsonl", [0.2, 0.3, 0.5])
    return _import(d, d / "twice", a, b)


def _later_other_file(d: Path) -> list[str]:
    out = _imported(d, "later")
    return _import(d, out, _predictions(d, "later_other.jsonl", [0.1, 0.1, 0.8]))


def _records_a_folder(d: Path) -> list[str]:
    out = _imported(d, "records_dir")
    (out / "records.jsonl").rename(d / "records_dir.jsonl")
    (out / "records.jsonl").mkdir()
    return ["report", str(out)]


def _chaosnli_out_below_a_file(d: Path) -> list[str]:
    out = _imported(d, "chaos_json")
    return ["chaosnli", str(out), "--out", str(write(d / "cj.txt", "x\n") / "scores")]


def cases(model: str, bert: str) -> list[Case]:
    out = [
        Case("run", ".lock a link to another file", _run_linked(model, ".lock")),
        Case("run", "records.jsonl a link to a torn file", _run_linked(model, "records.jsonl")),
        Case("run", "config.json a link", _run_linked(model, "config.json")),
        Case("run", "timing.json a link", _run_linked(model, "timing.json")),
        Case("chaosnli-import", "results.json a link", _linked("results.json", "import")),
        Case("chaosnli-import", "provenance.jsonl a link", _linked("provenance.jsonl", "import")),
        Case("chaosnli-import", "summary.md a link", _linked("summary.md", "import")),
        Case("report", "provenance.jsonl a link", _linked("provenance.jsonl", "report")),
        Case("report", "records.jsonl a link", _linked("records.jsonl", "report")),
        Case("report", "records.jsonl a folder", _records_a_folder),
        Case("chaosnli-import", "records.jsonl hard-linked", _hard_linked),
        Case("chaosnli-import", "--out a regular file", _out_is_a_file),
        Case("chaosnli-import", "--out below a regular file", _out_below_a_file),
        Case("chaosnli-import", "two files, one model/seed/ids", _twice),
        Case("chaosnli-import", "folder holds other predictions", _later_other_file),
        Case("chaosnli", "--out below a regular file", _chaosnli_out_below_a_file),
    ]
    if os.geteuid() != 0:  # root writes into a read-only folder all the same
        out.append(Case("chaosnli-import", "--out in a read-only folder", _read_only))
    return out
