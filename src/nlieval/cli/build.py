"""``nlieval build``: scientific NLI training data from a corpus of documents.

``build distant`` writes explicit-relation and neutral pairs (classes balanced);
``build implicit`` writes pseudo-labelled pairs with no linking phrase. Both write
``{name}.jsonl``, a task file ``{name}.yaml`` and ``{name}.counts.json`` under ``--out``.

Pseudo-labels come from ``--scores``, a jsonl of probabilities per candidate id
(``{"id": "paper7:3-4", "probs": [c, r, e, n]}``, or ``probs`` as a mapping from class
name to probability). Without ``--scores`` the command writes ``candidates.jsonl`` (the
pairs to score) and says how to go on. ``--classifier FOLDER`` scores them with a
classifier trained by nlieval (:func:`nlieval.sci.distant_build.load_classifier`):
a checkpoint folder, or a ``nlieval train`` output folder (its lowest seed is used).

The written task's pairs are both its train split and its test split, so the same YAML
goes to ``nlieval train --task`` (with another ``--test-task``, or ``--no-test``) and to
``nlieval run --task``.
"""

from __future__ import annotations

import argparse
import functools
import sys

from ..sci import (
    DistantConfig,
    ImplicitConfig,
    build_distant_task,
    build_implicit_task,
)
from .args import add_command, command_parser, settings_from_args


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``build distant`` and ``build implicit`` to the main subparsers.

    >>> parser = argparse.ArgumentParser(); add_commands(parser.add_subparsers())
    >>> parser.parse_args(["build", "distant", "--corpus", "a.txt", "--out", "o"]).seed
    0
    """
    build = command_parser(sub, "build")
    kinds = build.add_subparsers(dest="build_command", required=True)

    command = functools.partial(add_command, kinds)
    command(
        "distant",
        help="explicit pairs from linking phrases + neutral pairs",
        examples=(
            "nlieval build distant --corpus docs/examples/papers.jsonl --out runs/sci-data",
            "nlieval train --model minilm --task runs/sci-data/distant.yaml --no-test "
            "--out runs/stage1",
        ),
        handler=cmd_distant,
        settings=(DistantConfig,),
    )

    command(
        "implicit",
        help="pseudo-labelled pairs without linking phrases",
        examples=(
            "nlieval build implicit --corpus docs/examples/papers.jsonl "
            "--classifier runs/sci-clf --threshold 0.4 --out runs/sci-data",
            "nlieval build implicit --corpus docs/examples/papers.jsonl --scores scores.jsonl "
            "--out runs/sci-data",
        ),
        handler=cmd_implicit,
        settings=(ImplicitConfig,),
    )


def cmd_distant(args: argparse.Namespace) -> int:
    """Handler of ``build distant``."""
    result, path = build_distant_task(settings_from_args(DistantConfig, args))
    print(result.summary())
    print(f"wrote {len(result.pairs)} pairs; task file: {path}")
    return 0


_HOW_TO_SCORE = (
    "score them with your classifier, one line per candidate: "
    '{"id": ..., "probs": [contrasting, reasoning, entailment, neutral]}, '
    "and run again with --scores FILE"
)


def cmd_implicit(args: argparse.Namespace) -> int:
    """Handler of ``build implicit``."""
    cfg = settings_from_args(ImplicitConfig, args)
    got = build_implicit_task(cfg)
    result = got["result"]
    if result is None:
        where = got["candidates"]
        if got["no_backend"]:
            print(
                "nlieval: error: --classifier: the classifier backend cannot be imported "
                f"here (torch and transformers are needed). "
                f"Wrote {got['count']} candidates to {where}; {_HOW_TO_SCORE}"
            )
            return 2
        print(f"wrote {got['count']} unlabelled candidates to {where}; {_HOW_TO_SCORE}")
        return 0
    print(result.summary())
    print(f"wrote {len(result.pairs)} pairs; task file: {got['task']}")
    if not result.pairs:
        print(
            f"nlieval: warning: no candidate was kept (--threshold {cfg.threshold:g}, then "
            "the adjacency filter); a lower threshold or a better classifier keeps more",
            file=sys.stderr,
        )
    return 0
