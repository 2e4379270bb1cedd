"""Causal language models through Hugging Face transformers (the default engine)."""

from __future__ import annotations

import inspect
import logging
import os
import tempfile
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import Progress, PromptTooLongError, ScoreRequest
from .weights import (
    ModelSource,
    load_causal_lm,
    local_hf_folder,
    pick_dtype,
    resolve_model,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Row:
    """One forward pass input and the continuations read from its last positions."""

    request: int
    ids: tuple[int, ...]
    targets: tuple[tuple[int, tuple[int, ...]], ...]  # (option index, continuation ids)
    n_prefix: int = 0  # leading ids that lie wholly inside the request's shared prefix


# Context tokens as head + tail, continuation tokens, cached-prefix length.
_Parts = tuple[list[int], list[int], list[int], int]


class _Offsets(Sequence[tuple[int, int]]):
    """Character offsets of a token list glued from pieces, each a slice of another
    tokenization shifted by some characters. Read lazily: only the few tokens near a seam
    are ever looked at, and building the full lists cost more than the tokenizer did."""

    __slots__ = ("_starts", "_pieces", "_n")

    def __init__(self, pieces: Sequence[tuple[Sequence[tuple[int, int]], int, int, int]]) -> None:
        # (source, first index, end index, shift in characters); empty pieces dropped.
        self._pieces = [p for p in pieces if p[2] > p[1]]
        self._starts: list[int] = []
        n = 0
        for _, lo, hi, _ in self._pieces:
            self._starts.append(n)
            n += hi - lo
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> tuple[int, int]:  # type: ignore[override]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_right(self._starts, i) - 1
        source, lo, _, shift = self._pieces[k]
        s, e = source[lo + i - self._starts[k]]
        return s + shift, e + shift


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
        max_memory: Mapping[int | str, str] | None = None,
        trust_remote_code: bool = False,
        prefix_cache: bool = True,
    ) -> None:
        import torch

        source = model if isinstance(model, ModelSource) else resolve_model(model, revision)
        self.name = source.name
        self.source = local_hf_folder(source)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device if device_map is None else "cpu")
        self.dtype = pick_dtype(dtype, device)
        kwargs: dict[str, Any] = {}
        if device_map is not None:
            kwargs["device_map"] = device_map
            if max_memory is not None:
                kwargs["max_memory"] = dict(max_memory)
                # Layers beyond every cap go to disk; their weights are memory-mapped from
                # this folder (kept as long as the model) and loaded per forward pass.
                self._offload = tempfile.TemporaryDirectory(prefix="nlieval-offload-")
                kwargs["offload_folder"] = self._offload.name
        self.tok, model_obj = load_causal_lm(
            self.source, dtype=self.dtype, trust_remote_code=trust_remote_code, **kwargs
        )
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
        #: Longest sequence the model was trained for (positions); longer prompts are
        #: refused (:class:`PromptTooLongError`) instead of scored out of range.
        window = getattr(self.model.config, "max_position_embeddings", None)
        self.context_window: int | None = window if isinstance(window, int) else None
        self._longest_token: int | None = None
        # The last prefix: its ids, its keys/values per layer, and (rows, width, cache) of
        # the buffers filled from it (see _group_cache).
        self._cached: tuple[tuple[int, ...], list[tuple[Any, Any]], Any] | None = None
        self._prefix_memo: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
        #: Tokens through the model body: ``tokens`` real ones, ``padded`` with the pads
        #: (what the matmuls really compute); key/value bytes copied from a cached prefix
        #: into batch rows and written for suffixes; texts tokenized whole because a seam
        #: check failed. Read by the benchmarks and tests; never affects results.
        self.counts = {
            "tokens": 0,
            "padded": 0,
            "forward_calls": 0,
            "kv_bytes_copied": 0,
            "kv_suffix_bytes": 0,
            "tokenizer_fallbacks": 0,
        }
        self._decoder = getattr(self.model, "model", None) or self.model.get_decoder()
        self._frame = self._frame_tokens() if self._fast else None

    MIN_PREFIX = 8  # shorter shared prefixes are not worth a cache
    #: Tokens re-tokenized on each side of a seam (see :meth:`_split_many`).
    SEAM_TOKENS = 4

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
        head, tail, cont, n_prefix = self._split_whole(context, continuation, prefix_len)
        return head + tail, cont, n_prefix

    def _split_whole(self, context: str, continuation: str, prefix_len: int) -> _Parts:
        # Also counts the leading tokens that end inside context[:prefix_len]: exactly the
        # prefix tokens as the model sees them in this text, so a token merged across the
        # prefix boundary is never taken from a cache.
        whole = context + continuation
        if self._fast:
            enc = self.tok(whole, return_offsets_mapping=True)
            return self._cut(
                [], list(enc["input_ids"]), enc["offset_mapping"], context, continuation, prefix_len
            )
        n_prefix = 0
        ids = list(self.tok(whole)["input_ids"])
        n_ctx = len(self.tok(context)["input_ids"])
        ctx, cont = ids[:n_ctx], ids[n_ctx:]
        if prefix_len > 0:
            pre = list(self.tok(context[:prefix_len])["input_ids"])
            # Without offsets, trust the prefix only if it tokenizes identically, minus
            # its last token (which could merge with what follows).
            if ids[: len(pre) - 1] == pre[:-1]:
                n_prefix = len(pre) - 1
        return self._checked([], ctx, cont, n_prefix, continuation)

    def _cut(
        self,
        head: list[int],
        ids: list[int],
        offsets: Sequence[tuple[int, int]],
        context: str,
        continuation: str,
        prefix_len: int,
        known: tuple[int, int] = (0, 0),
    ) -> _Parts:
        """Context, continuation and cached-prefix length from the whole text's tokens
        ``head + ids`` (``offsets`` index the whole).

        ``known``: how many leading tokens are already known to end within the context
        (at least ``len(head)``) and within the prefix (the scans start there)."""
        n = len(context)
        special = self._special
        h = len(head)
        end = h + len(ids)
        cut = next(
            (
                i
                for i in range(max(known[0], h), end)
                if offsets[i][1] > n
                and not (offsets[i][0] == offsets[i][1] and ids[i - h] in special)
            ),
            end,
        )
        cont = ids[cut - h :]
        # Some tokenizers append EOS; it is not part of the continuation.
        while cont and cont[-1] in special and offsets[cut + len(cont) - 1][1] <= n:
            cont.pop()
        n_prefix = 0
        if prefix_len > 0:
            n_prefix = next((i for i in range(known[1], end) if offsets[i][1] > prefix_len), end)
        return self._checked(head, ids[: cut - h], cont, n_prefix, continuation)

    def _checked(
        self, head: list[int], ctx: list[int], cont: list[int], n_prefix: int, continuation: str
    ) -> _Parts:
        if not head and not ctx:
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
        return head, ctx, cont, min(n_prefix, len(head) + len(ctx) - 1)

    def _frame_tokens(self) -> tuple[list[int], list[tuple[int, int]], list[int]] | None:
        """The special tokens the tokenizer puts before and after a text's own tokens
        (BOS, EOS), or None where a text's tokens are not simply framed by them."""
        probe = "Premise: a cat.\n\nAnswer: B"
        try:
            full = self.tok(probe, return_offsets_mapping=True)
            bare = self.tok(probe, add_special_tokens=False, return_offsets_mapping=True)
        except (NotImplementedError, ValueError, TypeError):
            return None
        ids, offs = list(full["input_ids"]), list(full["offset_mapping"])
        inner, inner_offs = list(bare["input_ids"]), list(bare["offset_mapping"])
        for i in range(len(ids) - len(inner) + 1):
            if ids[i : i + len(inner)] == inner and offs[i : i + len(inner)] == inner_offs:
                return ids[:i], offs[:i], ids[i + len(inner) :]
        return None

    def _encode(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """Each text's own tokens and character offsets, one batched tokenizer call."""
        if not texts:
            return []
        backend = getattr(self.tok, "backend_tokenizer", None)
        if backend is not None:
            # The Rust tokenizer itself: the same encodings as the wrapper's __call__,
            # without building its BatchEncoding (a quarter of the time on short texts).
            encs = backend.encode_batch(list(texts), add_special_tokens=False)
            return [(e.ids, e.offsets) for e in encs]
        enc = self.tok(list(texts), add_special_tokens=False, return_offsets_mapping=True)
        return [
            (list(i), list(o)) for i, o in zip(enc["input_ids"], enc["offset_mapping"], strict=True)
        ]

    def _anchor(self, offsets: Sequence[tuple[int, int]], end: int) -> tuple[int, int]:
        """Two token indices ``(w, a)``, ``w <= a <= end - SEAM_TOKENS``, where a token
        starts exactly where the previous one ends (so a text may be cut there); ``a`` is
        the cut, ``w`` the start of the overlap that checks it. ``(0, 0)`` where none:
        then the text is tokenized from its start."""

        def clean(i: int) -> bool:
            return offsets[i - 1][0] < offsets[i - 1][1] == offsets[i][0] < offsets[i][1]

        a = end - self.SEAM_TOKENS
        while a > 0 and not clean(a):
            a -= 1
        if a <= 0:
            return 0, 0
        w = a - self.SEAM_TOKENS
        while w > 0 and not clean(w):
            w -= 1
        return max(w, 0), a

    def _prefix_tokens(self, prefix: str) -> tuple[list[int], list[tuple[int, int]]]:
        hit = self._prefix_memo.get(prefix)
        if hit is None:
            if len(self._prefix_memo) >= 8:
                self._prefix_memo.clear()
            hit = self._prefix_memo[prefix] = self._encode([prefix])[0]
        return hit

    def _split_many(
        self, requests: Sequence[ScoreRequest]
    ) -> list[list[tuple[list[int], list[int], int]]]:
        """``[[self._split(r.context, c, plen) for c in r.continuations] for r in requests]``
        with the shared prefix tokenized once, each item once and each option as a few
        tokens at the context's end (see :meth:`_split_parts`)."""
        return [
            [(head + ctx, cont, n) for head, ctx, cont, n in parts]
            for parts in self._split_parts(requests)
        ]

    def _split_parts(self, requests: Sequence[ScoreRequest]) -> list[list[_Parts]]:
        """Per request and option: the context's tokens as ``head + tail`` (``head`` one
        list shared by the request's options), the continuation's, and the cached-prefix
        length: ``_split``'s result, without building each option's full lists.

        Hand-written because no tokenizer call composes tokenizations. Each seam (the
        prefix/item one, the context/option one) is handled the same way: the later text
        is tokenized from a cut a few tokens *before* the seam, so any merge across the
        seam is tokenized afresh, and the cut is accepted only if the tokens of the
        overlap just before it (tokenized again, from further back) are identical to the
        earlier tokenization; otherwise that text is tokenized whole, as ``_split`` does.
        """
        plens = [r.prefix_len if self.prefix_cache else 0 for r in requests]
        if not self._fast or self._frame is None:
            return [
                [self._split_whole(r.context, c, p) for c in r.continuations]
                for r, p in zip(requests, plens, strict=True)
            ]
        lead, lead_offs, trail = self._frame
        trail_offs = [(0, 0)] * len(trail)
        # 1. The prefix once per distinct prefix; each item from a cut before its seam.
        starts: list[tuple[list[int], list[tuple[int, int]], int, int, int]] = []
        for r in requests:
            if r.prefix_len > 0:
                p_ids, p_offs = self._prefix_tokens(r.context[: r.prefix_len])
                w, a = self._anchor(p_offs, len(p_ids))
                starts.append((p_ids, p_offs, w, a, p_offs[w][0] if w else 0))
            else:
                starts.append(([], [], 0, 0, 0))
        items = self._encode([r.context[s[4] :] for r, s in zip(requests, starts, strict=True)])
        contexts: list[tuple[list[int], _Offsets] | None] = []
        for (p_ids, p_offs, w, a, b), (t_ids, t_offs) in zip(starts, items, strict=True):
            if t_ids[: a - w] != p_ids[w:a]:
                contexts.append(None)
                continue
            offs = _Offsets([(p_offs, 0, a, 0), (t_offs, a - w, len(t_offs), b)])
            contexts.append((p_ids[:a] + t_ids[a - w :], offs))
        # 2. Each option: the context's last few tokens again, followed by the option.
        anchors: list[tuple[int, int, int] | None] = []
        texts: list[str] = []
        for r, c in zip(requests, contexts, strict=True):
            if c is None:
                anchors.append(None)
                continue
            w, a = self._anchor(c[1], len(c[0]))
            b = c[1][w][0] if w else 0
            anchors.append((w, a, b))
            texts += [r.context[b:] + cont for cont in r.continuations]
        tails = iter(self._encode(texts))
        out: list[list[_Parts]] = []
        for r, c, anchor, plen, start in zip(
            requests, contexts, anchors, plens, starts, strict=True
        ):
            pre_cut = start[3] if start[3] <= (anchor[1] if anchor else 0) else 0
            head = lead + c[0][: anchor[1]] if c is not None and anchor is not None else []
            parts = []
            for cont in r.continuations:
                whole = None
                if c is not None and anchor is not None:
                    w, a, b = anchor
                    u_ids, u_offs = next(tails)
                    if u_ids[: a - w] == c[0][w:a]:
                        offs = _Offsets(
                            [
                                (lead_offs, 0, len(lead), 0),
                                (c[1], 0, a, 0),
                                (u_offs, a - w, len(u_offs), b),
                                (trail_offs, 0, len(trail), 0),
                            ]
                        )
                        # Tokens before the cut end within the context, and the
                        # prefix's up to its own cut within the prefix.
                        known = (len(lead) + a, len(lead) + (pre_cut if plen else 0))
                        tail = u_ids[a - w :] + trail
                        whole = self._cut(head, tail, offs, r.context, cont, plen, known)
                if whole is None:
                    self.counts["tokenizer_fallbacks"] += 1
                    whole = self._split_whole(r.context, cont, plen)
                parts.append(whole)
            out.append(parts)
        return out

    def _rows(self, requests: Sequence[ScoreRequest]) -> list[_Row]:
        rows: list[_Row] = []
        for r, parts in enumerate(self._split_parts(requests)):
            head, ctx, _, npre = parts[0]
            same_ctx = all((p[0] is head or p[0] == head) and p[1] == ctx for p in parts)
            if same_ctx and all(len(p[2]) == 1 for p in parts):
                # Every option is one token after the same context: one forward pass
                # gives all of them from the last position.
                targets = tuple((j, tuple(p[2])) for j, p in enumerate(parts))
                rows.append(_Row(r, tuple(head + ctx), targets, npre))
            else:
                for j, (head, ctx, cont, npre) in enumerate(parts):
                    rows.append(_Row(r, tuple(head + ctx + cont[:-1]), ((j, tuple(cont)),), npre))
        return rows

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
        """Summed log-probability of every continuation of every request."""
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
            cache = None
            if prefix is not None:
                cache = self._group_cache(prefix, min(bs, len(group)), longest - len(prefix))
            for start in range(0, len(group), bs):
                batch = group[start : start + bs]
                scores = (
                    self._forward(batch)
                    if prefix is None
                    else self._forward_cached(len(prefix), batch, cache)
                )
                for row, row_scores in zip(batch, scores, strict=True):
                    for (j, _), value in zip(row.targets, row_scores, strict=True):
                        out[row.request][j] = value
                    remaining[row.request] -= 1
                    if remaining[row.request] == 0 and progress is not None:
                        progress(1)
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
                past_key_values=cache,
                use_cache=True,
            )
        layers: list[Any] = cache.layers
        state = [(layer.keys, layer.values) for layer in layers]
        self._cached = (prefix, state, None)
        return state

    def _group_cache(self, prefix: tuple[int, ...], rows: int, width: int) -> Any:
        """A cache of ``rows`` rows holding ``prefix`` followed by room for ``width``
        suffix positions. The prefix is copied into the rows once, here; every batch
        then writes only its own suffix positions (``_SuffixLayer``). Reused by the next
        call while it is large enough."""
        import torch
        from transformers.cache_utils import Cache

        state = self._prefix_state(prefix)
        assert self._cached is not None
        held = self._cached[2]
        if held is not None and held[0] >= rows and held[1] >= width:
            return held[2]
        self._cached = (prefix, state, None)  # the old buffers go before the new come
        n_pre = len(prefix)
        layers = []
        for keys, values in state:
            bufs = []
            for t in (keys, values):
                buf = torch.empty(
                    (rows, t.shape[1], n_pre + width, t.shape[3]), dtype=t.dtype, device=t.device
                )
                buf[:, :, :n_pre].copy_(t.expand(rows, -1, -1, -1))
                self.counts["kv_bytes_copied"] += rows * t[0].numel() * t.element_size()
                bufs.append(buf)
            layers.append(_suffix_layer(bufs[0], bufs[1], n_pre, self.counts))
        cache = Cache(layers=layers)
        self._cached = (prefix, state, (rows, width, cache))
        return cache

    def _forward_cached(self, n_pre: int, batch: Sequence[_Row], cache: Any) -> list[list[float]]:
        import torch

        width = max(len(r.ids) - n_pre for r in batch)
        # Right padding: every suffix starts right after the shared prefix (same positions
        # for all rows), and causal attention keeps real tokens from seeing the pads.
        ids = torch.tensor(
            [list(r.ids[n_pre:]) + [self.pad_id] * (width + n_pre - len(r.ids)) for r in batch],
            dtype=torch.long,
        )
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


# The class subclasses a transformers type, so it is made on first use: importing this
# module must not import transformers (the CLI's start-up and `nlieval --help` stay fast).
_SUFFIX_LAYER: Any = None


def _suffix_layer(keys: Any, values: Any, n_prefix: int, counts: dict[str, int]) -> Any:
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
                super().__init__()
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


#: On a CPU the matmuls are already large at 4 rows: with no per-batch copy of the cached
#: prefix, 4 rows were the fastest fixed size at k = 10 (SNLI and ANLI R3, SmolLM2; see
#: "Batch size on a CPU" in benchmarks/README.md), and larger batches only add padding.
CPU_MAX_BATCH = 4
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
