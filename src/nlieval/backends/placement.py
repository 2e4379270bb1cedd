"""Where a model's layers go: ``--device-map`` and ``--max-memory`` for one process on
several devices (accelerate's big-model inference, through transformers).

A 70B model in bf16 fits on no single GPU; ``device_map="auto"`` spreads its layers over
every visible GPU (then CPU RAM, then disk), and ``max_memory`` caps what each device
takes. Results do not depend on the placement: each layer runs the same arithmetic on
whichever device holds it.
"""

from __future__ import annotations

import re
from typing import Any

from ..ground import SettingError
from .weights import ModelError, pick_dtype


class PlacementError(SettingError, ModelError):
    """A ``--max-memory`` that says no placement: a model that cannot be loaded as asked
    (a :class:`ModelError`), and a setting's value refused (said by its flag or key)."""


#: A size as accelerate reads it: digits, an optional unit (``GiB``, ``GB``, ``MiB``...).
_SIZE = re.compile(r"^\d+(\.\d+)?\s*([KMGT]i?B)?$", re.IGNORECASE)


def parse_max_memory(text: str) -> dict[int | str, str]:
    """``"0=70GiB,1=70GiB,cpu=200GiB"`` -> ``{0: "70GiB", 1: "70GiB", "cpu": "200GiB"}``,
    the ``max_memory`` of ``from_pretrained``: GPU indices as ints, ``cpu``/``disk`` named.

    >>> parse_max_memory("0=70GiB, cpu=120GB")
    {0: '70GiB', 'cpu': '120GB'}
    >>> parse_max_memory("gpu0=1GiB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlieval...PlacementError: --max-memory: bad device 'gpu0' (a GPU index, cpu or disk)
    """
    out: dict[int | str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        device, sep, size = (s.strip() for s in part.partition("="))
        if not sep or not _SIZE.match(size):
            raise PlacementError(
                "max_memory", f"--max-memory: expected DEVICE=SIZE (e.g. 0=70GiB), got {part!r}"
            )
        if device.isdigit():
            out[int(device)] = size
        elif device in ("cpu", "disk"):
            out[device] = size
        else:
            raise PlacementError(
                "max_memory", f"--max-memory: bad device {device!r} (a GPU index, cpu or disk)"
            )
    if not out:
        raise PlacementError("max_memory", "--max-memory: empty")
    return out


def pick_device(device: str = "auto") -> str:
    """The device of a model in process: ``auto`` is a GPU when there is one, else the
    CPU; any other name is kept (the one meaning of ``--device auto`` for every engine).

    >>> pick_device("cpu")
    'cpu'
    """
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_placement(device: str, dtype: str) -> tuple[str, Any]:
    """The device a ``--device`` value names (:func:`pick_device`) and the torch dtype
    a ``--dtype`` value means on it (:func:`~nlieval.backends.weights.pick_dtype`).

    >>> device, dtype = pick_placement("cpu", "auto")
    >>> device, str(dtype)
    ('cpu', 'torch.float32')
    """
    device = pick_device(device)
    return device, pick_dtype(dtype, device)


def input_device(model: Any) -> Any:
    """The device a model takes its inputs on: for a model spread by ``device_map``,
    accelerate's main device (the first of its map that is no CPU or disk; the CPU when
    there is none), where its hooks expect them, since a layer offloaded to the CPU or
    disk keeps its weights on the ``meta`` device while a GPU runs it; else the device
    of its weights.

    >>> import torch
    >>> input_device(torch.nn.Linear(2, 2))
    device(type='cpu')
    >>> class Spread(torch.nn.Linear):
    ...     hf_device_map = {"embed": "cpu", "layers.0": 1, "layers.1": "disk"}
    >>> input_device(Spread(2, 2))
    device(type='cuda', index=1)
    """
    import torch

    placed = getattr(model, "hf_device_map", None)
    if not placed:
        return next(model.parameters()).device
    devices = [d for d in placed.values() if d not in ("cpu", "disk")]
    if not devices:
        return torch.device("cpu")
    return torch.device(f"cuda:{devices[0]}" if isinstance(devices[0], int) else devices[0])
