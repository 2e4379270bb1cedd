"""Throughput and memory of the contamination scan on a generated corpus.

Generates ``--size-mb`` MB (10**6 bytes; default 1000, i.e. 1 GB) of plain text in
``--files`` files under a temporary folder: lines of random words drawn from the test
items' own vocabulary mixed with as many made-up words (so that most windows reach the
n-gram lookup, the slow case), with ``--plant`` test items written in whole at random
places. Scans it once with the local parallel runner against the items of ``--task``
(SNLI dev when a data folder is given, else the bundled smoke sample), checks that every
planted item with at least n tokens scores 1, and prints throughput and peak memory.

Memory: ``ru_maxrss`` of this process and of the largest worker (each counts the pages the
forked workers share with this process), and the peak over time of the summed PSS of this
process and its workers (shared pages counted once), sampled every 0.2 s with psutil.

    python benchmarks/contamination_bench.py --size-mb 20
    python benchmarks/contamination_bench.py --data-dir /path/to/data   # 1 GB, SNLI dev
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nlieval import contamination as cont
from nlieval.data import load_task
from nlieval.types import Item


def _vocabulary(items: Sequence[Item], rng: np.random.Generator) -> list[str]:
    tok = cont.Tokenizer("regex")
    words = sorted({str(t) for it in items for t in tok.item_tokens(cont.item_text(it))})
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    made_up = {"".join(rng.choice(letters, size=rng.integers(3, 10))) for _ in words}
    return words + sorted(made_up - set(words))


def _line_pool(words: list[str], rng: np.random.Generator, n_lines: int) -> list[str]:
    # A pool of random lines, sampled with replacement when writing: generating every
    # line afresh would make the run measure Python string building, not the scan.
    arr = np.array(words, dtype=object)
    lengths = rng.integers(5, 40, size=n_lines)
    flat = arr[rng.integers(0, len(words), size=int(lengths.sum()))]
    out, pos = [], 0
    for k in lengths:
        out.append(" ".join(flat[pos : pos + k]) + ".\n")
        pos += k
    return out


def generate(
    folder: Path, size: int, n_files: int, items: Sequence[Item], plant: int, seed: int = 0
) -> list[Item]:
    """Write about ``size`` bytes of text in ``n_files`` files; return the planted items."""
    rng = np.random.default_rng(seed)
    pool = _line_pool(_vocabulary(items, rng), rng, 50_000)
    planted = [items[i] for i in rng.choice(len(items), size=min(plant, len(items)), replace=False)]
    per_file = size // n_files
    for f in range(n_files):
        mine = [cont.item_text(it) + "\n" for j, it in enumerate(planted) if j % n_files == f]
        at = sorted(int(x) for x in rng.integers(0, per_file, size=len(mine)))
        with open(folder / f"part-{f:03d}.txt", "w", encoding="utf-8") as fh:
            written = 0
            while written < per_file:
                for i in rng.integers(0, len(pool), size=4096).tolist():
                    while at and at[0] <= written:  # a planted item at about this offset
                        at.pop(0)
                        line = mine.pop()
                        fh.write(line)
                        written += len(line)
                    fh.write(pool[i])
                    written += len(pool[i])
            fh.writelines(mine)  # offsets the last lines stepped over
    return planted


class PeakPss:
    """Peak over time of the summed PSS of this process and its children (psutil, Linux)."""

    def __init__(self, every: float = 0.2) -> None:
        self.peak = 0
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil

        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_full_info().pss
            except (psutil.Error, AttributeError):
                continue  # a worker that just exited; or no PSS on this platform
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self._every)

    def __enter__(self) -> PeakPss:
        try:
            import psutil  # noqa: F401
        except ImportError:
            return self
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def _items(task: str | None, data_dir: str | None) -> tuple[str, list[Item]]:
    name = task or ("snli" if data_dir or os.environ.get("NLIEVAL_DATA_DIR") else "smoke")
    return name, list(load_task(name, data_dir).items)


def run(args: argparse.Namespace) -> dict[str, Any]:
    task, items = _items(args.task, args.data_dir)
    folder = Path(tempfile.mkdtemp(prefix="contamination-bench-", dir=args.tmp_dir))
    try:
        t0 = time.perf_counter()
        planted = generate(folder, args.size_mb * 10**6, args.files, items, args.plant)
        gen_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        index, grams = cont.build_index((cont.item_text(it) for it in items), args.n)
        index_s = time.perf_counter() - t0
        with PeakPss() as pss:
            result = cont.scan_files([folder], index, args.workers)
        checked = _check(items, grams, planted, result.found, args.n)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return {
        "task": task,
        "items": len(items),
        "test_ngrams": len(index),
        "n": args.n,
        "workers": args.workers or cont.local_cores(),
        "corpus_mb": round(result.bytes / 1e6, 1),
        "files": args.files,
        "generate_s": round(gen_s, 1),
        "index_s": round(index_s, 2),
        **result.stats(),
        "maxrss_self_mb": _maxrss_mb(resource.RUSAGE_SELF),
        "maxrss_largest_worker_mb": _maxrss_mb(resource.RUSAGE_CHILDREN),
        "peak_pss_total_mb": round(pss.peak / 2**20, 1) if pss.peak else None,
        **checked,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "folder": str(folder) if args.keep else None,
    }


def _check(
    items: Sequence[Item],
    grams: Sequence[cont.ItemGrams],
    planted: Sequence[Item],
    found: set[int],
    n: int,
) -> dict[str, Any]:
    # Every planted item that has an n-gram must be wholly covered; other items may share
    # n-grams with them (SNLI items share premises), so those are only counted.
    score = {
        it.id: cont.contaminated_tokens(g, n, found) / g.n_tokens if g.n_tokens else 0.0
        for it, g in zip(items, grams, strict=True)
    }
    long_enough = [it for it, g in zip(items, grams, strict=True) if g.n_tokens >= n]
    want = {it.id for it in planted} & {it.id for it in long_enough}
    missed = sorted(i for i in want if score[i] != 1.0)
    if missed:
        raise SystemExit(f"planted items not scored 1: {missed[:5]}")
    others = sum(1 for i, s in score.items() if s > 0 and i not in want)
    return {"planted_checked": len(want), "other_items_above_0": others}


def _maxrss_mb(who: int) -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return round(resource.getrusage(who).ru_maxrss * scale / 2**20, 1)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--size-mb", type=int, default=1000, help="corpus size in MB [1000]")
    p.add_argument("--files", type=int, default=16, help="number of corpus files [16]")
    p.add_argument("--task", default=None, help="task whose items are scored [snli or smoke]")
    p.add_argument("--data-dir", default=None, help="[$NLIEVAL_DATA_DIR]")
    p.add_argument("--n", type=int, default=cont.DEFAULT_N)
    p.add_argument("--workers", type=int, default=None, help="[local cores]")
    p.add_argument("--plant", type=int, default=20, help="test items written into the corpus")
    p.add_argument("--tmp-dir", default=None, help="where the corpus is generated [system temp]")
    p.add_argument("--keep", action="store_true", help="keep the generated corpus")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    args = p.parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(
        f"\n| {out['corpus_mb']} MB, {out['files']} files | {out['task']} ({out['test_ngrams']} "
        f"{out['n']}-grams) | {out['workers']} workers | {out['seconds']} s "
        f"| {out['mb_per_s']} MB/s | {out['peak_pss_total_mb']} MB |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
