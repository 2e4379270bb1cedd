"""The ``instruct`` command: prompted chat models on scientific NLI.

:func:`add_commands` adds it to the main parser's subcommands; its subparser carries
its handler as ``handler`` (a function of the parsed arguments returning an exit code).
Models and heavy libraries are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ..ground import render
from ..runs import RunError, instruct_table, run_timing
from ..sci import InstructConfig, instruct_backend, run_instruct
from .args import add_command, settings_from_args


def cmd_instruct(args: argparse.Namespace) -> int:
    """Run (or resume) a prompted instruct model; print the table, return 0."""

    config = settings_from_args(InstructConfig, args)
    model = config.resolve()
    made: list[Any] = []

    def load(_: str | None) -> Any:
        # Each backend made, for the server faults it tried again.
        made.append(instruct_backend(model))
        return made[-1]

    try:
        results = run_instruct(
            config,
            args.out,
            dataclasses.replace(model, load_with=load),
            overwrite=args.overwrite,
            progress=args.progress,
        )
    except RunError:
        raise
    except RuntimeError as err:  # a backend that failed for good (server down, ...)
        faults = _faults(made)
        raise RunError(
            f"{err}; the answers received so far are saved in {args.out}: "
            "run the same command again to resume"
            + (f" (before it, server faults tried again: {faults})" if faults else "")
        ) from err
    finally:
        # The backends are this command's (run_instruct closes only those it made): a
        # server's client holds connections and the thread of its requests.
        for backend in made:
            close = getattr(backend, "close", None)
            if callable(close):
                close()
    faults = _faults(made)
    if faults:
        # The run went on, but the user should know that the server misbehaved.
        print(f"WARNING server faults tried again: {faults}", file=sys.stderr)
    print(render(instruct_table(results.metrics, run_timing(results)), "md"))
    print(f"\nrecords, results.json and summary.md in {args.out}")
    return 0


def _faults(backends: list[Any]) -> str | None:
    # Server faults that were tried again (not JSON, HTTP 5xx, timeouts), in one phrase.
    faults: dict[str, int] = {}
    for b in backends:
        for kind, n in (getattr(b, "faults", None) or {}).items():
            faults[kind] = faults.get(kind, 0) + n
    if not faults:
        return None
    detail = ", ".join(f"{n} {kind}" for kind, n in sorted(faults.items()))
    return f"{sum(faults.values())} ({detail})"


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``instruct`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["instruct", "--out", "runs/i", "--shots", "0,4"])
    >>> args.model, args.tasks, args.shots, args.runs, args.split, args.handler.__name__
    ('smollm2-135m', ('scinli',), (0, 4), (0, 1, 2), 'test', 'cmd_instruct')
    """

    add_command(
        sub,
        "instruct",
        description="Prompted instruct models on four-class scientific NLI (METHODS.md 4): "
        "zero-shot and k-shot with k/4 exemplars per class, greedy decoding, several runs "
        "with different exemplar sets (zero-shot is run once: the runs would repeat it). "
        "Answers that name no class are kept, counted and scored wrong.",
        handler=cmd_instruct,
    )
