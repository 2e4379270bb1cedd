"""Causal language models through Hugging Face transformers (the default engine):
:class:`HFCausalLM` and its forward passes. Its parts live beside it: the tokenization in
:mod:`~nlieval.backends.hf_tokens`, the prefix key/value cache in
:mod:`~nlieval.backends.hf_cache` and the batch size that fits in
:mod:`~nlieval.backends.memory` (whose names are importable from here too).
"""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..types import Progress
from .base import PromptTooLongError, ScoreRequest
from .finite import check_scores
from .hf_cache import cache_kwargs, prefix_rows_cache
from .hf_cascade import PREFIX_KWARG, cascade_attention_on, cascade_unsupported
from .hf_tokens import ScoreRow, TokenSplitter
from .memory import CPU_MAX_BATCH, GPU_MAX_BATCH, free_memory, row_bytes, rows_in_memory
from .options import HFOptions
from .placement import input_device, pick_placement
from .weights import (
    ModelSource,
    load_causal_lm,
    loadable_source,
)

__all__ = [
    "CPU_MAX_BATCH",
    "GPU_MAX_BATCH",
    "HFCausalLM",
    "auto_batch_size",
    "free_memory",
    "row_bytes",
]

log = logging.getLogger(__name__)


class HFCausalLM(TokenSplitter):
    """A causal LM scored by option log-likelihood.

    With ``prefix_cache`` (default) the key/value cache of a few-shot prefix shared by
    many requests is computed once and every item is scored on top of it.

    ``model`` is an alias (``smollm2-135m``), a local folder, a ``.gguf`` file or a hub
    id. Results do not depend on ``batch_size``. The tokenization (:meth:`split`, and
    many requests split at once) is :class:`~nlieval.backends.hf_tokens.TokenSplitter`'s.

    A tiny random Llama that reads bytes (a token per byte): the continuation's tokens
    cover all of it, and two requests scored on top of their shared prefix (computed
    once, held once: shared-prefix attention copies it into no row) score as their whole
    texts do:

    >>> import tempfile
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    >>> folder = tempfile.mkdtemp()
    >>> byte_ids = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    >>> tok = Tokenizer(models.BPE(byte_ids, []))
    >>> tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    >>> _ = fast.save_pretrained(folder)
    >>> cfg = LlamaConfig(vocab_size=257, hidden_size=16, intermediate_size=32,
    ...                   num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)
    >>> LlamaForCausalLM(cfg).save_pretrained(folder)
    >>> lm = HFCausalLM(folder, HFOptions(device="cpu"))
    >>> [len(ids) for ids in lm.split("Answer:", " A")]
    [7, 2]
    >>> shots = "Premise: a dog runs.\\nAnswer: A\\n\\n"
    >>> reqs = [ScoreRequest(f"{shots}Premise: {p}\\nAnswer:", (" A", " B"), len(shots))
    ...         for p in ("a cat naps.", "two men talk.")]
    >>> cached = lm.loglikelihood(reqs)
    >>> [len(scores) for scores in cached], lm.counts["kv_bytes_copied"]
    ([2, 2], 0)
    >>> lm.prefix_cache = False
    >>> whole = lm.loglikelihood(reqs)
    >>> max(abs(a - b) for c, w in zip(cached, whole) for a, b in zip(c, w)) < 1e-4
    True
    """

    def __init__(
        self,
        model: str | ModelSource,
        options: HFOptions | None = None,
        *,
        revision: str | None = None,
        batch_size: int | str = "auto",
        trust_remote_code: bool = False,
    ) -> None:
        """The causal LM ``model`` run with the engine's ``options`` whole (their
        defaults are :class:`~nlieval.backends.options.HFOptions`'); ``revision`` (a
        checkpoint's) overrides theirs; ``batch_size`` ``auto`` is the most rows that fit
        in half of the device's free memory (:func:`auto_batch_size`)."""
        import torch

        options = options or HFOptions()
        self.source = loadable_source(model, revision or options.revision)
        self.name = self.source.name
        device, self.dtype = pick_placement(options.device, options.dtype)
        kwargs, self._offload = options.spread_kwargs()
        self.tok, model_obj = load_causal_lm(
            self.source, dtype=self.dtype, trust_remote_code=trust_remote_code, **kwargs
        )
        self.device = torch.device(device)
        self.model: Any = model_obj
        if not kwargs:
            self.model.to(self.device)
        else:
            self.device = input_device(self.model)
        self.model.eval()
        pad = self.tok.pad_token_id
        self.pad_id = pad if pad is not None else (self.tok.eos_token_id or 0)
        params = inspect.signature(self.model.forward).parameters
        self._keep_arg = "logits_to_keep" if "logits_to_keep" in params else None
        self.batch_size = batch_size
        #: Score rows on top of a cached prefix with shared-prefix attention
        #: (:mod:`~nlieval.backends.hf_cascade`: the prefix held once), or, when False or
        #: when the architecture is not covered (one warning, at the first prefix), with
        #: a copy of the prefix in every row (:mod:`~nlieval.backends.hf_cache`).
        self.cascade = options.prefix_attention == "cascade"
        self._cascade_off: str | None = cascade_unsupported(self.model)
        #: Longest sequence the model was trained for (positions); longer prompts are
        #: refused (:class:`PromptTooLongError`) instead of scored out of range.
        window = getattr(self.model.config, "max_position_embeddings", None)
        self.context_window: int | None = window if isinstance(window, int) else None
        self._longest_token: int | None = None
        # The last prefix: its ids, its keys/values per layer, and (rows, width, cache) of
        # the buffers filled from it (see _group_cache).
        self._cached: tuple[tuple[int, ...], list[tuple[Any, Any]], Any] | None = None
        #: Tokens through the model body: ``tokens`` real ones, ``padded`` with the pads
        #: (what the matmuls really compute); key/value bytes of cached prefixes (each
        #: held once), copied from them into batch rows (0 with shared-prefix attention)
        #: and written for suffixes; batches scored with shared-prefix attention; texts
        #: tokenized whole because a seam check failed. Read by the benchmarks and tests;
        #: never affects results.
        self.counts = {
            "tokens": 0,
            "padded": 0,
            "forward_calls": 0,
            "kv_prefix_bytes": 0,
            "kv_bytes_copied": 0,
            "kv_suffix_bytes": 0,
            "cascade_batches": 0,
            "tokenizer_fallbacks": 0,
        }
        self._decoder = getattr(self.model, "model", None) or self.model.get_decoder()
        self._use_tokenizer(self.tok, options.prefix_cache)

    MIN_PREFIX = 8  # shorter shared prefixes are not worth a cache

    # -- scoring ------------------------------------------------------------------
    def _refuse_huge(self, requests: Sequence[ScoreRequest]) -> None:
        # No token is longer than the vocabulary's longest entry, so a text of more than
        # window x that many characters cannot fit: refused before tokenizing it (a 5 MB
        # premise would otherwise cost seconds and gigabytes to tokenize only to be refused).
        if self.context_window is None:
            return
        if self._longest_token is None:
            self._longest_token = max((len(t) for t in self.tok.get_vocab()), default=1)
        most = self.context_window * max(self._longest_token, 1)
        huge = {
            r: -(-n // self._longest_token)
            for r, req in enumerate(requests)
            if (n := len(req.context) + max(map(len, req.continuations), default=0)) > most
        }
        if huge:
            raise PromptTooLongError(huge, self.context_window, at_least=True)

    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        """Summed log-probability of every continuation of every request; a NaN or an
        infinity is refused (:class:`~nlieval.backends.finite.NonFiniteScore`)."""
        out = [[float("nan")] * len(req.continuations) for req in requests]
        self._refuse_huge(requests)
        rows = self._rows(requests)
        if self.context_window is not None:
            too_long: dict[int, int] = {}
            for row in rows:
                # A row's ids are the positions the model runs over (the context, then all
                # but the last option token).
                if len(row.ids) > self.context_window:
                    too_long[row.request] = max(too_long.get(row.request, 0), len(row.ids))
            if too_long:
                raise PromptTooLongError(too_long, self.context_window)
        remaining = Counter(row.request for row in rows)
        # Rows that share a prefix of at least MIN_PREFIX tokens are scored on top of its
        # key/value cache; the rest in plain left-padded batches.
        groups: dict[tuple[int, ...], list[ScoreRow]] = {}
        plain: list[ScoreRow] = []
        for row in rows:
            if row.n_prefix >= self.MIN_PREFIX:
                groups.setdefault(row.ids[: row.n_prefix], []).append(row)
            else:
                plain.append(row)
        work: list[tuple[tuple[int, ...] | None, list[ScoreRow]]] = [(None, plain)]
        work += list(groups.items())
        for prefix, group in work:
            # Longest first: similar lengths share a batch (less padding), and a too-large
            # batch fails at once rather than at the end.
            group = sorted(group, key=lambda r: -len(r.ids))
            if not group:
                continue
            longest = len(group[0].ids)
            cascade = prefix is not None and self._use_cascade()
            cache: Any = None
            if cascade:
                assert prefix is not None
                # The prefix first: the batch size is what fits beside its one copy.
                cache = self._prefix_state(prefix)
                bs = self._batch_size(longest - len(prefix), longest, shared_prefix=True)
            else:
                bs = self._batch_size(longest - len(prefix or ()), longest)
            if prefix is not None and not cascade:
                cache = self._group_cache(prefix, min(bs, len(group)), longest - len(prefix))
            for start in range(0, len(group), bs):
                batch = group[start : start + bs]
                if prefix is None:
                    scores = self._forward(batch)
                elif cascade:
                    scores = self._forward_cascade(len(prefix), batch, cache)
                else:
                    scores = self._forward_cached(len(prefix), batch, cache)
                for row, row_scores in zip(batch, scores, strict=True):
                    for (j, _), value in zip(row.targets, row_scores, strict=True):
                        out[row.request][j] = value
                    remaining[row.request] -= 1
                    if remaining[row.request] == 0 and progress is not None:
                        progress(1)
        check_scores(out, self.name, "log-likelihood")
        return out

    def _prefix_state(self, prefix: tuple[int, ...]) -> list[tuple[Any, Any]]:
        """Keys and values of ``prefix`` per layer (batch of one, each on its layer's
        device), kept for the next call too."""
        import torch
        from transformers.cache_utils import Cache, DynamicLayer

        if self._cached is not None and self._cached[0] == prefix:
            return self._cached[1]
        self._cached = None  # free the previous prefix's buffers first
        n_layers = self.model.config.get_text_config().num_hidden_layers
        # Full layers everywhere, sliding-window ones included: the suffixes need every
        # prefix position that their own window reaches, and the sliding mask is applied
        # from absolute positions whatever the layer keeps.
        cache = Cache(layers=[DynamicLayer() for _ in range(n_layers)])
        self._count(len(prefix), len(prefix))
        with torch.inference_mode():
            self._decoder(
                input_ids=torch.tensor([prefix], device=self.device),
                **cache_kwargs(self._decoder, cache),
                use_cache=True,
            )
        layers: list[Any] = cache.layers
        state = [(layer.keys, layer.values) for layer in layers]
        self.counts["kv_prefix_bytes"] += sum(
            t.numel() * t.element_size() for pair in state for t in pair
        )
        self._cached = (prefix, state, None)
        return state

    def _group_cache(self, prefix: tuple[int, ...], rows: int, width: int) -> Any:
        """A cache of ``rows`` rows holding ``prefix`` followed by room for ``width``
        suffix positions (:func:`~nlieval.backends.hf_cache.prefix_rows_cache`). Reused
        by the next call while it is large enough."""
        state = self._prefix_state(prefix)
        assert self._cached is not None
        held = self._cached[2]
        if held is not None and held[0] >= rows and held[1] >= width:
            return held[2]
        self._cached = (prefix, state, None)  # the old buffers go before the new come
        cache = prefix_rows_cache(state, len(prefix), rows, width, self.counts)
        self._cached = (prefix, state, (rows, width, cache))
        return cache

    def _use_cascade(self) -> bool:
        if not self.cascade:
            return False
        if self._cascade_off is not None:
            log.warning(
                "shared-prefix attention is off: %s; every row holds a copy of the "
                "prefix's keys and values instead (same results, more memory)",
                self._cascade_off,
            )
            self.cascade = False  # one warning
            return False
        return True

    def _suffix_ids(self, n_pre: int, batch: Sequence[ScoreRow]) -> Any:
        """The rows' suffixes after the shared prefix, right-padded: every suffix starts
        right after the prefix (the same positions for all rows), and causal attention
        keeps real tokens from seeing the pads."""
        import torch

        width = max(len(r.ids) - n_pre for r in batch)
        ids = torch.tensor(
            [list(r.ids[n_pre:]) + [self.pad_id] * (width + n_pre - len(r.ids)) for r in batch],
            dtype=torch.long,
        )
        self._count(sum(len(r.ids) - n_pre for r in batch), ids.numel())
        return ids

    def _forward_cascade(
        self, n_pre: int, batch: Sequence[ScoreRow], state: Sequence[tuple[Any, Any]]
    ) -> list[list[float]]:
        """Scores of rows that share a prefix of ``n_pre`` tokens whose keys and values
        per layer are ``state`` (batch of one), through shared-prefix attention."""
        import torch

        ids = self._suffix_ids(n_pre, batch)
        pos = torch.arange(n_pre, n_pre + ids.shape[1]).expand(ids.shape[0], -1)
        self.counts["cascade_batches"] += 1
        with cascade_attention_on(self.model), torch.inference_mode():
            hidden = self._decoder(
                input_ids=ids.to(self.device),
                position_ids=pos.to(self.device),
                use_cache=False,
                **{PREFIX_KWARG: state},
            ).last_hidden_state
            return self._read_suffix_scores(n_pre, batch, hidden)

    def _forward_cached(
        self, n_pre: int, batch: Sequence[ScoreRow], cache: Any
    ) -> list[list[float]]:
        import torch

        ids = self._suffix_ids(n_pre, batch)
        with torch.inference_mode():
            hidden = self._decoder(
                input_ids=ids.to(self.device), **cache_kwargs(self._decoder, cache), use_cache=True
            ).last_hidden_state
            return self._read_suffix_scores(n_pre, batch, hidden)

    def _read_suffix_scores(
        self, n_pre: int, batch: Sequence[ScoreRow], hidden: Any
    ) -> list[list[float]]:
        """Each row's option log-likelihoods from the last hidden states of its suffix."""
        import torch

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

    def _batch_size(
        self, max_len: int, context: int | None = None, *, shared_prefix: bool = False
    ) -> int:
        if isinstance(self.batch_size, int):
            return max(1, self.batch_size)
        return auto_batch_size(self.model, self.device, max_len, context, shared_prefix)

    def _forward(self, batch: Sequence[ScoreRow]) -> list[list[float]]:
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


def auto_batch_size(
    model: Any, device: Any, max_len: int, context: int | None = None, shared_prefix: bool = False
) -> int:
    """Rows per forward pass that fit in half of the free memory of ``device``
    (:func:`~nlieval.backends.memory.rows_in_memory`); results never depend on it."""
    # free_memory is looked up in this module, so it can be replaced here (the tests do).
    return rows_in_memory(
        model, device, max_len, context, free_memory(device), shared_prefix=shared_prefix
    )
