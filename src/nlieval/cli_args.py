"""Argument types shared by every ``nlieval`` subcommand."""

from __future__ import annotations

import argparse


def csv_list(text: str) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")``.

    >>> csv_list("snli, hans")
    ('snli', 'hans')
    """
    return tuple(x.strip() for x in text.split(",") if x.strip())


def int_list(text: str) -> tuple[int, ...]:
    """``"0,1,5"`` -> ``(0, 1, 5)``.

    >>> int_list("0,5")
    (0, 5)
    """
    try:
        return tuple(int(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def seeds(text: str) -> tuple[int, ...]:
    """A count (``"3"`` = seeds 0, 1, 2) or a list (``"1,5,7"``; ``"7,"`` is seed 7 alone).

    >>> seeds("3"), seeds("7,")
    ((0, 1, 2), (7,))
    """
    if "," in text:
        return int_list(text)
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(
            f"--seeds takes a positive count or a comma-separated list, got {text!r}"
        )
    return tuple(range(count))
