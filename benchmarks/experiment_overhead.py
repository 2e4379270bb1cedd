"""The experiment driver's own cost against its cells' model time.

Given an experiment file (with overrides) and a folder it has already run into, times
what the driver adds around the cells: reading the file and planning the cells (with
the estimates, which read each task's data, as ``plan`` shows them), a second ``run``
that finds every cell done (planning without counting estimates, the outcome bookkeeping
and the whole report), and the report alone; and reads
each cell's model time from its ``timing.json`` (the seconds the command spent scoring).

    python benchmarks/experiment_overhead.py experiments/lost-in-inference.yaml runs/lii \\
        --set models=smollm2-135m --set limit=5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from nlieval.experiments import plan_cells, read_experiment, run_experiment


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("out")
    p.add_argument("--set", action="append", default=[])
    args = p.parse_args()
    t0 = time.perf_counter()
    exp = read_experiment(args.file, args.set)
    t1 = time.perf_counter()
    cells = plan_cells(exp)
    t2 = time.perf_counter()
    # The estimates are cached per process: a second call that counted them would pay
    # for them as a new process does (it counts none: the plan saved them).
    from nlieval.experiments.plan import clear_estimates

    clear_estimates()
    summary = run_experiment(exp, args.out)
    t3 = time.perf_counter()
    assert all(o.attempts == 0 for o in summary.outcomes), "a cell was not done: run it first"
    from nlieval.experiments.report import write_report

    write_report(exp, cells, Path(args.out), {c.name for c in cells})
    t4 = time.perf_counter()
    model = 0.0
    for c in cells:
        timing = json.loads((Path(args.out) / "cells" / c.name / "timing.json").read_text())
        # One entry per step (task, k, seed): the seconds spent scoring its items.
        model += sum(float(step["seconds"]) for step in timing.values())
    print(f"cells: {len(cells)}")
    print(f"read the file: {t1 - t0:.2f} s; plan with estimates: {t2 - t1:.2f} s")
    print(f"second run (all done: plan, bookkeeping, report): {t3 - t2:.2f} s")
    print(f"report alone: {t4 - t3:.2f} s")
    print(f"cells' model time (timing.json): {model:.1f} s")


if __name__ == "__main__":
    main()
