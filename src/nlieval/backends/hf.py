"""Causal language models through Hugging Face transformers (the default engine)."""

from __future__ import annotations

import copy
import inspect
import logging
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import Progress, ScoreRequest
from .weights import ModelError, ModelSource, local_hf_folder, resolve_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Row:
    """One forward pass input and the continuations read from its last positions."""

    request: int
    ids: tuple[int, ...]
    targets: tuple[tuple[int, tuple[int, ...]], ...]  # (option index, continuation ids)
    n_prefix: int = 0  # leading ids that lie wholly inside the request's shared prefix


class HFCausalLM:
    """A causal LM scored by option log-likelihood.

    With ``prefix_cache`` (default) the key/value cache of a few-shot prefix shared by
    many requests is computed once and every item is scored on top of it.

    ``model`` is an alias (``smollm2-135m``), a local folder, a ``.gguf`` file or a hub
    id. Results do not depend on ``batch_size``.

    >>> lm = HFCausalLM("path/to/tiny-model")                       # doctest: +SKIP
    >>> lm.loglikelihood([ScoreRequest("Answer:", (" A", " B"))])    # doctest: +SKIP
    [[-2.31, -1.87]]
    """

    def __init__(
        self,
        model: str | ModelSource,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        batch_size: int | str = "auto",
        device_map: str | None = None,
        trust_remote_code: bool = False,
        prefix_cache: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        source = model if isinstance(model, ModelSource) else resolve_model(model, revision)
        self.name = source.name
        self.source = local_hf_folder(source)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device if device_map is None else "cpu")
        self.dtype = _pick_dtype(dtype, device)
        kwargs: dict[str, Any] = {"dtype": self.dtype, "trust_remote_code": trust_remote_code}
        if self.source.revision:
            kwargs["revision"] = self.source.revision
        if device_map is not None:
            kwargs["device_map"] = device_map
        try:
            self.tok = AutoTokenizer.from_pretrained(
                self.source.path,
                revision=self.source.revision,
                trust_remote_code=trust_remote_code,
            )
            model_obj: Any = AutoModelForCausalLM.from_pretrained(self.source.path, **kwargs)
        except OSError as err:
            raise ModelError(
                f"cannot load model {self.name!r} from {self.source.path}: {err}"
            ) from err
        self.model: Any = model_obj
        if device_map is None:
            self.model.to(self.device)
        else:
            self.device = next(self.model.parameters()).device
        self.model.eval()
        self._fast = bool(getattr(self.tok, "is_fast", False))
        self._special = set(self.tok.all_special_ids)
        pad = self.tok.pad_token_id
        self.pad_id = pad if pad is not None else (self.tok.eos_token_id or 0)
        params = inspect.signature(self.model.forward).parameters
        self._keep_arg = "logits_to_keep" if "logits_to_keep" in params else None
        self.batch_size = batch_size
        self.prefix_cache = prefix_cache
        self._cached: tuple[tuple[int, ...], Any] | None = None
        #: Tokens through the model body: ``tokens`` real ones, ``padded`` with the pads
        #: (what the matmuls really compute). Read by the benchmarks; never affects results.
        self.counts = {"tokens": 0, "padded": 0, "forward_calls": 0}
        self._decoder = getattr(self.model, "model", None) or self.model.get_decoder()

    MIN_PREFIX = 8  # shorter shared prefixes are not worth a cache

    # -- tokenization -------------------------------------------------------------
    def split(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Token ids of context and continuation, tokenized together then split.

        Tokenizing the whole text keeps any merge across the boundary: a token that
        straddles it belongs to the continuation, so the score covers every character of
        the continuation and the context never ends in a token the model would not see.
        """
        ctx, cont, _ = self._split(context, continuation, 0)
        return ctx, cont

    def _split(
        self, context: str, continuation: str, prefix_len: int
    ) -> tuple[list[int], list[int], int]:
        # Also counts the leading tokens that end inside context[:prefix_len]: exactly the
        # prefix tokens as the model sees them in this text, so a token merged across the
        # prefix boundary is never taken from a cache.
        whole = context + continuation
        n_prefix = 0
        if self._fast:
            enc = self.tok(whole, return_offsets_mapping=True)
            ids: list[int] = list(enc["input_ids"])
            offsets = enc["offset_mapping"]
            n = len(context)
            cut = next(
                (
                    i
                    for i, (s, e) in enumerate(offsets)
                    if e > n and not (s == e and ids[i] in self._special)
                ),
                len(ids),
            )
            cont = ids[cut:]
            # Some tokenizers append EOS; it is not part of the continuation.
            while cont and cont[-1] in self._special and offsets[cut + len(cont) - 1][1] <= n:
                cont.pop()
            ctx = ids[:cut]
            if prefix_len > 0:
                n_prefix = next((i for i, (_, e) in enumerate(offsets) if e > prefix_len), len(ids))
        else:
            ids = list(self.tok(whole)["input_ids"])
            n_ctx = len(self.tok(context)["input_ids"])
            ctx, cont = ids[:n_ctx], ids[n_ctx:]
            if prefix_len > 0:
                pre = list(self.tok(context[:prefix_len])["input_ids"])
                # Without offsets, trust the prefix only if it tokenizes identically, minus
                # its last token (which could merge with what follows).
                if ids[: len(pre) - 1] == pre[:-1]:
                    n_prefix = len(pre) - 1
        if not ctx:
            bos = (
                self.tok.bos_token_id
                if self.tok.bos_token_id is not None
                else self.tok.eos_token_id
            )
            if bos is None:
                raise ValueError(
                    "empty context and the tokenizer has no BOS/EOS token to condition on"
                )
            ctx = [bos]
        if not cont:
            raise ValueError(f"continuation {continuation!r} produced no tokens")
        return ctx, cont, min(n_prefix, len(ctx) - 1)

    def _rows(self, requests: Sequence[ScoreRequest]) -> list[_Row]:
        rows: list[_Row] = []
        for r, req in enumerate(requests):
            plen = req.prefix_len if self.prefix_cache else 0
            parts = [self._split(req.context, c, plen) for c in req.continuations]
            same_ctx = all(p[0] == parts[0][0] for p in parts)
            if same_ctx and all(len(p[1]) == 1 for p in parts):
                # Every option is one token after the same context: one forward pass
                # gives all of them from the last position.
                targets = tuple((j, tuple(cont)) for j, (_, cont, _) in enumerate(parts))
                rows.append(_Row(r, tuple(parts[0][0]), targets, parts[0][2]))
            else:
                for j, (ctx, cont, npre) in enumerate(parts):
                    rows.append(_Row(r, tuple(ctx + cont[:-1]), ((j, tuple(cont)),), npre))
        return rows

    # -- scoring ------------------------------------------------------------------
    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        """Summed log-probability of every continuation of every request."""
        out = [[float("nan")] * len(req.continuations) for req in requests]
        rows = self._rows(requests)
        remaining = Counter(row.request for row in rows)
        # Rows that share a prefix of at least MIN_PREFIX tokens are scored on top of its
        # key/value cache; the rest in plain left-padded batches.
        groups: dict[tuple[int, ...], list[_Row]] = {}
        plain: list[_Row] = []
        for row in rows:
            if row.n_prefix >= self.MIN_PREFIX:
                groups.setdefault(row.ids[: row.n_prefix], []).append(row)
            else:
                plain.append(row)
        work: list[tuple[tuple[int, ...] | None, list[_Row]]] = [(None, plain)]
        work += list(groups.items())
        for prefix, group in work:
            # Longest first: similar lengths share a batch (less padding), and a too-large
            # batch fails at once rather than at the end.
            group = sorted(group, key=lambda r: -len(r.ids))
            if not group:
                continue
            longest = len(group[0].ids)
            bs = self._batch_size(longest - len(prefix or ()), longest)
            for start in range(0, len(group), bs):
                batch = group[start : start + bs]
                scores = (
                    self._forward(batch) if prefix is None else self._forward_cached(prefix, batch)
                )
                for row, row_scores in zip(batch, scores, strict=True):
                    for (j, _), value in zip(row.targets, row_scores, strict=True):
                        out[row.request][j] = value
                    remaining[row.request] -= 1
                    if remaining[row.request] == 0 and progress is not None:
                        progress(1)
        return out

    def _prefix_state(self, prefix: tuple[int, ...]) -> Any:
        """The key/value cache of ``prefix`` (batch of one), kept for the next call too."""
        import torch
        from transformers import DynamicCache

        if self._cached is not None and self._cached[0] == prefix:
            return self._cached[1]
        cache = DynamicCache(config=self.model.config)
        self._count(len(prefix), len(prefix))
        with torch.inference_mode():
            self._decoder(
                input_ids=torch.tensor([prefix], device=self.device),
                past_key_values=cache,
                use_cache=True,
            )
        self._cached = (prefix, cache)
        return cache

    def _forward_cached(self, prefix: tuple[int, ...], batch: Sequence[_Row]) -> list[list[float]]:
        import torch

        n_pre = len(prefix)
        cache = copy.deepcopy(self._prefix_state(prefix))
        cache.batch_repeat_interleave(len(batch))
        width = max(len(r.ids) - n_pre for r in batch)
        # Right padding: every suffix starts right after the shared prefix (same positions
        # for all rows), and causal attention keeps real tokens from seeing the pads.
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        for b, r in enumerate(batch):
            ids[b, : len(r.ids) - n_pre] = torch.tensor(r.ids[n_pre:])
        self._count(sum(len(r.ids) - n_pre for r in batch), ids.numel())
        with torch.inference_mode():
            hidden = self._decoder(
                input_ids=ids.to(self.device), past_key_values=cache, use_cache=True
            ).last_hidden_state
            # The output layer only where a log-probability is read, once per position
            # (the options of a row often share their single position).
            where: dict[tuple[int, int], int] = {}
            for b, r in enumerate(batch):
                for _, cont in r.targets:
                    for t in range(len(cont)):
                        where.setdefault((b, len(r.ids) - n_pre - len(cont) + t), len(where))
            rows_idx = torch.tensor([w[0] for w in where], device=hidden.device)
            pos_idx = torch.tensor([w[1] for w in where], device=hidden.device)
            logprobs = torch.log_softmax(self._head(hidden[rows_idx, pos_idx]), dim=-1).cpu()
        result: list[list[float]] = []
        for b, r in enumerate(batch):
            end = len(r.ids) - n_pre
            result.append(
                [
                    sum(
                        float(logprobs[where[(b, end - len(cont) + t)], tok])
                        for t, tok in enumerate(cont)
                    )
                    for _, cont in r.targets
                ]
            )
        return result

    def _count(self, tokens: int, padded: int) -> None:
        self.counts["tokens"] += tokens
        self.counts["padded"] += padded
        self.counts["forward_calls"] += 1

    def _head(self, hidden: Any) -> Any:
        import torch

        logits = self.model.get_output_embeddings()(hidden).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def _batch_size(self, max_len: int, context: int | None = None) -> int:
        if isinstance(self.batch_size, int):
            return max(1, self.batch_size)
        return auto_batch_size(self.model, self.device, max_len, context)

    def _forward(self, batch: Sequence[_Row]) -> list[list[float]]:
        import torch

        width = max(len(r.ids) for r in batch)
        keep = max(len(c) for r in batch for _, c in r.targets)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for b, r in enumerate(batch):
            # Left padding: every row ends at the last column, so the positions to read
            # are the same for the whole batch.
            ids[b, width - len(r.ids) :] = torch.tensor(r.ids)
            mask[b, width - len(r.ids) :] = 1
        self._count(sum(len(r.ids) for r in batch), ids.numel())
        # Positions count real tokens only, so a padded row sees exactly what it would
        # see alone (transformers does not derive them from the mask in forward()).
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        kwargs: dict[str, Any] = {"use_cache": False}
        if self._keep_arg:
            kwargs[self._keep_arg] = keep
        with torch.inference_mode():
            logits = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=pos.to(self.device),
                **kwargs,
            ).logits[:, -keep:, :]
            logprobs = torch.log_softmax(logits.float(), dim=-1).cpu()
        result: list[list[float]] = []
        for b, r in enumerate(batch):
            scores = []
            for _, cont in r.targets:
                n = len(cont)
                idx = torch.arange(keep - n, keep)
                scores.append(float(logprobs[b, idx, torch.tensor(cont)].sum()))
            result.append(scores)
        return result

    # -- generation -----------------------------------------------------------------
    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        """Answers of a chat model, through its chat template, one conversation at a time
        (greedy unless ``temperature`` > 0)."""
        import torch

        answers = []
        for conv in conversations:
            text = self.tok.apply_chat_template(
                list(conv), tokenize=False, add_generation_prompt=True
            )
            enc = self.tok(text, return_tensors="pt", add_special_tokens=False).to(self.device)
            torch.manual_seed(seed)
            with torch.inference_mode():
                out = self.model.generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    do_sample=temperature > 0,
                    temperature=temperature if temperature > 0 else None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=self.pad_id,
                )
            new_tokens = out[0, enc["input_ids"].shape[1] :]
            answers.append(str(self.tok.decode(new_tokens, skip_special_tokens=True)))
        return answers


def _pick_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        if (
            device.startswith("cuda")
            and torch.cuda.is_available()
            and torch.cuda.is_bf16_supported()
        ):
            return torch.bfloat16
        return torch.float32
    try:
        return {
            "float32": torch.float32,
            "fp32": torch.float32,
            "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16,
            "float16": torch.float16,
            "fp16": torch.float16,
        }[dtype]
    except KeyError:
        raise ModelError(
            f"unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16"
        ) from None


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


def row_bytes(config: Any, length: int, context: int, dtype_bytes: int) -> int:
    """Peak activation bytes of one batch row of ``length`` new tokens attending to
    ``context`` positions (cached prefix included), inference only.

    Counted: the residual stream and attention output (a few hidden-size tensors), the
    MLP's intermediate pair, the attention scores (materialised by the eager and the CPU
    kernels), the row's copy of the key/value cache, and the float32 log-softmax over
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
    scores = heads * length * context * 4
    kv = layers * 2 * kv_heads * head_dim * context * dtype_bytes
    logits = min(length, 8) * vocab * 4 * 2
    return act + scores + kv + logits


#: On a CPU the matmuls are already large at 8 rows; larger batches gain little (see
#: "Batch size on a CPU" in benchmarks/README.md) and only delay each durable write.
CPU_MAX_BATCH = 8
GPU_MAX_BATCH = 256


def auto_batch_size(model: Any, device: Any, max_len: int, context: int | None = None) -> int:
    """Rows per forward pass that fit in half of the free memory; results never depend on
    it (padding and the cache are exact), only speed and peak memory do.

    ``max_len`` is the longest row's new tokens, ``context`` the positions it attends to
    (``max_len`` plus a cached prefix). Capped at :data:`CPU_MAX_BATCH` on a CPU and
    :data:`GPU_MAX_BATCH` on a GPU.
    """
    dtype_bytes = next(model.parameters()).element_size()
    per_row = row_bytes(model.config, max_len, context or max_len, dtype_bytes)
    on_gpu = getattr(device, "type", str(device)) == "cuda"
    cap = GPU_MAX_BATCH if on_gpu else CPU_MAX_BATCH
    return int(max(1, min(cap, (free_memory(device) // 2) // max(per_row, 1))))
