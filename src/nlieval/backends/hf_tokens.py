"""Incremental tokenization for :class:`~nlieval.backends.hf.HFCausalLM`: the token ids
of context and continuation exactly as the whole text tokenizes, built from a shared
prefix tokenized once, each item once and each option as a few tokens at the context's
end (:class:`TokenSplitter`), and the forward-pass rows made from them
(:class:`ScoreRow`). Nothing here imports torch or transformers."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import ScoreRequest


@dataclass(frozen=True)
class ScoreRow:
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


class TokenSplitter:
    """The tokenization half of :class:`~nlieval.backends.hf.HFCausalLM` (and of
    :class:`~nlieval.backends.vllm_engine.VLLMCausalLM`), mixed into it: :meth:`split` and
    the batched, incremental ``_split_many`` / ``_rows``.

    The class that mixes it in calls :meth:`_use_tokenizer` once, which sets the
    attributes declared below, and keeps ``counts`` (``tokenizer_fallbacks`` is counted
    here).
    """

    tok: Any
    prefix_cache: bool
    counts: dict[str, int]
    _fast: bool
    _special: set[int]
    _frame: tuple[list[int], list[tuple[int, int]], list[int]] | None
    _prefix_memo: dict[str, tuple[list[int], list[tuple[int, int]]]]

    #: Tokens re-tokenized on each side of a seam (see :meth:`_split_many`).
    SEAM_TOKENS = 4

    def _use_tokenizer(self, tok: Any, prefix_cache: bool) -> None:
        """Split with ``tok`` (a transformers tokenizer): whether it is a fast one
        (offsets), its special ids, its BOS/EOS frame, an empty prefix memo, and whether
        shared prefixes are tokenized (and cached) apart. The engines share this set-up so
        that both tokenize the same text into the same ids."""
        self.tok = tok
        self.prefix_cache = prefix_cache
        self._fast = bool(getattr(tok, "is_fast", False))
        self._special = set(tok.all_special_ids)
        self._prefix_memo = {}
        self._frame = self._frame_tokens() if self._fast else None

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

    def _rows(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        rows: list[ScoreRow] = []
        for r, parts in enumerate(self._split_parts(requests)):
            head, ctx, _, npre = parts[0]
            same_ctx = all((p[0] is head or p[0] == head) and p[1] == ctx for p in parts)
            if same_ctx and all(len(p[2]) == 1 for p in parts):
                # Every option is one token after the same context: one forward pass
                # gives all of them from the last position.
                targets = tuple((j, tuple(p[2])) for j, p in enumerate(parts))
                rows.append(ScoreRow(r, tuple(head + ctx), targets, npre))
            else:
                for j, (head, ctx, cont, npre) in enumerate(parts):
                    rows.append(
                        ScoreRow(r, tuple(head + ctx + cont[:-1]), ((j, tuple(cont)),), npre)
                    )
        return rows
