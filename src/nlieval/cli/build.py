"""``nlieval build``: scientific NLI training data from a corpus of documents.

``build distant`` writes explicit-relation and neutral pairs (classes balanced);
``build implicit`` writes pseudo-labelled pairs with no linking phrase. Both write
``{name}.jsonl``, a task file ``{name}.yaml`` and ``{name}.counts.json`` under ``--out``.

Pseudo-labels come from ``--scores``, a jsonl of probabilities per candidate id
(``{"id": "paper7:3-4", "probs": [c, r, e, n]}``, or ``probs`` as a mapping from class
name to probability). Without ``--scores`` the command writes ``candidates.jsonl`` (the
pairs to score) and says how to go on. ``--classifier FOLDER`` scores them with a
classifier trained by nlieval (:class:`nlieval.backends.classifier.EncoderClassifier`):
a checkpoint folder, or a ``nlieval train`` output folder (its lowest seed is used).

The written task's pairs are both its train split and its test split, so the same YAML
goes to ``nlieval train --task`` (with another ``--test-task``, or ``--no-test``) and to
``nlieval run --task``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data import DataError
from ..sci import distant
from ..types import SCI4, Label


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--corpus",
        nargs="+",
        required=True,
        metavar="FILE",
        help="documents: .jsonl (one a line) or plain text (one per file), .gz ok",
    )
    p.add_argument("--out", required=True, metavar="FOLDER", help="output folder")
    p.add_argument(
        "--text-field",
        default="text",
        help="jsonl field with the text, sentences or paragraphs [text]",
    )
    p.add_argument("--id-field", default="id", help="jsonl field with the document id [id]")
    p.add_argument("--seed", type=int, default=0, help="sampling and balancing seed [0]")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``build distant`` and ``build implicit`` to the main subparsers.

    >>> parser = argparse.ArgumentParser(); add_commands(parser.add_subparsers())
    >>> parser.parse_args(["build", "distant", "--corpus", "a.txt", "--out", "o"]).seed
    0
    """
    build = sub.add_parser("build", help="build scientific NLI training data from documents")
    kinds = build.add_subparsers(dest="build_command", required=True)

    p = kinds.add_parser("distant", help="explicit pairs from linking phrases + neutral pairs")
    _corpus_args(p)
    p.add_argument("--name", default="distant", help="output file stem [distant]")
    p.add_argument("--no-balance", action="store_true", help="keep all pairs of every class")
    p.set_defaults(handler=cmd_distant)

    p = kinds.add_parser("implicit", help="pseudo-labelled pairs without linking phrases")
    _corpus_args(p)
    p.add_argument("--name", default="implicit", help="output file stem [implicit]")
    p.add_argument("--scores", default=None, metavar="FILE", help="jsonl: id, probs")
    p.add_argument(
        "--classifier",
        default=None,
        metavar="FOLDER",
        help="score the candidates with this classifier: a checkpoint folder or a "
        "`nlieval train` output folder (its lowest seed)",
    )
    p.add_argument("--threshold", type=float, default=0.9, help="minimum confidence [0.9]")
    p.add_argument(
        "--nonadjacent-ratio",
        type=float,
        default=1.0,
        help="non-adjacent (neutral) candidates per adjacent candidate [1.0]",
    )
    p.add_argument("--balance", action="store_true", help="downsample to the smallest class")
    p.set_defaults(handler=cmd_implicit)


def cmd_distant(args: argparse.Namespace) -> int:
    """Handler of ``build distant``."""
    docs = distant.read_corpus(args.corpus, args.text_field, args.id_field)
    result = distant.build_distant(docs, seed=args.seed, balanced=not args.no_balance)
    path = distant.write_task(result, args.out, args.name, "distant supervision")
    print(result.summary())
    print(f"wrote {len(result.pairs)} pairs; task file: {path}")
    return 0


def _probs_of(row: Mapping[str, Any], path: Path, line: int) -> list[float]:
    raw = row.get("probs")
    if isinstance(raw, Mapping):
        try:
            by_label = {Label.parse(k): v for k, v in raw.items()}
            raw = [by_label[lab] for lab in SCI4]
        except (KeyError, ValueError):
            raise DataError(
                path, line, "probs", f"expected the classes {[lab.value for lab in SCI4]}"
            ) from None
    if not isinstance(raw, list) or not all(isinstance(x, int | float) for x in raw):
        raise DataError(path, line, "probs", "expected a list of 4 numbers or a mapping")
    return [float(x) for x in raw]


def read_scores(path: str | Path) -> dict[str, list[float]]:
    """Probabilities per candidate id from a scores jsonl."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    scores: dict[str, list[float]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(path, n, None, f"invalid JSON: {err.msg}") from None
            if not isinstance(row, dict) or "id" not in row:
                raise DataError(path, n, "id", "missing field")
            scores[str(row["id"])] = _probs_of(row, path, n)
    return scores


def _scored(
    cands: Sequence[distant.Pair], scores_path: str, threshold: float
) -> distant.BuildResult:
    scores = read_scores(scores_path)
    missing = [p.id for p in cands if p.id not in scores]
    if missing:
        raise DataError(
            scores_path,
            None,
            "id",
            f"no scores for {len(missing)} of {len(cands)} candidates (first: {missing[0]}); "
            "were they built from the same corpus and --seed?",
        )
    return distant.select_pseudo_labelled(cands, [scores[p.id] for p in cands], threshold)


def _load_classifier(folder: str) -> Any | None:
    """The trained classifier in ``folder`` (a checkpoint, or the lowest seed of a train
    output folder), or None when the classifier backend (torch, transformers) cannot be
    imported here."""
    try:
        from ..backends import EncoderClassifier, classifier_checkpoints
    except ImportError:
        return None
    found = classifier_checkpoints(folder)
    if not found:
        raise DataError(folder, None, None, "not a classifier folder saved by nlieval training")
    print(f"scoring the candidates with {found[0]}")
    return EncoderClassifier(found[0])


def _classified(
    cands: Sequence[distant.Pair], folder: str, threshold: float
) -> distant.BuildResult | None:
    backend = _load_classifier(folder)
    if backend is None:
        return None
    return distant.pseudo_label(cands, distant.classifier_fn(backend), threshold)


_HOW_TO_SCORE = (
    "score them with your classifier, one line per candidate: "
    '{"id": ..., "probs": [contrasting, reasoning, entailment, neutral]}, '
    "and run again with --scores FILE"
)


def cmd_implicit(args: argparse.Namespace) -> int:
    """Handler of ``build implicit``."""
    docs = distant.read_corpus(args.corpus, args.text_field, args.id_field)
    cands = distant.implicit_candidates(docs, args.seed, args.nonadjacent_ratio)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.scores is not None:
        result = _scored(cands, args.scores, args.threshold)
    elif args.classifier is not None:
        classified = _classified(cands, args.classifier, args.threshold)
        if classified is None:
            n = distant.write_pairs(cands, out / "candidates.jsonl")
            print(
                "nlieval: error: --classifier: the classifier backend cannot be imported "
                "here (torch and transformers are needed). "
                f"Wrote {n} candidates to {out / 'candidates.jsonl'}; {_HOW_TO_SCORE}"
            )
            return 2
        result = classified
    else:
        n = distant.write_pairs(cands, out / "candidates.jsonl")
        print(f"wrote {n} unlabelled candidates to {out / 'candidates.jsonl'}; {_HOW_TO_SCORE}")
        return 0
    if args.balance:
        result = result.balanced(args.seed)
    path = distant.write_task(result, out, args.name, "implicit relations, pseudo-labelled")
    print(result.summary())
    print(f"wrote {len(result.pairs)} pairs; task file: {path}")
    if not result.pairs:
        print(
            f"nlieval: warning: no candidate was kept (--threshold {args.threshold:g}, then "
            "the adjacency filter); a lower threshold or a better classifier keeps more",
            file=sys.stderr,
        )
    return 0
