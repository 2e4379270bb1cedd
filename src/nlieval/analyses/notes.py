"""The notes under a table that every table of the analyses words the same way."""

from __future__ import annotations

from collections.abc import Iterable


def seeds_note(counts: Iterable[int | None]) -> tuple[str | None, bool]:
    """The note under a table that says how many seeds are behind each ±, from the seed
    counts of the cells that show one (None: not known), and whether each such cell must
    name its own count (the counts differ). Every table with a ± says it this way.

    >>> seeds_note([3, 3])
    ('± sample standard deviation over 3 seeds', False)
    >>> seeds_note([2, 3])
    ('± sample standard deviation over the seeds each cell names', True)
    >>> seeds_note([])
    (None, False)
    """
    found = set(counts)
    if not found:
        return None, False
    if len(found) == 1 and None not in found:
        return f"± sample standard deviation over {found.pop()} seeds", False
    return "± sample standard deviation over the seeds each cell names", True
