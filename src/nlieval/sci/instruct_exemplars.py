"""The rules that choose the k-shot exemplars of ``nlieval instruct``, one of three:

- per class (the default, :func:`~nlieval.sci.instruct_prompt.select_exemplars`):
  ``k / 4`` of each class, a seeded draw per run;
- per source (``--exemplar-sources FIELD``): as per class, and among the k at least one
  item of every value of the item field ``FIELD`` in the pool (the source dataset of a
  combined set such as MSciNLI+, or its domain), whenever the pool's classes can hold
  them all (a bipartite matching of sources to places decides);
- fixed ids (``--exemplar-ids``): exactly the named pool items, in the order named (a
  shot count k takes the first k of them).

A rule is an :class:`ExemplarRule`; :meth:`ExemplarRule.select` is deterministic for a
seed and a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..data import seeded_rng
from ..ground import read_small_text
from ..types import SCI4, Item, Label
from .instruct_prompt import class_walk, select_exemplars

#: The largest id file ``--exemplar-ids`` reads.
MAX_ID_FILE_BYTES = 1 << 20


def exemplar_ids(text: str) -> tuple[str, ...]:
    """The ids of ``--exemplar-ids``: a file of ids (one a line, blank lines and lines
    opening with ``#`` skipped) when ``text`` names a file, else ids joined by commas. A
    repeated id is a ``ValueError``.

    >>> exemplar_ids("dev_7, dev_2,dev_9")
    ('dev_7', 'dev_2', 'dev_9')
    """
    path = Path(text)
    if path.is_file():
        lines = read_small_text(path, MAX_ID_FILE_BYTES).splitlines()
        ids = tuple(s for s in (line.strip() for line in lines) if s and not s.startswith("#"))
        where = str(path)
    else:
        ids = tuple(s.strip() for s in text.split(",") if s.strip())
        where = "--exemplar-ids"
    if not ids:
        raise ValueError(f"{where}: no exemplar ids")
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"{where}: the id {i} is named twice")
        seen.add(i)
    return ids


@dataclass(frozen=True)
class ExemplarRule:
    """How a run's exemplars are chosen: ``sources``, the item field naming an item's
    source (per source), or ``ids`` (fixed ids); neither is per class.

    >>> pool = [Item(f"{lab.value[0]}{n}", "a", "b", lab, meta={"src": "xy"[n % 2]})
    ...         for lab in SCI4 for n in range(4)]
    >>> shots = ExemplarRule(sources="src").select(pool, 4, run=0)
    >>> sorted(it.meta["src"] for it in shots)[:1], sorted(it.meta["src"] for it in shots)[-1:]
    (['x'], ['y'])
    >>> [it.id for it in ExemplarRule(ids=("n3", "c0")).select(pool, 2, run=0)]
    ['n3', 'c0']
    """

    sources: str | None = None
    ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.sources is not None and self.ids:
            raise ValueError("--exemplar-ids names the exemplars: not with --exemplar-sources")

    @property
    def name(self) -> str:
        """``per class``, ``per source`` or ``fixed ids``."""
        return "fixed ids" if self.ids else "per source" if self.sources else "per class"

    @property
    def varies_by_run(self) -> bool:
        """False for fixed ids: every run would repeat the first one."""
        return not self.ids

    def check_shots(self, shots: Sequence[int]) -> None:
        """Refuse shot counts the rule cannot fill: a k that is no multiple of 4 (per
        class or per source), or a k beyond the fixed ids."""
        if self.ids:
            over = [k for k in shots if k > len(self.ids)]
            if over:
                raise ValueError(
                    f"--shots {','.join(map(str, over))}: --exemplar-ids names "
                    f"{len(self.ids)} exemplars (k takes the first k of them)"
                )
            return
        bad = [k for k in shots if k < 0 or k % len(SCI4)]
        if bad:
            raise ValueError(
                f"--shots takes multiples of 4 (one exemplar per class per four), got {bad}"
            )

    def check_pool(self, pool: Sequence[Item], where: str) -> None:
        """Every fixed id is a pool item, and every pool item has the source field: else
        one line naming the id or item and ``where`` (the pool)."""
        if self.ids:
            known = {it.id for it in pool}
            missing = [i for i in self.ids if i not in known]
            if missing:
                raise ValueError(
                    f"{where}: no exemplar with the id {missing[0]}"
                    + (f" (nor {', '.join(missing[1:4])}" if missing[1:] else "")
                    + (", ..." if missing[4:] else "")
                    + (")" if missing[1:] else "")
                    + " in the pool (an item of the evaluated split is never one)"
                )
        if self.sources is not None:
            for it in pool:
                if self._source(it) is None:
                    raise ValueError(
                        f"{where}: item {it.id} has no field {self.sources!r} "
                        "(--exemplar-sources names the item field of its source)"
                    )

    def select(self, pool: Sequence[Item], k: int, run: int, seed: int = 0) -> list[Item]:
        """The ``k`` exemplars of run ``run`` from ``pool`` under this rule."""
        if self.ids:
            self.check_shots([k])
            self.check_pool(pool, "the exemplar pool")
            by_id = {it.id: it for it in pool}
            return [by_id[i] for i in self.ids[:k]]
        if self.sources is None:
            return select_exemplars(pool, k, run, seed)
        self.check_shots([k])
        self.check_pool(pool, "the exemplar pool")
        return self._per_source(pool, k, run, seed)

    def _source(self, item: Item) -> str | None:
        value = item.meta.get(self.sources or "")
        return None if value is None or value == "" else str(value)

    def _per_source(self, pool: Sequence[Item], k: int, run: int, seed: int) -> list[Item]:
        """Each source, in sorted order, is given a class (:meth:`_owed`); each class then
        reads its run's walk (:func:`class_walk`) and takes an item when it is of a source
        still owed, or when a place is left beyond those owed. The k are shuffled as per
        class."""
        per_class = k // len(SCI4)
        if not per_class:
            return []
        sources = sorted({s for s in map(self._source, pool) if s is not None})
        if len(sources) > k:
            raise ValueError(
                f"k={k}: {len(sources)} sources in field {self.sources!r} "
                f"({', '.join(sources)}) need at least {len(sources)} exemplars"
            )
        owed = self._owed(pool, sources, k)
        chosen: list[Item] = []
        for lab in SCI4:
            left = list(owed[lab])
            taken: list[Item] = []
            for it in class_walk(pool, lab, per_class, run, seed):
                if len(taken) == per_class:
                    break
                own = self._source(it)
                if own in left:
                    left.remove(own)
                    taken.append(it)
                elif per_class - len(taken) > len(left):
                    taken.append(it)
            chosen += taken
        seeded_rng(seed, "order", run, k).shuffle(chosen)
        return chosen

    def _owed(self, pool: Sequence[Item], sources: list[str], k: int) -> dict[Label, list[str]]:
        """Which class owes which sources: the j-th source in sorted order goes to the
        first class, from class ``j mod 4`` on in class order (wrapping), that has a free
        place (``k / 4`` per class), an item of that source, and leaves the sources after
        it a place each (a maximum bipartite matching of those sources into the places
        left covers them all). So every pool whose sources can all be placed is served,
        and a source never takes the place another needs.

        >>> def item(i, lab, src): return Item(i, "p", "h", lab, meta={"s": src})
        >>> C, R, E, N = SCI4  # source q is only in contrasting: a gives its place up
        >>> pool = [item(lab.value[0], lab, "a") for lab in SCI4] + [item("q", C, "q")]
        >>> owed = ExemplarRule(sources="s")._owed(pool, ["a", "q"], 4)
        >>> {lab.value: s for lab, s in owed.items() if s}
        {'contrasting': ['q'], 'reasoning': ['a']}
        """
        per_class = k // len(SCI4)
        has = {(it.label, self._source(it)) for it in pool}
        owed: dict[Label, list[str]] = {lab: [] for lab in SCI4}
        served = _placed(sources, owed, has, per_class)
        if served < len(sources):
            narrow = [
                f"{source}: {', '.join(lab.value for lab in SCI4 if (lab, source) in has)}"
                for source in sources
                if sum((lab, source) in has for lab in SCI4) < len(SCI4)
            ]
            raise ValueError(
                f"k={k}: at most {served} of the {len(sources)} sources in field "
                f"{self.sources!r} can each have a place ({per_class} per class) in a class "
                f"with an item of it ({'; '.join(narrow)})"
            )
        for j, source in enumerate(sources):
            turn = [SCI4[(j + n) % len(SCI4)] for n in range(len(SCI4))]
            # The sources before this one left the rest a matching: some class fits.
            for lab in turn:
                if len(owed[lab]) < per_class and (lab, source) in has:
                    owed[lab].append(source)
                    if _placed(sources[j + 1 :], owed, has, per_class) == len(sources) - j - 1:
                        break
                    owed[lab].pop()
        return owed


def _placed(
    sources: Sequence[str],
    owed: dict[Label, list[str]],
    has: set[tuple[Label | None, str | None]],
    per_class: int,
) -> int:
    """How many of ``sources`` a maximum bipartite matching places: a source to a free
    place (of ``per_class`` per class, less those ``owed``) of a class with an item of it."""
    places = [lab for lab in SCI4 for _ in range(per_class - len(owed[lab]))]
    if not sources or not places:
        return 0
    edges = np.array([[(lab, s) in has for lab in places] for s in sources], dtype=np.int8)
    matched = maximum_bipartite_matching(csr_array(edges), perm_type="column")
    return int((matched >= 0).sum())
