"""The size of ``nlieval view``: full HANS (30,000 items) with 5 runs made by
``nlieval import`` of label files (no model), the time to write the site, and in headless
Chromium (``tests/helpers/browser.py``) the time from opening it over ``file://`` to the
first table of items, and to apply filters.

Each of the 5 made-up systems answers ``entailment`` where a seeded coin (its own seed)
says so, with 40% to 80% entailment: their answers differ item by item, as models do.

    python benchmarks/view_bench.py                     # NLIEVAL_DATA_DIR: the data folder
    python benchmarks/view_bench.py --runs 5 --limit 3000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.helpers

from nlieval.cli import main  # noqa: E402
from nlieval.data import load_task  # noqa: E402
from tests.helpers.browser import chromium  # noqa: E402


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _timed(page: Any, action: Any) -> tuple[float, str]:
    start = time.perf_counter()
    action()
    page.wait_for_selector("body[data-ready=yes]", timeout=600_000)
    return time.perf_counter() - start, page.inner_text("#item-count")


def main_bench() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None, help="HANS items (default: all)")
    args = ap.parse_args()
    items = load_task("hans").items[: args.limit]
    print(f"HANS: {len(items)} items, {args.runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = []
        start = time.perf_counter()
        for n in range(args.runs):
            coin = random.Random(n)
            share = 0.4 + 0.1 * n
            path = root / f"sys{n}.csv"
            lines = ["id,label"] + [
                f"{it.id},{'entailment' if coin.random() < share else 'non-entailment'}"
                for it in items
            ]
            path.write_text("\n".join(lines) + "\n")
            out = root / f"sys{n}"
            argv = ["import", str(path), "--format", "labels", "--task", "hans"]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main([*argv, "--model", f"sys{n}", "--out", str(out)]) == 0
            runs.append(str(out))
        print(f"import of {args.runs} label files: {time.perf_counter() - start:.1f} s")
        site = root / "site"
        start, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["view", *runs, "--out", str(site)]) == 0
        chunks = len(list((site / "data").glob("chunk-*.js")))
        meta = (site / "data" / "meta.js").stat().st_size
        # CPU seconds too: on shared cores the wall time says more about the neighbours.
        print(
            f"nlieval view: {time.perf_counter() - start:.1f} s "
            f"({time.process_time() - cpu:.1f} s CPU); site {_size(site) / 1e6:.1f} MB "
            f"(index meta.js {meta / 1e6:.1f} MB, {chunks} chunks)"
        )
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            url = (site / "index.html").as_uri() + "#items"
            steps = [
                ("first render (open, index, first chunk, 50 rows)", lambda: page.goto(url)),
                ("filter disagree", lambda: page.check("#filter-disagree")),
                ("+ filter any-wrong", lambda: page.check("#filter-any-wrong")),
                ("field heuristic = subsequence (filters on)",
                 lambda: page.select_option("#field-heuristic", "subsequence")),
                ("sort by sys0's entropy, descending",
                 lambda: (page.select_option("#item-sort", "entropy:sys0"),
                          page.check("#item-descending"))),
                ("filters off",
                 lambda: (page.uncheck("#filter-disagree"), page.uncheck("#filter-any-wrong"),
                          page.select_option("#field-heuristic", ""))),
                ("next page", lambda: page.click("#item-next")),
                ("text search 'doctor' (loads every chunk)",
                 lambda: page.fill("#item-search", "doctor")),
                ("text search 'the lawyer' (chunks loaded)",
                 lambda: page.fill("#item-search", "the lawyer")),
            ]  # fmt: skip
            for name, action in steps:
                seconds, count = _timed(page, action)
                print(f"  {name}: {seconds:.2f} s ({count} items)")


if __name__ == "__main__":
    main_bench()
