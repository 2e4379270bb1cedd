"""How many rows a forward pass may take: the free memory of a device, the peak bytes of
one row, and the batch size that fits (results never depend on it). torch is imported
inside :func:`free_memory` only."""

from __future__ import annotations

import os
from typing import Any


def free_memory(device: Any) -> int:
    """Bytes free for new tensors: CUDA's own count on a GPU, else the system's
    ``MemAvailable`` (what the kernel could hand out without swapping)."""
    import torch

    if getattr(device, "type", str(device)) == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def row_bytes(
    config: Any, length: int, context: int, dtype_bytes: int, shared_prefix: bool = False
) -> int:
    """Peak activation bytes of one batch row of ``length`` new tokens attending to
    ``context`` positions (cached prefix included), inference only.

    Counted: the residual stream and attention output (a few hidden-size tensors), the
    MLP's intermediate pair, the attention scores (materialised by the eager and the CPU
    kernels, and by shared-prefix attention, twice: the scores and their exponentials),
    the row's copy of the key/value cache (with ``shared_prefix``, of its own positions
    only: the prefix is held once, outside the rows), and the float32 log-softmax over
    the vocabulary at the few positions read (bounded by 8 here).

    >>> from types import SimpleNamespace as C
    >>> cfg = C(hidden_size=64, intermediate_size=256, num_attention_heads=4,
    ...         num_key_value_heads=2, num_hidden_layers=2, vocab_size=1000)
    >>> row_bytes(cfg, 10, 10, 4) > 0
    True
    """
    hidden = getattr(config, "hidden_size", 4096)
    inter = getattr(config, "intermediate_size", 4 * hidden)
    heads = getattr(config, "num_attention_heads", 32)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    layers = getattr(config, "num_hidden_layers", 32)
    vocab = getattr(config, "vocab_size", 32000)
    act = length * (4 * hidden + 2 * inter) * dtype_bytes
    scores = heads * length * context * 4 * (2 if shared_prefix else 1)
    kv = layers * 2 * kv_heads * head_dim * (length if shared_prefix else context) * dtype_bytes
    logits = min(length, 8) * vocab * 4 * 2
    return act + scores + kv + logits


#: On a CPU the matmuls are already large at 4 rows: with no per-batch copy of the cached
#: prefix, 4 rows were the fastest fixed size at k = 10 (SNLI and ANLI R3, SmolLM2; see
#: "Batch size on a CPU" in benchmarks/README.md), and larger batches only add padding.
CPU_MAX_BATCH = 4
GPU_MAX_BATCH = 256


def rows_in_memory(
    model: Any,
    device: Any,
    max_len: int,
    context: int | None,
    free_bytes: int,
    *,
    shared_prefix: bool = False,
) -> int:
    """Rows per forward pass that fit in half of ``free_bytes``; results never depend on
    it (padding and the cache are exact), only speed and peak memory do.

    ``max_len`` is the longest row's new tokens, ``context`` the positions it attends to
    (``max_len`` plus a cached prefix, held once with ``shared_prefix``). Capped at
    :data:`CPU_MAX_BATCH` on a CPU and :data:`GPU_MAX_BATCH` on a GPU.

    >>> import torch
    >>> from types import SimpleNamespace as C
    >>> model = torch.nn.Linear(2, 2)  # float32 parameters: 4 bytes per value
    >>> model.config = C(hidden_size=64, intermediate_size=256, num_attention_heads=4,
    ...                  num_key_value_heads=2, num_hidden_layers=2, vocab_size=1000)
    >>> row = row_bytes(model.config, 10, 10, 4)
    >>> [rows_in_memory(model, "cpu", 10, None, free) for free in (0, 2 * 3 * row, 10**12)]
    [1, 3, 4]
    >>> rows_in_memory(model, torch.device("cuda"), 10, None, 10**12) == GPU_MAX_BATCH
    True
    """
    dtype_bytes = next(model.parameters()).element_size()
    per_row = row_bytes(model.config, max_len, context or max_len, dtype_bytes, shared_prefix)
    on_gpu = getattr(device, "type", str(device)) == "cuda"
    cap = GPU_MAX_BATCH if on_gpu else CPU_MAX_BATCH
    return int(max(1, min(cap, (free_bytes // 2) // max(per_row, 1))))
