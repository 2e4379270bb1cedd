"""The settings of LoRA adapters (``nlieval train --lora``), importable without torch:
the training configuration holds them; :mod:`nlieval.backends.lora_classifier` uses them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The text between premise and hypothesis of a decoder's pair input.
SEPARATOR = "\n"

#: The largest rank ``--lora`` takes before a model is loaded: above any model's hidden
#: size (a rank at or above it is no longer low-rank); usual ranks are 4 to 64. A rank
#: above the model's own hidden size is refused once the model is known.
MAX_RANK = 8192


@dataclass(frozen=True)
class LoraSettings:
    """Rank ``r``, scale numerator ``alpha`` and dropout of the adapters, and ``layers``:
    adapters in the top ``layers`` layers only (None: every layer). The layers below then
    need no backward pass, which makes a step of a deep model several times cheaper.

    >>> LoraSettings.parse("8,16")
    LoraSettings(r=8, alpha=16, dropout=0.05, layers=None)
    >>> LoraSettings.parse("100000000,16")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --lora rank 100000000 is above 8192, more than any model's hidden size: ...
    """

    r: int
    alpha: int
    dropout: float = 0.05
    layers: int | None = None

    def __post_init__(self) -> None:
        if self.layers is not None and self.layers < 1:
            raise ValueError(f"--lora-layers must be at least 1, got {self.layers}")
        if self.r < 1 or self.alpha <= 0 or not 0 <= self.dropout < 1:
            raise ValueError(
                f"--lora needs r >= 1, alpha > 0 and 0 <= dropout < 1, got {self.to_dict()}"
            )
        if self.r > MAX_RANK:
            raise ValueError(
                f"--lora rank {self.r} is above {MAX_RANK}, more than any model's hidden "
                "size: adapters are low-rank (usual ranks are 4 to 64)"
            )

    @classmethod
    def parse(cls, text: str) -> LoraSettings:
        """``R,ALPHA`` or ``R,ALPHA,DROPOUT`` (the ``--lora`` flag)."""
        parts = [p.strip() for p in str(text).split(",")]
        try:
            if len(parts) == 2:
                return cls(int(parts[0]), int(parts[1]))
            if len(parts) == 3:
                return cls(int(parts[0]), int(parts[1]), float(parts[2]))
        except ValueError as err:
            if "--lora" in str(err):
                raise
        raise ValueError(f"--lora takes R,ALPHA[,DROPOUT] (e.g. 8,16), got {text!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"r": self.r, "alpha": self.alpha, "dropout": self.dropout, "layers": self.layers}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LoraSettings:
        layers = d.get("layers")
        return cls(
            int(d["r"]),
            int(d["alpha"]),
            float(d.get("dropout", 0.05)),
            None if layers is None else int(layers),
        )
