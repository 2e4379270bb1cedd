"""Caches that must not vouch for unchecked bytes, and a logic that refuses what it cannot
decide (issue 43, rules 4 and 5).

Cases for ``reliability.py`` (``--files logic_caches``), each an ``nlieval`` command:

* the content-hash cache: a run is made on a model, then its weights are replaced by
  another model's of the same size, the mtime forged back with ``os.utime``, and the
  hash cache's entry for the old file copied onto the new file's key (its path and its
  ``stat`` now), in the current shape and in an older one (a bare hash); resuming must
  say in one line that the model changed (exit 0 is a run scored on other weights);
* the frame classes: a class the decision procedures do not decide, named by
  ``--frames`` or by a reading file's ``frames:``.

Run on its own (``python benchmarks/reliability_logic_caches.py``), it also tries what
the command line cannot reach: a public ``Frames`` that is none of K/KT/S4/S5 given to
``valid`` (the cases of the issue; KTB and KB must be refused in one line, K4 and KB4
decided as the textbooks do: ``right``, else ``silent``), and ``nlieval logic check``
on a large decision in a child process under a 2 GiB address limit (``ulimit -v``) with
most of it taken by ballast, so that the limit is reached in seconds. The conversion
cache's lying entries (a conversion copied under another model's name, a GGUF replaced
with the same size and mtime) need a GGUF conversion each (15-40 s of transformers):
they are in ``tests/backends/test_cache_trust.py`` with a stand-in converter.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from reliability_kit import Case, invoke, write  # noqa: E402

_n = itertools.count()


def _fresh(d: Path, stem: str) -> Path:
    folder = d / f"lc-{stem}-{next(_n)}"
    folder.mkdir()
    return folder


def _cache_file() -> Path:
    from nlieval.backends.weights import cache_dir

    return Path(cache_dir()) / "file-hashes.v2.json"


def _key(p: Path) -> str:
    st = p.stat()
    fields = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    return "|".join(map(str, (p.resolve(), *fields)))


def cases(model: str, bert: str) -> list[Case]:
    """The command-line cases (see the module docstring)."""

    def run_argv(f: Path, m: Path, limit: str) -> list[str]:
        return ["run", "--model", str(m), "--task", "smoke", "--limit", limit,
                "--no-progress", "--out", str(f / "o")]  # fmt: skip

    def swapped(bare: bool) -> Callable[[Path], list[str]]:
        def argv(d: Path) -> list[str]:
            from tests.helpers.tiny_models import tiny_model

            f = _fresh(d, "swap")
            m = f / "model"
            shutil.copytree(model, m)
            time.sleep(2.1)  # older than the hash cache's racy window: its hashes are kept
            rc, err = invoke(run_argv(f, m, "2"), d)
            assert rc == 0, err
            weights = m / "model.safetensors"
            old_key = _key(weights)
            st = weights.stat()
            other = tiny_model(f / "other", "llama", seed=5) / "model.safetensors"
            assert other.stat().st_size == st.st_size  # the same shapes: the same size
            weights.unlink()
            shutil.copyfile(other, weights)
            os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
            entries = json.loads(_cache_file().read_text())
            value = entries[old_key]
            entries[_key(weights)] = value.split()[0] if bare else value
            _cache_file().write_text(json.dumps(entries))
            return run_argv(f, m, "4")

        return argv

    def frames_flag(d: Path) -> list[str]:
        return ["logic", "check", "Eab & Ebc -> Eac", "--frames", "KB"]

    def frames_in_reading(name: str) -> Callable[[Path], list[str]]:
        def argv(d: Path) -> list[str]:
            path = write(
                _fresh(d, "reading") / "r.yaml",
                f"name: R\nE: box(a -> b)\nC: box(a -> ~b)\nN: dia(a & b)\nframes: {name}\n",
            )
            return ["logic", "conclude", "Eab", "ba", "--reading", str(path)]

        return argv

    return [
        Case("run", "hash entry copied onto other weights", swapped(bare=False)),
        Case("run", "hash entry (bare hash) copied onto other", swapped(bare=True)),
        Case("logic check", "--frames KB (not decided)", frames_flag),
        Case("logic conclude", "reading file frames: KTB", frames_in_reading("KTB")),
        Case("logic conclude", "reading file frames: K4", frames_in_reading("K4")),
    ]


# --------------------------------------------------------------------------- standalone

_CHILD = """
import resource, sys
limit = 2 * 1024**3
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from nlieval.cli import main
import nlieval.cli.logic
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
            if line.startswith("VmSize:"))
ballast = bytearray(limit - size - 100 * 1024**2)
letters = "abcdefghijklmnopqrstuvwxyz"
chain = " & ".join(f"N{x}{y}" for x, y in zip(letters, letters[1:]))
chain += " & " + " & ".join(f"C{x}{y}" for x, y in zip(letters, letters[2:]))
sys.exit(main(["logic", "check", chain + " -> Eaz", "--frames", "S5"]))
"""


def _api_frames(
    flags: tuple[bool, bool, bool], formula: str, expected: bool | None
) -> tuple[str, str]:
    """``valid(formula, Frames(...))`` classed: refused in one line (right where the class
    is not decided), the textbook answer (``right``), another answer (``silent``), or
    a traceback."""
    import traceback

    from nlieval.metainference.logic import Frames, LogicError, valid

    try:
        got = valid(formula, Frames("X", *flags))
    except LogicError as err:
        line = f"nlieval: error: {err}"
        return ("clear error" if "\n" not in line else "traceback"), line
    except Exception:  # noqa: BLE001 (what the user would see)
        return "traceback", traceback.format_exc()
    return ("right" if got is expected else "silent"), f"valid: {got}"


def _memory_child() -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        p = subprocess.run(
            [sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=300
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stderr


def main() -> int:
    """This file's cases through reliability.py's classes, then the API and memory cases."""
    import reliability

    from tests.helpers.tiny_models import tiny_model

    d = Path(tempfile.mkdtemp(prefix="nlieval-logic-caches-"))
    model = str(tiny_model(d / "tiny-llama", "llama"))
    table: dict[str, Counter[str]] = {}

    def record(command: str, name: str, case: Case, rc: int | None, err: str) -> None:
        outcome = reliability.classify(case, rc, err)
        table.setdefault(command, Counter())[outcome] += 1
        last = (err.strip().splitlines() or [""])[-1][:150]
        print(f"{outcome:<12} {command:<15} {name:<40} {last}", flush=True)

    for case in cases(model, ""):
        rc, _, err = reliability._in_process(case.argv(d), d, 180)
        record(case.command, case.name, case, rc, err)
    # (name, (reflexive, symmetric, transitive), formula, textbook answer or None: refuse)
    api = [
        ("KTB: box a -> box box a", (True, True, False), "box a -> box box a", None),
        ("KB: box a -> a", (False, True, False), "box a -> a", None),
        ("K4: box a -> box box a", (False, False, True), "box a -> box box a", True),
        ("K4: box a -> a", (False, False, True), "box a -> a", False),
        ("KB4: dia a -> box dia a", (False, True, True), "dia a -> box dia a", True),
        ("KB4: box a -> a", (False, True, True), "box a -> a", False),
    ]
    for name, flags, formula, expected in api:
        outcome, line = _api_frames(flags, formula, expected)
        table.setdefault("logic.valid", Counter())[outcome] += 1
        print(f"{outcome:<12} {'logic.valid':<15} {name:<40} {line[-150:]}", flush=True)
    rc, err = _memory_child()
    name = "check under ulimit -v 2 GiB (S5 chain)"
    record("logic check", name, Case("logic check", name, lambda _d: []), rc, err)
    cols = ["clear error", "right", "traceback", "silent"]
    print("\n| command | cases | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    total = Counter[str]()
    for cmd, c in table.items():
        total.update(c)
        print(f"| {cmd} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in cols) + " |")
    print(f"| **all** | {sum(total.values())} | " + " | ".join(str(total[k]) for k in cols) + " |")
    shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
