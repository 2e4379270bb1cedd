"""Fingerprints of what a run's numbers depend on: the items as read, and any text.

A run folder keeps them at its start and compares them on every resume, so that an
edited data file, another ``--data-dir`` holding other files, or a changed template is
refused instead of mixed into one metrics row. They are of contents, never of paths: two
copies of the same file have one fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ..types import Item


def text_fingerprint(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text``.

    >>> text_fingerprint("Premise: {{ premise }}")
    'd7c10f65826becb0'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def items_fingerprint(items: Sequence[Item]) -> str:
    """A fingerprint of items as read: ids, texts, options, gold labels and extra fields,
    in order (so a reordered file is another file too).

    >>> a = Item("1", "A dog runs.", "It moves.", None)
    >>> b = Item("1", "A dog ran.", "It moves.", None)
    >>> items_fingerprint([a]) == items_fingerprint([Item("1", "A dog runs.", "It moves.", None)])
    True
    >>> items_fingerprint([a]) == items_fingerprint([b])
    False
    """
    digest = hashlib.sha256()
    for it in items:
        row = [
            it.id,
            it.premise,
            it.hypothesis,
            it.label.value if it.label else None,
            list(it.choices),
            dict(it.meta),
        ]
        digest.update(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]
