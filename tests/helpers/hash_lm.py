"""A scoring backend without a model, for tests of the run machinery: log-likelihoods
from a checksum of the text (deterministic across processes, unlike ``hash``)."""

from __future__ import annotations

import zlib
from typing import Any


class HashLM:
    """Log-likelihoods from a checksum of the context and option: no model. A ``salt``
    makes another "model" (other scores for the same prompts)."""

    name = "hash"

    def __init__(self, salt: str = "") -> None:
        self.salt = salt

    def loglikelihood(self, requests: Any, progress: Any = None) -> list[list[float]]:
        out = [
            [-(zlib.crc32((self.salt + r.context + c).encode()) % 97) / 10 - 0.1
             for c in r.continuations]
            for r in requests
        ]  # fmt: skip
        if progress:
            progress(len(requests))
        return out
