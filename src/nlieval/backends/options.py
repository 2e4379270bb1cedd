"""The options of the transformers engine (a model run in process), whole: every engine
in process takes them as one object (:class:`~nlieval.backends.hf.HFCausalLM` and its kin
take them as their second argument), so each flag has one default, written here.

>>> HFOptions(device="cpu").device
'cpu'
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any

from ..ground import SettingError
from ..settings import setting
from .placement import parse_max_memory, pick_device


@dataclass(frozen=True)
class HFOptions:
    """How to run a model in process through transformers (torch).

    ``device_map`` (``auto``) spreads a model over several devices through accelerate and
    ``max_memory`` (``0=70GiB,1=70GiB,cpu=200GiB``) caps each; neither changes results.

    >>> HFOptions().dtype
    'auto'
    >>> HFOptions(max_memory="0=70GiB")
    Traceback (most recent call last):
    nlieval.ground.errors.SettingError: --max-memory needs --device-map (e.g. auto)
    """

    dtype: str = setting(
        "auto", help="weights' type: auto (fp32 on CPU, bf16 on GPU), float32, bfloat16"
    )
    device: str = setting("auto", help="cpu, cuda, cuda:1, mps (auto: a GPU when there is one)")
    revision: str | None = setting(None, help="hub revision of the model")
    prefix_cache: bool = setting(
        True,
        help="recompute the shared start of the prompts (the few-shot prefix) for every "
        "item (same results, slower)",
        names=("--no-prefix-cache",),
    )
    prefix_attention: str = setting(
        "cascade",
        help="how rows attend to a cached prefix: cascade (its keys/values held once and "
        "shared by every row) or rows (a copy in each row; architectures cascade does not "
        "cover use it anyway); same results",
        choices=("cascade", "rows"),
    )
    device_map: str | None = setting(
        None, help="auto: spread a model too large for one device over all GPUs (then CPU, disk)"
    )
    max_memory: str | None = setting(
        None,
        help="with --device-map: memory per device, e.g. 0=70GiB,1=70GiB,cpu=200GiB",
        metavar="DEV=SIZE,...",
    )

    def __post_init__(self) -> None:
        if self.max_memory is not None:
            if self.device_map is None:
                raise SettingError(
                    ("max_memory", "device_map"), "--max-memory needs --device-map (e.g. auto)"
                )
            parse_max_memory(self.max_memory)  # a bad spelling fails before any model loads

    def placement(self) -> dict[str, Any]:
        """``device_map`` and ``max_memory`` as ``from_pretrained`` takes them.

        >>> HFOptions(device_map="auto", max_memory="0=1GiB").placement()
        {'device_map': 'auto', 'max_memory': {0: '1GiB'}}
        """
        memory = parse_max_memory(self.max_memory) if self.max_memory else None
        return {"device_map": self.device_map, "max_memory": memory}

    def spread_kwargs(self) -> tuple[dict[str, Any], tempfile.TemporaryDirectory[str] | None]:
        """What ``from_pretrained`` takes to spread the model as ``device_map`` and
        ``max_memory`` say (nothing without ``device_map``: the caller moves the model to
        its one device), and the folder that layers beyond every cap are offloaded to
        (None when nothing caps): the one rule of every engine in process that loads
        weights, which keeps the folder as long as the model.

        >>> HFOptions().spread_kwargs()
        ({}, None)
        >>> kwargs, folder = HFOptions(device_map="auto", max_memory="0=1GiB").spread_kwargs()
        >>> sorted(kwargs), kwargs["max_memory"], folder is not None
        (['device_map', 'max_memory', 'offload_folder'], {0: '1GiB'}, True)
        """
        placed = self.placement()
        if placed["device_map"] is None:
            return {}, None
        kwargs: dict[str, Any] = {"device_map": placed["device_map"]}
        if placed["max_memory"] is None:
            return kwargs, None
        # Layers beyond every cap go to disk; their weights are memory-mapped from this
        # folder and loaded per forward pass.
        folder = tempfile.TemporaryDirectory(prefix="nlieval-offload-")
        kwargs.update(max_memory=dict(placed["max_memory"]), offload_folder=folder.name)
        return kwargs, folder

    def pick_device(self) -> str:
        """The device ``device`` names here (:func:`~nlieval.backends.placement.pick_device`:
        ``auto`` is a GPU when there is one, else the CPU), for a model placed by hand
        (``nlieval train``'s).

        >>> HFOptions(device="cpu").pick_device()
        'cpu'
        """
        return pick_device(self.device)
