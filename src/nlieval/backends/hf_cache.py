"""The key/value cache behind :class:`~nlieval.backends.hf.HFCausalLM`'s prefix cache:
buffers that hold a shared prefix once, each batch writing only its own suffix positions
(:func:`suffix_layer`, :func:`prefix_rows_cache`). transformers and torch are imported
on first use."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any


def cache_kwargs(module: Any, cache: Any) -> dict[str, Any]:
    """The keyword that hands ``cache`` to ``module``'s forward pass: ``cache`` where the
    installed transformers names it so (it deprecated ``past_key_values`` for it, with a
    FutureWarning on every call), else ``past_key_values`` (the releases before).

    >>> class New:
    ...     def forward(self, input_ids=None, cache=None): ...
    >>> list(cache_kwargs(New(), "c")), list(cache_kwargs(object(), "c"))
    (['cache'], ['past_key_values'])
    """
    forward = getattr(module, "forward", None)
    try:
        takes_cache = forward is not None and "cache" in inspect.signature(forward).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        takes_cache = False
    return {"cache": cache} if takes_cache else {"past_key_values": cache}


# The class subclasses a transformers type, so it is made on first use: importing this
# module must not import transformers (the CLI's start-up and `nlieval --help` stay fast).
_SUFFIX_LAYER: Any = None


def suffix_layer(keys: Any, values: Any, n_prefix: int, counts: dict[str, int]) -> Any:
    """A cache layer over preallocated ``[rows, heads, n_prefix + width, dim]`` buffers
    whose first ``n_prefix`` positions hold a shared prefix: each forward pass writes its
    keys/values at positions ``n_prefix...`` of its first rows (overwriting the previous
    batch's) and attends to the buffers up to its own end. Nothing is concatenated or
    copied, so the prefix is never copied again after the buffers were filled.

    Hand-written because transformers' caches either grow by concatenation (DynamicCache,
    a full copy per batch) or keep advancing their write position (StaticCache); none
    rewinds to a fixed prefix for each new batch.
    """
    global _SUFFIX_LAYER
    if _SUFFIX_LAYER is None:
        from transformers.cache_utils import DynamicLayer

        class SuffixLayer(DynamicLayer):
            def __init__(self, keys: Any, values: Any, n_prefix: int, counts: dict[str, int]):
                # Unannotated in transformers, and mypy's untyped_calls_exclude (see
                # pyproject.toml) does not follow a super() call: a typed name instead.
                init: Callable[[], None] = super().__init__
                init()
                self.keys, self.values = keys, values
                self.dtype, self.device = keys.dtype, keys.device
                self.n_prefix = n_prefix
                self.counts = counts
                self.is_initialized = True

            def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
                rows, end = key_states.shape[0], self.n_prefix + key_states.shape[-2]
                held: Any = (self.keys, self.values)
                keys, values = held[0][:rows, :, :end], held[1][:rows, :, :end]
                keys[:, :, self.n_prefix :].copy_(key_states)
                values[:, :, self.n_prefix :].copy_(value_states)
                self.counts["kv_suffix_bytes"] += 2 * key_states.numel() * key_states.element_size()
                return keys, values

            def get_seq_length(self) -> int:
                return self.n_prefix

            def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
                return self.n_prefix + query_length, 0

        _SUFFIX_LAYER = SuffixLayer
    return _SUFFIX_LAYER(keys, values, n_prefix, counts)


def prefix_rows_cache(
    state: Sequence[tuple[Any, Any]], n_pre: int, rows: int, width: int, counts: dict[str, int]
) -> Any:
    """A cache of ``rows`` rows holding a prefix of ``n_pre`` tokens (``state``: its
    keys and values per layer, batch of one) followed by room for ``width`` suffix
    positions. The prefix is copied into the rows here, once (counted in
    ``counts["kv_bytes_copied"]``); every batch then writes only its own suffix positions
    (:func:`suffix_layer`).

    >>> import torch
    >>> prefix = torch.ones(1, 2, 3, 4)  # one layer: 2 heads, 3 prefix tokens, dim 4
    >>> counts = {"kv_bytes_copied": 0, "kv_suffix_bytes": 0}
    >>> cache = prefix_rows_cache([(prefix, prefix)], 3, rows=2, width=5, counts=counts)
    >>> tuple(cache.layers[0].keys.shape), counts["kv_bytes_copied"]  # 2 x 2 x 24 floats
    ((2, 2, 8, 4), 384)
    """
    import torch
    from transformers.cache_utils import Cache

    layers = []
    for keys, values in state:
        bufs = []
        for t in (keys, values):
            buf = torch.empty(
                (rows, t.shape[1], n_pre + width, t.shape[3]), dtype=t.dtype, device=t.device
            )
            buf[:, :, :n_pre].copy_(t.expand(rows, -1, -1, -1))
            counts["kv_bytes_copied"] += rows * t[0].numel() * t.element_size()
            bufs.append(buf)
        layers.append(suffix_layer(bufs[0], bufs[1], n_pre, counts))
    return Cache(layers=layers)
