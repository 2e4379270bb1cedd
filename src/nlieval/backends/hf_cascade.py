"""Shared-prefix ("cascade") attention for :class:`~nlieval.backends.hf.HFCausalLM`: the
keys and values of a few-shot prefix are held once (a batch of one) and every row of a
batch attends to them without a copy of its own and without expanding grouped key/value
heads; the attention within a row's own suffix is computed apart, and the two parts are
merged exactly through their log-sum-exp.

It plugs into transformers' attention-function registry (:data:`CASCADE`): a forward
pass of the decoder with ``nlieval_prefix=`` (the prefix's keys and values per layer) and
the model's attention implementation switched to :data:`CASCADE`
(:func:`cascade_attention_on`) runs every attention layer through
:func:`cascade_attention`. Whether an architecture can: :func:`cascade_unsupported`.

Hand-written because neither torch nor transformers attends one query batch to keys that
are shared by all rows *and* keys of each row's own, merging the two softmaxes
(``scaled_dot_product_attention`` returns no log-sum-exp; FlashInfer's cascade kernels
are CUDA-only and outside transformers). The prefix part, the large one, still runs in
torch's own fused kernel where it can (:func:`fused_attention`); only the merge is ours.
torch and transformers are imported on first use.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: The name of the attention function in transformers' registry.
CASCADE = "nlieval_cascade"
#: The keyword of the decoder's forward pass that carries the prefix's keys and values;
#: transformers hands unknown keywords down to every attention function.
PREFIX_KWARG = "nlieval_prefix"

#: Model types whose attention layers call the registry with the query, the keys and
#: values of the new positions (after rotary embeddings), ``scaling`` and, where the
#: layer has them, ``sliding_window`` and ``softcap``: all the function needs. Others
#: (ALiBi, attention sinks, chunked attention, models outside transformers) keep the
#: per-row prefix cache, and so do Gemma 3's image-text checkpoints (``gemma3``: their
#: decoder is wrapped with a vision tower, untested here).
CASCADE_MODEL_TYPES = frozenset(
    {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text"}
)

log = logging.getLogger(__name__)

_registered = threading.Lock()
_done = False


def cascade_unsupported(model: Any) -> str | None:
    """Why ``model`` cannot use cascade attention, or ``None`` when it can.

    >>> from types import SimpleNamespace as C
    >>> cascade_unsupported(C(config=C(model_type="bloom")))
    "model type 'bloom' is not among those cascade attention covers"
    """
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in CASCADE_MODEL_TYPES:
        return f"model type {kind!r} is not among those cascade attention covers"
    return None


def register_cascade() -> None:
    """Put :func:`cascade_attention` in transformers' attention registry (once)."""
    global _done
    with _registered:
        if _done:
            return
        from transformers import AttentionInterface

        AttentionInterface.register(CASCADE, cascade_attention)
        _done = True


@contextmanager
def cascade_attention_on(model: Any) -> Iterator[None]:
    """Run ``model``'s attention layers through :func:`cascade_attention` inside the
    block; the implementation it had is back afterwards, whatever happens."""
    register_cascade()
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = CASCADE
    try:
        yield
    finally:
        config._attn_implementation = before


def _windows(n_prefix: int, width: int, sliding_window: int | None, device: Any) -> tuple[Any, Any]:
    """Masks (True = not attended) of ``width`` suffix queries at absolute positions
    ``n_prefix + t`` over the prefix ``[width, n_prefix]`` and over the suffix
    ``[width, width]``: causal within the suffix, and transformers' sliding window (a
    query at ``q`` sees keys ``k`` with ``q - k < window``) on both parts. No prefix mask
    (``None``) where every query sees the whole prefix: no window, or one that reaches
    back past the first position (e.g. Mistral's 4,096), so the fused kernel can take it.

    >>> # window 4: the query at position 4 no longer sees position 0
    >>> _windows(3, 2, 5, "cpu")[0] is None, _windows(3, 2, 4, "cpu")[0].tolist()
    (True, [[False, False, False], [True, False, False]])
    """
    import torch

    t = torch.arange(width, device=device)
    j = torch.arange(n_prefix, device=device)
    suffix = t[None, :] > t[:, None]
    if sliding_window is None or sliding_window >= n_prefix + width:
        return None, suffix
    prefix = (n_prefix + t[:, None] - j[None, :]) >= sliding_window
    suffix = suffix | ((t[:, None] - t[None, :]) >= sliding_window)
    return prefix, suffix


def _part(
    q: Any, k: Any, v: Any, scaling: float, softcap: float | None, mask: Any
) -> tuple[Any, Any]:
    """Attention of queries ``q [b, n, d]`` to ``k, v [b, m, d]`` (the same ``b``:
    one batched matmul, nothing broadcast, so no key is copied), with ``mask`` (True =
    not attended, ``[width, m]``) applied to the queries taken ``width`` at a time: the
    normalised output in float32 and each query's log-sum-exp (``-inf`` where it sees
    nothing, with an output of zeros there)."""
    import torch

    # Scores in the model's dtype and the softmax in float32, as transformers' eager
    # attention does.
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * scaling
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if mask is not None:
        b, n, m = scores.shape
        width = mask.shape[0]
        scores = scores.view(b, n // width, width, m).masked_fill(mask, -math.inf).view(b, n, m)
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    weights = torch.exp(scores - safe)
    out = torch.matmul(weights.to(v.dtype), v).float()
    return out, lse


#: Per (device type, dtype): whether torch's fused kernel agreed with :func:`_part` on
#: its first use (absent: not tried yet). Its log-sum-exp output is not public API, so it
#: is checked once on the real inputs rather than trusted.
_fused_ok: dict[tuple[str, str], bool] = {}


def fused_attention(q: Any, k: Any, v: Any, scaling: float) -> tuple[Any, Any] | None:
    """Attention of ``q [h, n, d]`` to every key of ``k, v [h, m, d]`` (no mask, no
    soft-capping) through torch's fused flash-attention kernel, which also returns each
    query's log-sum-exp: as :func:`_part` returns them, or ``None`` where no such kernel
    runs (a CUDA tensor in float32, a head dimension over 256, an older torch) or where
    it disagreed with :func:`_part` on its first use (then with one warning).

    The scores are never materialised: on a CPU the fused kernel is about 5x faster than
    the matmuls of :func:`_part` for a 1,100-token prefix, and on a GPU it reads each
    prefix key once per block of queries instead of writing a float32 score matrix.
    ``scaled_dot_product_attention`` itself returns no log-sum-exp, hence the aten op.

    >>> import torch
    >>> q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 8)
    >>> out, lse = fused_attention(q, k, v, 0.3)
    >>> want, want_lse = _part(q, k, v, 0.3, None, None)
    >>> bool((out - want).abs().max() < 1e-5), bool((lse - want_lse).abs().max() < 1e-5)
    (True, True)
    """
    import torch

    key = (q.device.type, str(q.dtype))
    if _fused_ok.get(key) is False or q.shape[-1] > 256:
        return None
    aten = torch.ops.aten
    try:
        if q.device.type == "cpu":
            out, lse = aten._scaled_dot_product_flash_attention_for_cpu(
                q[None], k[None], v[None], 0.0, False, scale=scaling
            )
        elif q.device.type == "cuda" and q.dtype in (torch.float16, torch.bfloat16):
            res = aten._scaled_dot_product_flash_attention(
                q[None].contiguous(),
                k[None].contiguous(),
                v[None].contiguous(),
                0.0,
                False,
                False,
                scale=scaling,
            )
            out, lse = res[0], res[1]
        else:
            return None
    except (AttributeError, RuntimeError) as err:  # no such op, or it refuses the shapes
        _fused_ok[key] = False
        log.warning("shared-prefix attention: torch's fused kernel is not used (%s)", err)
        return None
    got = out[0].float(), lse[0][..., None].float()
    if key not in _fused_ok:
        # Queries attend independently here (no mask), so the first few of each head
        # check the kernel without building the whole score matrix (gigabytes at a GPU
        # batch of an 8B model).
        n = min(q.shape[1], 256)
        want = _part(q[:, :n], k, v, scaling, None, None)
        tol = 1e-4 if q.dtype == torch.float32 else 5e-2
        ok = bool(
            got[1].shape == (*q.shape[:2], 1)
            and (got[1][:, :n] - want[1]).abs().max() <= tol * (1 + want[1].abs().max())
            and (got[0][:, :n] - want[0]).abs().max() <= tol * (1 + want[0].abs().max())
        )
        _fused_ok[key] = ok
        if not ok:
            log.warning(
                "shared-prefix attention: torch's fused kernel disagrees with plain "
                "attention on %s %s; using plain attention",
                *key,
            )
            return None
    return got


def cascade_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    sliding_window: int | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Attention of a batch of suffixes (``query [rows, heads, width, dim]``, ``key`` and
    ``value [rows, kv_heads, width, dim]``, right-padded, at positions ``n_prefix...``)
    to the shared prefix (``kwargs[PREFIX_KWARG][module.layer_idx]``: keys and values
    ``[1, kv_heads, n_prefix, dim]``) and to themselves, causally.

    The queries of the ``heads / kv_heads`` heads that share a key/value head are
    grouped into one matrix, so the prefix's keys are read once per batch, never
    repeated per row or per head; the two softmaxes are merged through their
    log-sum-exp. Returns the output as ``[rows, width, heads, dim]`` (transformers'
    convention) and no weights. ``attention_mask`` is not used: right padding and
    causality need none (pads come after every real token of their row).
    """
    del attention_mask, dropout  # inference only; see the docstring for the mask
    import torch

    prefixes: Sequence[tuple[Any, Any]] = kwargs[PREFIX_KWARG]
    p_keys, p_values = prefixes[module.layer_idx]
    rows, heads, width, dim = query.shape
    kv_heads, n_prefix = p_keys.shape[1], p_keys.shape[2]
    group = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    pre_mask, suf_mask = _windows(n_prefix, width, sliding_window, query.device)
    # Heads h * group ... (h + 1) * group - 1 share key/value head h (transformers'
    # repeat_kv), so [rows, kv_heads, group * width, dim] groups them.
    q = query.reshape(rows * kv_heads, group * width, dim)
    # The prefix part: every row's queries of a key/value head in one matrix,
    # [kv_heads, rows * group * width, dim] against [kv_heads, n_prefix, dim].
    q_all = q.view(rows, kv_heads, group * width, dim).transpose(0, 1)
    q_all = q_all.reshape(kv_heads, rows * group * width, dim)
    fused = None
    if pre_mask is None and softcap is None:
        fused = fused_attention(q_all, p_keys[0], p_values[0], scale)
    out_p, lse_p = fused or _part(q_all, p_keys[0], p_values[0], scale, softcap, pre_mask)
    out_p = out_p.view(kv_heads, rows, group * width, dim).transpose(0, 1)
    lse_p = lse_p.view(kv_heads, rows, group * width, 1).transpose(0, 1)
    # The suffix part: each row's queries of a key/value head against that row's keys.
    out_s, lse_s = _part(
        q,
        key.reshape(rows * kv_heads, width, dim),
        value.reshape(rows * kv_heads, width, dim),
        scale,
        softcap,
        suf_mask,
    )
    out_s = out_s.view(rows, kv_heads, group * width, dim)
    lse_s = lse_s.view(rows, kv_heads, group * width, 1)
    # Every query sees at least itself, so the merged log-sum-exp is finite.
    lse = torch.logaddexp(lse_p, lse_s)
    out = out_p * torch.exp(lse_p - lse) + out_s * torch.exp(lse_s - lse)
    out = out.to(query.dtype).reshape(rows, heads, width, dim).transpose(1, 2).contiguous()
    return out, None
