"""`build distant` time against a document's sentence count: sentence splitting in
windows (now) against pysbd on the whole paragraph (before), on a generated document.

The document is one paragraph of N sentences of 12 random words, each ending in an
abbreviation and a number ("in Fig. 12."), one in seven opening with a linking phrase.
pysbd rescans the whole text for every abbreviation it meets, which is what made the
time grow with the square of the paragraph's length.

    python benchmarks/distant_bench.py --sizes 1000,4000,20000 --whole 1000,2000
"""

from __future__ import annotations

import argparse
import random
import time

from nlieval.sci import distant


def document(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = [
        "model",
        "data",
        "result",
        "effect",
        "method",
        "sample",
        "value",
        "layer",
        "token",
        "score",
        "test",
        "train",
    ]
    openers = ["However, ", "Thus, ", "In particular, ", "", "", "", ""]
    return " ".join(
        rng.choice(openers)
        + " ".join(rng.choice(words) for _ in range(12)).capitalize()
        + f" in Fig. {i}."
        for i in range(n)
    )


def seconds(n: int, window: int) -> tuple[float, int]:
    """Seconds to split and build one document of ``n`` sentences; its sentence count."""
    text = document(n)
    distant.WINDOW = window
    t0 = time.perf_counter()
    doc = distant.Document("d", distant.split_paragraphs(text))
    distant.build_distant([doc])
    return time.perf_counter() - t0, len(doc.sentences)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="1000,4000,20000", help="sentences, windowed")
    ap.add_argument("--whole", default="1000,2000", help="sentences, whole paragraph")
    opts = ap.parse_args()
    window = distant.WINDOW
    print("| sentences | splitting | seconds |")
    print("|---:|---|---:|")
    for n in (int(x) for x in opts.whole.split(",") if x):
        s, got = seconds(n, 1 << 62)
        print(f"| {got:,} | whole paragraph (before) | {s:.1f} |", flush=True)
    for n in (int(x) for x in opts.sizes.split(",") if x):
        s, got = seconds(n, window)
        print(f"| {got:,} | windows of {window:,} characters | {s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
