"""Local chat generation through transformers, in batches, on a cached shared prefix.

:class:`LocalChat` answers many conversations at once:

- Conversations go to ``model.generate`` in batches; greedy answers are the ones each
  conversation gets alone (positions count real tokens only, pads are masked).
- The start they share (system prompt and exemplar turns) is run through the model once;
  its key/value cache is reused for every batch and every later call with that start.
  The prefix of a conversation is fixed by the conversation alone (the tokens before its
  last message's content), never by the batch it lands in, so results do not depend on
  the batch size.
- Each row stops on its own at EOS, or as soon as its ``stop`` (a
  :class:`~nlieval.backends.base.Stop`: stop strings, a rule on the answer so far) holds;
  rows that are done get pads until the whole batch is (``model.generate`` keeps the
  batch shape). An answer that stopped at a string ends before it.
- Sampling (``temperature > 0``) draws every row from its own generator seeded with
  ``seed``: a row gets exactly the tokens it got alone after ``torch.manual_seed(seed)``,
  whatever the batch.

>>> chat = LocalChat(tiny_lm, batch_size=2)
>>> system = {"role": "system", "content": "Premise: A man is playing a guitar on stage."}
>>> convs = [[system, {"role": "user", "content": text}] for text in ("Say hi", "A cat naps.")]
>>> both = chat.generate(convs, max_new_tokens=5, temperature=1.0, seed=3)
>>> both == [chat.generate([c], max_new_tokens=5, temperature=1.0, seed=3)[0] for c in convs]
True
>>> chat.counts["prefix_runs"]  # the shared system turn went through the model once
1
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ground import ChatTemplate
from .base import Generation, Messages, Stop, StopRule
from .finite import NonFiniteScore
from .hf_cache import cache_kwargs
from .options import HFOptions
from .placement import input_device, pick_placement
from .weights import (
    ModelSource,
    load_causal_lm,
    loadable_source,
)

log = logging.getLogger(__name__)


def chat_template(tok: Any, folder: str, previous: ChatTemplate | None = None) -> ChatTemplate:
    """The chat template of ``tok`` (a transformers tokenizer loaded from ``folder``),
    compiled in nlieval's bounded sandbox: it is code from the model folder, and
    transformers' own sandbox has no time or memory bound (one ``{% for %}`` too many
    hangs ``instruct``). ``previous`` is returned as it is when its source is the same.
    Every engine renders chat prompts through this one function.

    >>> from transformers import AutoTokenizer
    >>> chat = chat_template(AutoTokenizer.from_pretrained(tiny_lm), tiny_lm)
    >>> chat.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    '<user>Hi\\n<assistant>'
    """
    file = Path(folder) / "chat_template.jinja"
    origin = f"chat template {file if file.is_file() else Path(folder) / 'tokenizer_config.json'}"
    try:
        source = tok.get_chat_template()
    except ValueError:
        raise ValueError(f"{origin}: the model has no chat template") from None
    if not isinstance(source, str):
        raise ValueError(f"{origin}: expected the template text")
    if previous is not None and previous.source == source:
        return previous
    return ChatTemplate(source, origin, dict(tok.special_tokens_map))


@dataclass(frozen=True)
class _Row:
    index: int  # position in the caller's list
    prefix: tuple[int, ...]  # leading ids shared through the prefix cache (may be empty)
    suffix: tuple[int, ...]  # the rest of the prompt, at least one token


#: Rows per forward pass of a local chat model when the batch size is ``auto``.
AUTO_BATCH = 16


class LocalChat:
    """A transformers chat model that answers conversations in batches.

    ``model`` is an alias (``smollm2-135m``), a local folder, a ``.gguf`` file or a hub
    id. ``batch_size`` rows go through ``generate`` at once; answers do not depend on it.
    With ``prefix_cache`` (default) the key/value cache of a shared conversation start
    is computed once.

    Greedy answers are the model's argmax tokens, here checked by hand on a tiny model:

    >>> import torch
    >>> from transformers import AutoModelForCausalLM, AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(tiny_lm)
    >>> lm = AutoModelForCausalLM.from_pretrained(tiny_lm)
    >>> ids = tok("<user>Hi\\n<assistant>")["input_ids"]  # the tiny model's chat template
    >>> for _ in range(6):  # one forward pass per token
    ...     ids.append(int(lm(torch.tensor([ids])).logits[0, -1].argmax()))
    >>> answers = LocalChat(tiny_lm).generate([[{"role": "user", "content": "Hi"}]], 6)
    >>> answers == [tok.decode(ids[-6:])]
    True
    """

    #: Shorter shared starts are not worth a cache.
    MIN_PREFIX = 8

    def __init__(
        self,
        model: str | ModelSource,
        options: HFOptions | None = None,
        *,
        batch_size: int | str = "auto",
        trust_remote_code: bool = False,
    ) -> None:
        """The chat model ``model`` run with the engine's ``options`` whole (their
        defaults are :class:`~nlieval.backends.options.HFOptions`'); ``batch_size``
        ``auto`` is :data:`AUTO_BATCH` rows per forward pass."""
        import torch

        options = options or HFOptions()
        self.source = loadable_source(model, options.revision)
        self.name = self.source.name
        device, self.dtype = pick_placement(options.device, options.dtype)
        self.device = torch.device(device)
        self._chat: ChatTemplate | None = None
        self._check_chat_template(trust_remote_code)
        # device_map/max_memory spread a model too large for one device, as in scoring.
        spread, self._offload = options.spread_kwargs()
        self.tok, model_obj = load_causal_lm(
            self.source, dtype=self.dtype, trust_remote_code=trust_remote_code, **spread
        )
        if spread:
            self.device = input_device(model_obj)
        self.model: Any = (model_obj if spread else model_obj.to(self.device)).eval()
        pad = self.tok.pad_token_id
        self.pad_id = pad if pad is not None else (self.tok.eos_token_id or 0)
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tok.eos_token_id
        self.eos_ids: set[int] = (
            set() if eos is None else set(eos if isinstance(eos, list) else [eos])
        )
        self.batch_size = max(1, batch_size if isinstance(batch_size, int) else AUTO_BATCH)
        self.prefix_cache = options.prefix_cache
        self._cached: tuple[tuple[int, ...], Any] | None = None
        #: Prompt tokens through the model: ``prompt`` real ones, ``prefix`` of them taken
        #: from the cache, ``padded`` the prompt slots computed, pads included. Read by
        #: benchmarks and tests; never affects results.
        self.counts = {"prompt": 0, "prefix": 0, "padded": 0, "prefix_runs": 0, "batches": 0}

    @property
    def generation(self) -> Generation:
        """``batch_size`` conversations per call (more gain nothing, and each batch's
        answers can be saved before the next is computed); ``stop`` honoured."""
        return Generation(batch=self.batch_size, stop=True)

    # -- prompts ------------------------------------------------------------------
    #: A conversation every chat template must render: rendered before the weights
    #: load, so that a template that cannot (a bound reached, an error) stops at once.
    PROBE: tuple[dict[str, str], ...] = (
        {"role": "user", "content": "A man sleeps. Is he awake?"},
        {"role": "assistant", "content": "No."},
        {"role": "user", "content": "A cat naps. Is it resting?"},
    )

    def _check_chat_template(self, trust_remote_code: bool) -> None:
        from transformers import AutoTokenizer

        try:
            self.tok = AutoTokenizer.from_pretrained(
                self.source.path,
                revision=self.source.revision,
                trust_remote_code=trust_remote_code,
            )
        except (OSError, ValueError):
            return  # load_causal_lm says what is wrong with the folder
        self._chat_template().render(self.PROBE, add_generation_prompt=True)

    def _chat_template(self) -> ChatTemplate:
        self._chat = chat_template(self.tok, self.source.path, self._chat)
        return self._chat

    def _ids(self, messages: Messages) -> list[int]:
        text = self._chat_template().render(list(messages), add_generation_prompt=True)
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _row(self, index: int, conv: Messages) -> _Row:
        ids = self._ids(conv)
        if not ids:
            raise ValueError(f"conversation {index} produced no tokens")
        if not self.prefix_cache or len(conv) < 2:
            return _Row(index, (), tuple(ids))
        # The conversation with its last message emptied shares exactly the tokens before
        # that message's content (a token merged across the boundary differs, so it is
        # left out): a prefix fixed by this conversation alone.
        last = dict(conv[-1])
        last["content"] = ""
        stub = self._ids([*conv[:-1], last])
        n = 0
        for a, b in zip(ids, stub, strict=False):
            if a != b:
                break
            n += 1
        n = min(n, len(ids) - 1)
        if n < self.MIN_PREFIX:
            return _Row(index, (), tuple(ids))
        return _Row(index, tuple(ids[:n]), tuple(ids[n:]))

    def _fits_window(self, rows: Sequence[_Row], max_new_tokens: int) -> bool:
        # Pads between the cached prefix and a suffix lengthen the distances a sliding
        # window measures, so a model with one takes the cache only when every row fits
        # inside the window anyway.
        window = getattr(self.model.config, "sliding_window", None)
        if not window:
            return True
        longest = max(len(r.prefix) + len(r.suffix) for r in rows) + max_new_tokens
        return bool(longest <= window)

    # -- generation ---------------------------------------------------------------
    def generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | StopRule | None = None,
    ) -> list[str]:
        """One answer per conversation, through the chat template (greedy unless
        ``temperature`` > 0); an answer ends at EOS, after ``max_new_tokens`` tokens, or
        at the first token after which ``stop`` holds (a :class:`Stop`, or a rule on the
        answer so far), before a stop string it holds."""
        if stop is not None and not isinstance(stop, Stop):
            stop = Stop(rule=stop)
        rows = [self._row(i, conv) for i, conv in enumerate(conversations)]
        groups: dict[tuple[int, ...], list[_Row]] = {}
        for row in rows:
            groups.setdefault(row.prefix, []).append(row)
        for prefix in [p for p in groups if p and not self._fits_window(groups[p], max_new_tokens)]:
            plain = [_Row(r.index, (), r.prefix + r.suffix) for r in groups.pop(prefix)]
            groups.setdefault((), []).extend(plain)
        answers: list[str] = [""] * len(rows)
        for prefix, group in groups.items():
            # Similar lengths share a batch (less padding); the order within a batch does
            # not change any row's answer.
            group = sorted(group, key=lambda r: (len(r.suffix), r.index))
            for start in range(0, len(group), self.batch_size):
                batch = group[start : start + self.batch_size]
                try:
                    texts = self._batch(prefix, batch, max_new_tokens, temperature, seed, stop)
                except NonFiniteScore as err:
                    last = str(conversations[err.index][-1].get("content", ""))
                    shown = last if len(last) <= 60 else last[:57] + "..."
                    raise err.at(f"the conversation whose last message is {shown!r}") from None
                for row, text in zip(batch, texts, strict=True):
                    answers[row.index] = text
        return answers

    def iter_generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | StopRule | None = None,
    ) -> Iterator[tuple[int, str | Exception]]:
        """``(index, answer)`` in the order of ``conversations``, one batch at a time, so a
        caller can save each answer before the next batch is computed; the answers are
        those of :meth:`generate`. (The type matches the server backends', which yield
        failed requests; a local failure is raised.)

        >>> chat = LocalChat(tiny_lm, batch_size=1)
        >>> convs = [[{"role": "user", "content": text}] for text in ("Hi", "Two dogs run.")]
        >>> answers = chat.iter_generate(convs, max_new_tokens=4)
        >>> index, first = next(answers); index, chat.counts["batches"]  # one batch so far
        (0, 1)
        >>> [first, *(answer for _, answer in answers)] == chat.generate(convs, max_new_tokens=4)
        True
        """
        for start in range(0, len(conversations), self.batch_size):
            chunk = conversations[start : start + self.batch_size]
            answers = self.generate(chunk, max_new_tokens, temperature, seed, stop=stop)
            yield from enumerate(answers, start)

    def _prefix_state(self, prefix: tuple[int, ...]) -> Any:
        """The key/value cache of ``prefix`` (batch of one), kept for later calls."""
        import torch
        from transformers import DynamicCache

        if self._cached is not None and self._cached[0] == prefix:
            return self._cached[1]
        cache = DynamicCache(config=self.model.config)
        with torch.inference_mode():
            self.model(
                input_ids=torch.tensor([prefix], device=self.device),
                **cache_kwargs(self.model, cache),
                use_cache=True,
                logits_to_keep=1,
            )
        self.counts["prefix_runs"] += 1
        self._cached = (prefix, cache)
        return cache

    def _batch(
        self,
        prefix: tuple[int, ...],
        batch: Sequence[_Row],
        max_new_tokens: int,
        temperature: float,
        seed: int,
        stop: Stop | None,
    ) -> list[str]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        n_pre, width = len(prefix), max(len(r.suffix) for r in batch)
        # [prefix | pads | suffix]: every row ends at the last column, so new tokens line
        # up; the pads are masked and positions count real tokens only (generate derives
        # them from the mask), so a row sees what it would see alone.
        ids = torch.full((len(batch), n_pre + width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        ids[:, :n_pre] = torch.tensor(prefix, dtype=torch.long)
        mask[:, :n_pre] = 1
        for b, r in enumerate(batch):
            ids[b, n_pre + width - len(r.suffix) :] = torch.tensor(r.suffix)
            mask[b, n_pre + width - len(r.suffix) :] = 1
        self.counts["prompt"] += sum(len(r.prefix) + len(r.suffix) for r in batch)
        self.counts["prefix"] += n_pre * len(batch)
        self.counts["padded"] += len(batch) * width
        self.counts["batches"] += 1
        kwargs: dict[str, Any] = {}
        if prefix:
            cache = copy.deepcopy(self._prefix_state(prefix))
            cache.batch_repeat_interleave(len(batch))
            # generate() takes the cache under the name its forward pass does.
            kwargs.update(cache_kwargs(self.model, cache))
        ender = _RowStop(self, n_pre + width, stop)
        # First of ours: the model's own scores, before a sampler sets any to -inf.
        processors = LogitsProcessorList([_FiniteScores(self.name, [r.index for r in batch])])
        if temperature > 0:
            processors.append(_RowSampler(temperature, seed, len(batch), self.device))
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                max_new_tokens=max_new_tokens,
                # Sampling happens in _RowSampler (one generator per row); generate itself
                # then takes the one token left standing.
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=self.pad_id,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([ender]),
                **kwargs,
            )
        texts = [
            self._decode(out[b, n_pre + width :].tolist(), ender.ends.get(b))
            for b in range(len(batch))
        ]
        return texts if stop is None else [stop.cut_strings(t) for t in texts]

    def _decode(self, new: list[int], end: int | None) -> str:
        # A row ends at its first EOS (dropped, as skip_special_tokens would) or where the
        # stop rule fired; what generate wrote after that is padding.
        if end is not None:
            new = new[:end]
        for n, tok in enumerate(new):
            if tok in self.eos_ids:
                new = new[:n]
                break
        return str(self.tok.decode(new, skip_special_tokens=True))


class _RowStop:
    """Per-row stopping criterion: a row is done once ``stop`` holds for its answer (a stop
    string in it, or the rule).

    ``ends[b]`` is the number of new tokens of row ``b`` when it was stopped.
    """

    def __init__(self, chat: LocalChat, start: int, stop: Stop | None) -> None:
        self.chat, self.start, self.stop = chat, start, stop
        self.ends: dict[int, int] = {}

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        if self.stop is None:
            return done
        n_new = input_ids.shape[1] - self.start
        for b in range(input_ids.shape[0]):
            if b in self.ends:
                done[b] = True
                continue
            new = input_ids[b, self.start :].tolist()
            if any(t in self.chat.eos_ids for t in new):
                continue  # already finished by EOS; generate pads it from here
            if self.stop.hit(str(self.chat.tok.decode(new, skip_special_tokens=True))):
                self.ends[b] = n_new
                done[b] = True
        return done


class _FiniteScores:
    """Refuses next-token scores that hold a NaN or +inf, or no finite value at all, as
    a server's log-probabilities are refused: greedy decoding would otherwise take
    token 0 of a NaN row and sampling fail deep in torch. ``rows`` are the rows'
    indices in the caller's list."""

    def __init__(self, model: str, rows: Sequence[int]) -> None:
        self.model, self.rows = model, rows

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        # One reduction per step: a row's max is NaN when the row holds a NaN (amax
        # propagates it), +inf when it holds one, -inf when no value is finite.
        bad = ~torch.isfinite(scores.amax(-1))
        if bool(bad.any()):
            b = int(bad.nonzero()[0, 0])
            row = scores[b]
            value = math.nan if bool(torch.isnan(row).any()) else float(row.max())
            raise NonFiniteScore(self.model, "next-token score", self.rows[b], value)
        return scores


class _RowSampler:
    """Samples each row's next token from its own generator, seeded with ``seed``.

    ``generate``'s own sampler draws the whole batch from one generator, so a row's
    tokens would depend on the batch; here row ``b`` consumes one draw of its own
    generator per step, exactly as it did alone after ``torch.manual_seed(seed)``. The
    scores that come back keep only the drawn token, for greedy selection to take.
    """

    def __init__(self, temperature: float, seed: int, rows: int, device: Any) -> None:
        import torch

        self.temperature = temperature
        self.generators = [torch.Generator(device=device).manual_seed(seed) for _ in range(rows)]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        out = torch.full_like(scores, float("-inf"))
        for b, gen in enumerate(self.generators):
            tok = torch.multinomial(probs[b : b + 1], num_samples=1, generator=gen)[0, 0]
            out[b, tok] = 0.0
        return out
