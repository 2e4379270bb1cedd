"""Option scoring on an inference server through the OpenAI-compatible completions API.

:class:`CompletionsLM` is a :class:`~nlieval.backends.base.LogLikelihoodBackend` for a
model served by vLLM or SGLang (tensor or pipeline parallel, on as many GPUs as it
takes): ``nlieval run --model openai-completions:NAME --api-base URL``.

Two kinds of request, both checked before their numbers are used:

**One request per item** (``top_logprobs`` > 0, the default; vLLM). The server's own
tokenizer (``POST /tokenize`` at the server's root) splits the context and every
``context + option``; an item whose every option's tokens are exactly the context's
tokens plus one more is scored from the top log-probs of the position after the context:
one request sends the context's token ids with ``max_tokens: 1``, ``logprobs: K``,
``return_tokens_as_token_ids: true`` (top tokens named ``token_id:N``, so no decoded
string has to be matched), ``logprob_token_ids`` (the options' ids: vLLM 0.32 then
returns exactly those, so none misses the top K) and ``temperature: 0``. Because the
tokens are the ones the server would use for ``context + option`` and no token straddles
the boundary, the value is the one the echo request gives; and since no prompt log-probs
are asked for, the server may serve the few-shot prefix from its prefix cache (vLLM
recomputes the whole prompt for requests with prompt log-probs). An item with an option
of several tokens, one that merges with the end of the context, or one outside the top K
goes to echo requests, all its options (an item's options are compared on log-probs of
one kind). A server whose ``/tokenize`` is missing or refused, one that refuses K top
log-probs (vLLM's ``--max-logprobs``, 20 by default) or one that ignores
``return_tokens_as_token_ids`` gets echo requests only (a warning says why).

**One request per option** (echo; ``top_logprobs=0``, and every fallback). Each option
is one prompt, ``context + continuation``, sent with ``echo: true``, ``logprobs: 1``,
``max_tokens: 0`` and ``temperature: 0``; the server tokenizes the whole text (so merges
across the boundary are the model's own) and answers with every prompt token, its text
offset and its log-probability. The option's log-likelihood is the sum over the tokens
that end after the start of the continuation: a token that straddles the boundary
belongs to the continuation, the rule of :meth:`~nlieval.backends.hf.HFCausalLM.split`.
A server that refuses ``max_tokens: 0`` is asked again with 1 and the generated token is
dropped (found by aligning the answer's tokens on the prompt).

Up to ``batch_size`` prompts go in one request (the API takes a list), ``concurrency``
requests at a time, with the retries, back-off, ``Retry-After`` and timeouts of
:class:`~nlieval.backends.openai.ServerClient`. Every echo answer is checked: one choice
per prompt, ``tokens``, ``token_logprobs`` and ``text_offset`` of equal length, offsets
that never decrease, the tokens' text at their offsets equal to the prompt's (from the
end of the prompt back to the start, or to a leading token outside the prompt such as a
BOS, or to a token that holds only part of a character), and a log-probability for every
continuation token. A server that returns no prompt log-probs (llama.cpp's
``llama-server`` returns those of generated tokens only) or misaligned ones stops the
run with a :class:`PromptLogprobsError` instead of scoring nonsense. The few-shot
``prefix_len`` hint is not used: reusing a shared prefix is the server's prefix cache's
job. :attr:`CompletionsLM.counts` says how many options each kind of request scored.

>>> lm = CompletionsLM("llama-3.1-70b", "http://localhost:8000/v1")
>>> lm.name, lm.url
('llama-3.1-70b', 'http://localhost:8000/v1/completions')
>>> lm = CompletionsLM("tiny", fake_server)  # the tests' fake vLLM, over a tiny model
>>> [[round(x, 6) < 0 for x in row] for row in lm.loglikelihood([ScoreRequest("A", (" B", " C"))])]
[[True, True]]
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from ..ground import SettingError
from ..types import Progress
from .base import ScoreRequest
from .echo_logprobs import EchoScore, EchoSizer, ImpossibleLogprob, checked_logprob, echo_score
from .openai import RequestTimeout, ServerClient, ServerError, ServerOptions, TryAgain, clip

log = logging.getLogger(__name__)

#: Prompts per request when ``batch_size`` is ``"auto"``.
DEFAULT_BATCH = 16

#: Top log-probs asked for at the position after the context (vLLM's default
#: ``--max-logprobs``; OpenAI's own API allows 5).
DEFAULT_TOP_LOGPROBS = 20

#: Most token ids asked for by name (vLLM's ``logprob_token_ids`` takes up to 128).
MAX_LOGPROB_TOKEN_IDS = 128

#: How an item was scored (the ``scored_by`` of its record): one request per item, or
#: echo requests from the start (``--top-logprobs 0``), or echo requests as a fallback.
NEXT_TOKEN = "next-token"
ECHO = "echo"
NOT_ONE_TOKEN = "an option is not one token after the context"
TOP_K_MISS = "an option is outside the top K"
NEXT_TOKEN_OFF = "the server cannot score one request per item"


def fallback(why: str) -> str:
    """The ``scored_by`` of an item scored by echo requests for the reason ``why``.

    >>> fallback(TOP_K_MISS)
    'echo (fallback: an option is outside the top K)'
    """
    return f"{ECHO} (fallback: {why})"


#: How vLLM names a token when asked for ``return_tokens_as_token_ids``.
_TOKEN_ID = re.compile(r"token_id:(\d+)")


class PromptLogprobsError(ServerError):
    """An answer without usable prompt log-probs: missing, too few, or misaligned with the
    prompt. Not retried: the server will answer the same way again."""


class _NoNextToken(ServerError):
    """The server cannot score options from the next token's top log-probs (no
    ``/tokenize``, K refused, tokens not named by id): its options go to echo requests."""


@dataclass(frozen=True)
class _Prompt:
    """One option: the text sent and where its continuation starts (characters)."""

    request: int
    option: int
    text: str
    boundary: int


class CompletionsLM(ServerClient):
    """Option log-likelihoods from an OpenAI-compatible ``/completions`` endpoint.

    ``batch_size`` is the number of prompts per request (``"auto"``:
    :data:`DEFAULT_BATCH`); ``top_logprobs`` the K of the one-request-per-item scoring
    (0: one echo request per option; None: :data:`DEFAULT_TOP_LOGPROBS`); the other
    settings are those of :class:`~nlieval.backends.openai.ServerClient`. Results do not depend on
    ``batch_size``, ``concurrency`` or ``top_logprobs`` (within the server's precision).
    """

    ENDPOINT = "/completions"

    def __init__(
        self,
        model: str,
        server: ServerOptions | str,
        *,
        batch_size: int | str = "auto",
        top_logprobs: int | None = None,
        **client: Any,
    ) -> None:
        # ``client``: the keywords of ServerClient (api_key, transport, sleep, settings).
        super().__init__(model, server, **client)
        if batch_size == "auto":
            self.batch_size = DEFAULT_BATCH
        elif isinstance(batch_size, int) and batch_size >= 1:
            self.batch_size = batch_size
        else:
            raise SettingError(
                "batch_size", f"--batch-size takes a positive integer or 'auto', got {batch_size!r}"
            )
        if top_logprobs is None:
            top_logprobs = DEFAULT_TOP_LOGPROBS
        if top_logprobs < 0:
            raise SettingError(
                "top_logprobs", f"--top-logprobs must be 0 or more, got {top_logprobs}"
            )
        self.top_logprobs = top_logprobs
        #: vLLM serves /tokenize at its root, beside /v1.
        self.tokenize_url = re.sub(r"/v1$", "", self.api_base) + "/tokenize"
        #: Why the one-request-per-item scoring is off (None: it is on).
        self.next_token_off: str | None = None if top_logprobs else "--top-logprobs 0"
        #: 0 until the server refuses it, then 1 (the generated token is dropped).
        self.max_tokens = 0
        #: Requests sent and options scored, by kind: ``tokenize_requests``,
        #: ``next_token_requests``, ``next_token_options``, ``top_k_misses`` (items with
        #: an option not among the top K, scored by echo), ``echo_requests``,
        #: ``echo_options``.
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        #: Sizes echo requests by the time they took (kept from call to call).
        self._sizer = EchoSizer(self.batch_size, self.timeout)

    # -- LogLikelihoodBackend -----------------------------------------------------------
    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        """Summed log-probability of every continuation of every request; raises
        :class:`~nlieval.backends.openai.ServerError` when a request fails for good."""
        return self.loglikelihood_scored_by(requests, progress)[0]

    def loglikelihood_scored_by(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> tuple[list[list[float]], list[str]]:
        """:meth:`loglikelihood` and, per request, how it was scored: ``"next-token"``,
        ``"echo"`` (``--top-logprobs 0``) or ``"echo (fallback: WHY)"``."""
        out = [[float("nan")] * len(req.continuations) for req in requests]
        for r, req in enumerate(requests):
            for j, cont in enumerate(req.continuations):
                if not cont:
                    raise ValueError(f"continuation {j} of request {r} is empty")
        left = [len(req.continuations) for req in requests]
        how = [ECHO if not self.top_logprobs else fallback(NEXT_TOKEN_OFF)] * len(requests)

        def settle(r: int, j: int, value: float) -> None:
            out[r][j] = value
            left[r] -= 1
            if left[r] == 0 and progress is not None:
                progress(1)

        todo = [(r, j) for r, req in enumerate(requests) for j in range(len(req.continuations))]
        if self.next_token_off is None and requests:
            todo = self._score_next_tokens(requests, todo, settle, how)
        prompts = []
        for r, j in todo:
            ctx = requests[r].context
            prompts.append(_Prompt(r, j, ctx + requests[r].continuations[j], len(ctx)))
        keys: dict[int, dict[tuple[Any, ...], int]] = {}

        def settle_echo(p: _Prompt, score: EchoScore) -> None:
            # Two options the server turned into one token sequence: which is which?
            seen = keys.setdefault(p.request, {})
            other = seen.setdefault(score.key, p.option)
            if other != p.option:
                conts = requests[p.request].continuations
                raise PromptLogprobsError(
                    f"the server at {self.api_base} tokenizes different options of one item "
                    f"({conts[other]!r}, {conts[p.option]!r}) into the same tokens"
                )
            settle(p.request, p.option, score.logprob)

        self._score_echo(prompts, settle_echo)
        return out, how

    # -- echo requests, sized by the time they take -------------------------------------
    def _score_echo(
        self, prompts: Sequence[_Prompt], settle: Callable[[_Prompt, EchoScore], None]
    ) -> None:
        """Score ``prompts`` by echo requests, at most ``concurrency`` at a time, each
        holding as many prompts as :class:`EchoSizer` says keeps it well under the
        timeout; a request of several prompts that times out is split and sent again. A
        failure cancels the requests in flight (their connections are closed)."""
        if not prompts:
            return
        sizer = self._sizer
        queue = deque(prompts)
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="echo")
        running: dict[Future[tuple[float, list[EchoScore]]], list[_Prompt]] = {}
        try:
            while queue or running:
                # Until one request has been timed, one alone: small, and a server that
                # answers badly is asked once, not `concurrency` times.
                room = self.concurrency if sizer.rates else 1
                while queue and len(running) < room:
                    ahead = [len(p.text) for p in itertools.islice(queue, sizer.most)]
                    batch = [queue.popleft() for _ in range(min(sizer.size(ahead), len(queue)))]
                    running[pool.submit(self._score_batch, batch, stop)] = batch
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in sorted(
                    done, key=lambda f: (running[f][0].request, running[f][0].option)
                ):
                    batch = running.pop(fut)
                    err = fut.exception()
                    chars = sum(len(p.text) for p in batch)
                    if isinstance(err, RequestTimeout) and len(batch) > 1:
                        # Smaller requests instead of the same one again.
                        sizer.timed_out(len(batch), chars)
                        self.counts["echo_splits"] += 1
                        queue.extendleft(reversed(batch))
                        continue
                    if isinstance(err, RequestTimeout):
                        raise RequestTimeout(
                            f"{err}: one prompt of {chars} characters takes the server more "
                            f"than --timeout {self.timeout:g} s with --concurrency "
                            f"{self.concurrency} requests in flight (--batch-size: requests "
                            "were already split down to one prompt); raise --timeout or "
                            "lower --concurrency",
                            status=err.status,
                            tries=err.tries,
                        ) from None
                    if err is not None:
                        raise err
                    seconds, scores = fut.result()
                    sizer.done(seconds, sum(sc.tokens for sc in scores), chars)
                    self.counts["echo_requests"] += 1
                    self.counts["echo_options"] += len(scores)
                    for p, score in zip(batch, scores, strict=True):
                        settle(p, score)
        finally:
            stop.set()  # requests in flight are cancelled, retries not yet made are not
            pool.shutdown(wait=True, cancel_futures=True)

    # -- one request per item -----------------------------------------------------------
    def _score_next_tokens(
        self,
        requests: Sequence[ScoreRequest],
        every: list[tuple[int, int]],
        settle: Callable[[int, int, float], None],
        how: list[str],
    ) -> list[tuple[int, int]]:
        """Score the items whose every option is one token after the context from one
        request per item; returns the pairs of ``every`` (all ``(request, option)``) left
        for echo requests.

        An item is scored one way or the other, never half and half: on a GPU a
        next-token log-prob and a prompt log-prob of the same token may differ in the
        last digits, and an item's options are compared with each other. ``how[r]`` is
        set to the way request ``r`` is scored."""
        plan = self._tokenize_all(requests)
        if plan is None:
            return every
        for r, ctx in enumerate(plan):
            how[r] = fallback(NOT_ONE_TOKEN) if ctx is None else fallback(NEXT_TOKEN_OFF)
        asks = [r for r, ctx in enumerate(plan) if ctx is not None]
        if not asks:
            self._switch_off(
                f"no item of {len(requests)} had every option one token after its context "
                "(--top-logprobs 0 says so from the start)"
            )
            return every
        rest = [(r, j) for r, j in every if plan[r] is None]
        batches = [asks[i : i + self.batch_size] for i in range(0, len(asks), self.batch_size)]
        asked = [[ctx for r in batch if (ctx := plan[r]) is not None] for batch in batches]
        results = self.iter_map(self._next_token_batch, asked)
        handled: set[int] = set()
        try:
            for b, tops in results:
                if isinstance(tops, _NoNextToken):
                    self._switch_off(str(tops))
                    break  # the batches not yet sent are cancelled; all go to echo
                if isinstance(tops, ServerError):
                    raise tops
                handled.add(b)
                self.counts["next_token_requests"] += 1
                for r, top in zip(batches[b], tops, strict=True):
                    ctx = plan[r]
                    assert ctx is not None
                    values = [top.get(token) for token in ctx[1]]
                    if any(v is None for v in values):  # an option not among the top K
                        self.counts["top_k_misses"] += 1
                        how[r] = fallback(TOP_K_MISS)
                        rest += [(r, j) for j in range(len(values))]
                        continue
                    how[r] = NEXT_TOKEN
                    self.counts["next_token_options"] += len(values)
                    for j, value in enumerate(values):
                        assert value is not None
                        settle(r, j, value)
        finally:
            results.close()
        for b, batch in enumerate(batches):
            if b not in handled:
                rest += [(r, j) for r in batch for j in range(len(requests[r].continuations))]
        return sorted(rest)

    def _tokenize_all(
        self, requests: Sequence[ScoreRequest]
    ) -> list[tuple[list[int], list[int]] | None] | None:
        """Per request, the context's token ids and each option's one token when every
        option's tokens are the context's plus exactly one (else None); None when the
        server cannot tokenize (then every option goes to echo)."""
        texts = []
        for req in requests:
            texts.append(req.context)
            texts.extend(req.context + cont for cont in req.continuations)
        ids: list[list[int]] = [[] for _ in texts]
        results = self.iter_map(self._tokenize, texts)
        try:
            for i, got in results:
                if isinstance(got, _NoNextToken):
                    self._switch_off(str(got))
                    return None
                if isinstance(got, ServerError):
                    raise got
                self.counts["tokenize_requests"] += 1
                ids[i] = got
        finally:
            results.close()
        plan: list[tuple[list[int], list[int]] | None] = []
        pos = 0
        for req in requests:
            ctx = ids[pos]
            fulls = ids[pos + 1 : pos + 1 + len(req.continuations)]
            # Exactly one token more, and the context's tokens unchanged: no token
            # straddles the boundary, so the echo rule and this one give one value.
            if len({tuple(f) for f in fulls}) < len(fulls):
                # Different option texts, one token sequence: the server's tokenizer cannot
                # be trusted to say which option a log-prob belongs to.
                raise PromptLogprobsError(
                    f"the server at {self.api_base} tokenizes different options of one item "
                    f"({', '.join(map(repr, req.continuations))}) into the same tokens"
                )
            if ctx and all(len(f) == len(ctx) + 1 and f[:-1] == ctx for f in fulls):
                plan.append((ctx, [f[-1] for f in fulls]))
            else:
                plan.append(None)
            pos += 1 + len(req.continuations)
        return plan

    def _tokenize(self, text: str, stop: threading.Event) -> list[int]:
        def parse(resp: httpx.Response, where: str) -> list[int]:
            try:
                body = resp.json()
            except ValueError:  # a proxy's page, a redirect: not a vLLM /tokenize
                raise _NoNextToken(
                    f"{where} answered HTTP {resp.status_code} with a body that is not JSON",
                    status=resp.status_code,
                ) from None
            tokens = body.get("tokens") if isinstance(body, dict) else None
            if (
                not isinstance(tokens, list)
                or not all(type(t) is int and t >= 0 for t in tokens)
                or (text and not tokens)
            ):
                raise _NoNextToken(f"{where} answered without token ids", status=resp.status_code)
            return tokens

        try:
            # add_special_tokens as for a text prompt on /completions (vLLM's default
            # there), so that the ids sent are the ones an echo request would score.
            payload = {"model": self.name, "prompt": text, "add_special_tokens": True}
            return self.request(payload, parse, stop, url=self.tokenize_url)
        except ServerError as err:
            # Any refusal (401/403 of a gateway that passes /v1 only, 404, 415, ...):
            # the server may still answer echo requests. Server faults (5xx, timeouts)
            # were retried and are reported as they are.
            if err.status is not None and 300 <= err.status < 500 and not err.retryable:
                raise _NoNextToken(str(err), status=err.status) from None
            raise

    def _next_token_batch(
        self, batch: Sequence[tuple[list[int], list[int]]], stop: threading.Event
    ) -> list[dict[int, float]]:
        payload: dict[str, Any] = {
            "model": self.name,
            "prompt": [ctx for ctx, _ in batch],
            "max_tokens": 1,
            "logprobs": self.top_logprobs,
            "temperature": 0,
            "return_tokens_as_token_ids": True,
        }
        wanted = sorted({t for _, options in batch for t in options})
        if len(wanted) <= MAX_LOGPROB_TOKEN_IDS:
            # vLLM (0.32 on) then returns exactly these tokens' log-probs, so no option
            # misses the top K; a server without it ignores the field (top K as usual).
            payload["logprob_token_ids"] = wanted

        def parse(resp: httpx.Response, where: str) -> list[dict[int, float]]:
            return self._parse_top(resp, where, len(batch))

        try:
            return self.request(payload, parse, stop)
        except ServerError as err:
            if err.status in (400, 422) and not isinstance(err, _NoNextToken):
                hint = (
                    f" (nlieval asks for --top-logprobs {self.top_logprobs}; vLLM allows up "
                    "to its --max-logprobs, 20 by default)"
                    if "logprob" in str(err).lower()
                    else ""
                )
                raise _NoNextToken(
                    f"the server refused the next-token request: {err}{hint}", status=err.status
                ) from None
            raise

    def _parse_top(self, resp: httpx.Response, where: str, n: int) -> list[dict[int, float]]:
        ordered = self._choices(resp, where, n)
        tops = []
        for choice in ordered:
            lp = choice.get("logprobs")
            top = lp.get("top_logprobs") if isinstance(lp, dict) else None
            # One generated position, and only that one (max_tokens 1, no echo).
            first = top[0] if isinstance(top, list) and len(top) == 1 else None
            if not isinstance(first, dict) or not first:
                raise _NoNextToken(
                    f"{where} answered without top log-probs for exactly one next token",
                    status=resp.status_code,
                )
            found: dict[int, float] = {}
            for key, value in first.items():
                m = _TOKEN_ID.fullmatch(key) if isinstance(key, str) else None
                if m is None:
                    raise _NoNextToken(
                        f"{where} names its top tokens by text ({clip(repr(key), 40)}), not "
                        "by id: it ignores return_tokens_as_token_ids",
                        status=resp.status_code,
                    )
                try:
                    found[int(m.group(1))] = checked_logprob(value)
                except ImpossibleLogprob as err:
                    bad = PromptLogprobsError(
                        f"the server at {self.api_base} {err} for {key}",
                        status=resp.status_code,
                    )
                    raise TryAgain(bad, "impossible log-prob") from None
            tops.append(found)
        return tops

    def _switch_off(self, why: str) -> None:
        with self._lock:
            if self.next_token_off is None:
                self.next_token_off = why
                log.warning(
                    "one request per item is off, each option is scored by an echo request: %s",
                    why,
                )

    # -- one request --------------------------------------------------------------------
    def _score_batch(
        self, batch: Sequence[_Prompt], stop: threading.Event
    ) -> tuple[float, list[EchoScore]]:
        """The seconds the answer took (its try alone) and the batch's scores."""
        while True:
            max_tokens = self.max_tokens
            payload: dict[str, Any] = {
                "model": self.name,
                "prompt": [p.text for p in batch],
                "echo": True,
                "logprobs": 1,
                "max_tokens": max_tokens,
                "temperature": 0,
                # vLLM then gives each prompt's token ids: two options of one item must
                # not be the same tokens (a server without it ignores the field).
                "return_token_ids": True,
            }

            def parse(
                resp: httpx.Response, where: str, n: int = max_tokens
            ) -> tuple[float, list[EchoScore]]:
                seconds = float(resp.extensions.get("seconds", 0.0))
                return seconds, self._parse(resp, where, batch, n)

            try:
                # Several prompts that time out are split by the caller, not sent again.
                return self.request(payload, parse, stop, retry_timeouts=len(batch) == 1)
            except ServerError as err:
                if max_tokens > 0 or err.status not in (400, 422):
                    raise
                with self._lock:
                    if self.max_tokens == 0:
                        log.warning(
                            "%s refused max_tokens=0 (%s); asking for 1 token and dropping it",
                            self.url,
                            err,
                        )
                    self.max_tokens = 1

    def _parse(
        self, resp: httpx.Response, where: str, batch: Sequence[_Prompt], max_tokens: int
    ) -> list[EchoScore]:
        ordered = self._choices(resp, where, len(batch))
        scores = []
        for p, choice in zip(batch, ordered, strict=True):
            try:
                scores.append(echo_score(choice, p.text, p.boundary, max_tokens))
            except ImpossibleLogprob as err:
                # Retried: a second answer may be sound; a server that keeps lying stops
                # the run after the retries, with what was scored before kept.
                bad = PromptLogprobsError(
                    f"the server at {self.api_base} {err}", status=resp.status_code
                )
                raise TryAgain(bad, "impossible log-prob") from None
            except ValueError as err:  # RawLogits too: a setting of the server
                raise PromptLogprobsError(
                    f"the server at {self.api_base} {err}", status=resp.status_code
                ) from None
        return scores

    def _choices(self, resp: httpx.Response, where: str, n: int) -> list[Any]:
        """The answer's choices in prompt order, one per prompt (else an error), from
        the model asked for."""
        body = _json(resp, where)
        self.check_model(body, where)
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            got = len(choices) if isinstance(choices, list) else "no"
            raise PromptLogprobsError(
                f"the server at {self.api_base} returned {got} choices for {n} "
                f"prompts: {clip(resp.text)!r}",
                status=resp.status_code,
            )
        ordered = _by_index(choices)
        if ordered is None:
            raise PromptLogprobsError(
                f"the server at {self.api_base} returned choices whose indices are not 0..{n - 1}",
                status=resp.status_code,
            )
        return ordered

    def __enter__(self) -> CompletionsLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _json(resp: httpx.Response, where: str) -> Any:
    try:
        return resp.json()
    except ValueError:
        raise ServerError(
            f"{where}: the answer is not JSON: {clip(resp.text)!r}", status=resp.status_code
        ) from None


def _by_index(choices: list[Any]) -> list[Any] | None:
    """Choices in prompt order: by their ``index`` when every one has one, else as sent."""
    if not all(isinstance(c, dict) for c in choices):
        return None
    idx = [c.get("index") for c in choices]
    if all(i is None for i in idx):
        return choices
    if sorted(i if isinstance(i, int) else -1 for i in idx) != list(range(len(choices))):
        return None
    return sorted(choices, key=lambda c: int(c["index"]))
