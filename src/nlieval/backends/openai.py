"""Chat models behind any OpenAI-compatible server (vLLM, SGLang, Ollama, hosted APIs).

:class:`OpenAIChat` sends ``POST {api_base}/chat/completions`` with httpx2 (the
maintained fork of httpx), at most ``concurrency`` requests at a time. A request that
times out, loses its connection or gets HTTP 408/409/429/5xx, or (chat) an HTTP 200
whose body is not JSON (a proxy's error page, a body cut short), is tried again with
exponential back-off and jitter (the server's ``Retry-After`` wins when it sends one);
each such fault is counted in :attr:`ServerClient.faults`. Other 4xx answers and JSON of
the wrong shape fail at once. A request that fails for good becomes a
:class:`ServerError`.

What a server can send is bounded: a request ends ``timeout`` seconds after it was sent,
however the answer trickles in (httpx's own timeout is per read, so the requests run as
asyncio tasks on one event loop under :func:`asyncio.timeout`; a request abandoned by its
caller is cancelled, which closes its connection); a body is read in pieces and refused
once it is larger than :func:`body_limit` allows for the request; a body nested too deep
to parse, or an answer naming another model than the one asked for
(:class:`ModelMismatchError`), is refused with one line.

:meth:`OpenAIChat.iter_generate` yields ``(index, answer or ServerError)`` as answers
arrive, so a caller keeps every answer that did arrive when the server goes down;
:meth:`OpenAIChat.generate` (the :class:`~nlieval.backends.base.GenerationBackend`
method) returns them all in order, or raises the first failure. The HTTP side (pool,
retries, back-off, concurrency) is :class:`ServerClient`, shared with the log-likelihood
backend of :mod:`.completions`.

Against a running vLLM: ``OpenAIChat("qwen2.5-7b-instruct", "http://localhost:8000/v1")
.generate([[{"role": "user", "content": "Say hi."}]])`` returns ``['Hi!']`` or the like.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import email.utils
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2 as httpx
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    stop_after_attempt,
    stop_any,
    stop_when_event_set,
)

from ..ground import SettingError
from ..settings import setting
from .base import Generation, Messages, Stop, cut_answer

log = logging.getLogger(__name__)

T = TypeVar("T")
X = TypeVar("X")

#: Statuses worth another try: request timeout, conflict (some servers use it for a busy
#: slot), rate limit, and every server-side error.
RETRY_STATUSES = frozenset({408, 409, 429})

#: The largest ``--timeout``: a socket cannot wait longer than the platform's time_t
#: allows (``inf`` or 1e300 overflow it), and a request that needs more than a day is a
#: hung server, not a slow one.
MAX_TIMEOUT = 86400.0

#: The smallest bound on an answer's size, whatever the request (room for an error page
#: or a proxy's HTML).
BODY_FLOOR = 1 << 20

#: Bytes of answer allowed per token a request may make a server write about: every
#: character sent (each may be a prompt token that an echo request answers with its text,
#: offset, log-prob and top log-probs, about 100 bytes in vLLM's JSON) and every token
#: it may generate, times its top log-probs. Ten times what vLLM sends, so only a broken
#: or hostile server reaches it.
BODY_BYTES_PER_TOKEN = 1024


class ServerError(RuntimeError):
    """A request to a server that failed for good.

    ``status`` is the HTTP status (None: no HTTP answer: timeout, refused or dropped
    connection, malformed body); ``retryable`` says whether the failure was of a kind
    that is retried (the server may be back later); ``tries`` counts the requests made.

    >>> str(ServerError("HTTP 400: bad request", status=400))
    'HTTP 400: bad request'
    """

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, tries: int = 1
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.tries = tries


class ModelMismatchError(ValueError):
    """An answer that names another model than the one asked for: its numbers or text are
    not the asked model's (a proxy routing to another model, a wrong port). A ValueError:
    the same for every request, so the run stops with one line at once.

    >>> str(ModelMismatchError("POST u", "llama-3-8b", "llama-3-70b"))  # doctest: +ELLIPSIS
    "POST u: the server answered as model 'llama-3-70b', not the 'llama-3-8b' asked for..."
    """

    def __init__(self, where: str, asked: str, answered: str) -> None:
        super().__init__(
            f"{where}: the server answered as model {answered!r}, not the {asked!r} asked "
            "for; check --api-base and --model (the server's /v1/models lists its names)"
        )
        self.asked = asked
        self.answered = answered


class TryAgain(Exception):
    """One failed try that may be tried again: a parse function raises it for an answer
    that a second request may get right (a body cut short, an impossible log-prob);
    ``kind`` names the fault in :attr:`ServerClient.faults`."""

    def __init__(self, error: ServerError, kind: str, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.kind = kind
        self.retry_after = retry_after


def api_base_url(text: str) -> str:
    """An OpenAI-compatible server's base URL, checked before anything is made.

    >>> api_base_url("http://localhost:8000/v1")
    'http://localhost:8000/v1'
    >>> api_base_url("http://:8000/v1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --api-base needs a host, e.g. http://localhost:8000/v1, got 'http://:8000/v1'
    """
    if not text.startswith(("http://", "https://")):
        raise SettingError(
            "api_base", f"--api-base must start with http:// or https://, got {text!r}"
        )
    # A URL the HTTP client would refuse at the first request (no host, a port that is
    # no number) is refused here, before any model or data is loaded.
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as err:
        raise SettingError("api_base", f"--api-base is not a URL ({err}), got {text!r}") from None
    if any(c.isspace() for c in text):
        raise SettingError("api_base", f"--api-base is not a URL (it holds a space), got {text!r}")
    if url.port is not None and not 0 < url.port < 65536:
        raise SettingError(
            "api_base", f"--api-base is not a URL (ports are 1 to 65535), got {text!r}"
        )
    if not url.host:
        raise SettingError(
            "api_base", f"--api-base needs a host, e.g. http://localhost:8000/v1, got {text!r}"
        )
    return text


def timeout_seconds(text: str) -> float:
    """A ``--timeout``: a finite number of seconds above 0, at most :data:`MAX_TIMEOUT`.

    >>> timeout_seconds("2.5")
    2.5
    >>> timeout_seconds("inf")
    Traceback (most recent call last):
    ValueError: expected a finite number of seconds above 0 and at most 86400, got 'inf'
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT:  # nan and inf fail too
        raise ValueError(
            f"expected a finite number of seconds above 0 and at most {MAX_TIMEOUT:g}, got {text!r}"
        )
    return value


def body_limit(payload: dict[str, Any]) -> int:
    """The most bytes an answer to ``payload`` may have: :data:`BODY_FLOOR` plus
    :data:`BODY_BYTES_PER_TOKEN` per character sent and per token the request may
    generate (``max_tokens`` per prompt, times 1 + its top ``logprobs``).

    >>> body_limit({"prompt": "hi", "max_tokens": 16}) - BODY_FLOOR  # (34 characters + 16) KiB
    51200
    """
    sent = len(json.dumps(payload))
    prompt = payload.get("prompt")
    many = isinstance(prompt, list) and bool(prompt) and not isinstance(prompt[0], int)
    prompts = len(prompt) if isinstance(prompt, list) and many else 1
    generated = int(payload.get("max_tokens") or 0) * prompts
    top = payload.get("logprobs")
    per_token = 1 + (top if isinstance(top, int) and not isinstance(top, bool) else 0)
    return BODY_FLOOR + BODY_BYTES_PER_TOKEN * (sent + generated * per_token)


@dataclass(frozen=True)
class ServerOptions:
    """How to talk to an OpenAI-compatible server: the one carrier of server settings,
    whatever the command or the endpoint.

    ``api_key`` is read from the environment variable named by ``api_key_env`` (never
    written into run folders). ``timeout`` is per request in seconds (the whole answer,
    not each read: at most :data:`MAX_TIMEOUT`); a failed request
    (timeout, dropped connection, HTTP 408/409/429/5xx) is retried ``retries`` times,
    waiting ``backoff * 2**n`` seconds (n = 0, 1, ...; times a random factor in [0.5, 1],
    at most ``max_backoff``) or what ``Retry-After`` says (at most ``max_retry_after``);
    at most ``concurrency`` requests are in flight at once.

    >>> ServerOptions("http://localhost:8000/v1").timeout
    60.0
    >>> ServerOptions("localhost:8000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --api-base must start with http:// or https://, got 'localhost:8000'
    """

    api_base: str = setting(
        help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, SGLang); "
        "a --model without a prefix is then the server's model name",
        parse=api_base_url,
    )
    api_key_env: str = setting("OPENAI_API_KEY", help="variable holding the API key")
    timeout: float = setting(
        60.0,
        help="seconds per request, from sending it to the answer's last byte",
        parse=timeout_seconds,
    )
    retries: int = setting(4, help="retries of a failed request")
    concurrency: int = setting(8, help="requests in flight")
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float = 120.0

    def __post_init__(self) -> None:
        api_base_url(self.api_base)
        if self.concurrency < 1 or self.retries < 0:
            raise ValueError("concurrency must be >= 1 and retries >= 0")
        timeout_seconds(str(self.timeout))


class ServerClient:
    """The HTTP side shared by every backend that talks to an OpenAI-compatible server:
    one connection pool, retries with back-off and jitter, ``Retry-After``, and at most
    ``concurrency`` requests in flight (the settings of :class:`ServerOptions`).

    ``server`` is a :class:`ServerOptions` or just the base URL; keyword ``settings``
    replace fields of it (``timeout=5``). ``endpoint`` is appended to ``api_base``
    (``/chat/completions``, ``/completions``). ``api_key`` (default: the variable named
    by ``api_key_env``) goes into an ``Authorization: Bearer`` header only when there is
    one (local servers need none). ``transport`` and ``sleep`` (called with each delay
    instead of waiting) are for tests.

    Requests run on an event loop of their own (a thread started by the first request),
    so that :func:`asyncio.timeout` bounds each one as a whole and a request abandoned by
    its caller (``stop``) is cancelled: its connection is closed, and vLLM then aborts it.
    """

    #: The path appended to ``api_base`` when no ``endpoint`` is given (each subclass has
    #: its own).
    ENDPOINT = ""

    def __init__(
        self,
        model: str,
        server: ServerOptions | str,
        endpoint: str | None = None,
        *,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
        **settings: Any,
    ) -> None:
        opts = server if isinstance(server, ServerOptions) else ServerOptions(server)
        if settings:
            opts = dataclasses.replace(opts, **settings)
        self.options = opts
        self.name = model
        self.api_base = opts.api_base.rstrip("/")
        self.url = self.api_base + (self.ENDPOINT if endpoint is None else endpoint)
        self.timeout = opts.timeout
        self.retries = opts.retries
        self.backoff = opts.backoff
        self.concurrency = opts.concurrency
        self.max_backoff = opts.max_backoff
        self.max_retry_after = opts.max_retry_after
        self._sleep = sleep
        self._random = random.Random()  # jitter only: spreads retries of parallel requests
        self._faults: Counter[str] = Counter()
        self._faults_lock = threading.Lock()
        headers = {"Content-Type": "application/json"}
        if api_key is None:
            api_key = os.environ.get(opts.api_key_env)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        # httpx2, pydantic's maintained fork of httpx: httpx's httpcore 1.0.9 leaks a
        # pool slot (and its socket) for good when a request is cancelled (a caller's
        # stop, our own timeout) just after the pool gave it a new connection
        # (encode/httpcore#1093, fixed only in the fork), and with a pool limit of
        # `concurrency` a few such leaks leave every later request waiting until it times
        # out. For the same reason the limit on requests in flight is our semaphore's,
        # not the pool's: whatever a cancellation leaves behind costs an idle object, never
        # a turn. Keep-alive: one connection per request in flight.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=opts.concurrency)
        self._in_flight = asyncio.Semaphore(opts.concurrency)
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(opts.timeout),
            limits=limits,
            transport=transport,
            # Plain http:// (local servers) never uses TLS (redirects are not followed), so
            # skip loading the CA bundle, which takes up to a second on a busy machine.
            verify=opts.api_base.startswith("https://"),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()
        self._closed = False

    @property
    def faults(self) -> dict[str, int]:
        """Failed tries that were tried again, by kind (``"HTTP 503"``, ``"not JSON"``,
        ``"timeout"``, ...), since this client was made.

        >>> ServerClient("m", "http://localhost:1/v1", "/chat/completions").faults
        {}
        """
        with self._faults_lock:
            return dict(self._faults)

    # -- many requests ------------------------------------------------------------------
    def iter_map(
        self, fn: Callable[[X, threading.Event], T], inputs: Sequence[X]
    ) -> Generator[tuple[int, T | ServerError], None, None]:
        """``(index, fn(input, stop))`` for each input as soon as it is done, at most
        ``concurrency`` at a time; a :class:`ServerError` raised by ``fn`` is yielded in
        place of its result (any other exception is raised).

        Closing the iterator early (``break``) cancels the calls not yet started and sets
        ``stop`` for those running; it returns once they have finished.
        """
        if not inputs:
            return
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai")
        futures: dict[Future[T], int] = {}
        try:
            for i, x in enumerate(inputs):
                futures[pool.submit(fn, x, stop)] = i
            pending: set[Future[T]] = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                # Report in submission order within a batch: runs are easier to follow.
                for fut in sorted(done, key=futures.__getitem__):
                    err = fut.exception()
                    if err is None:
                        yield futures[fut], fut.result()
                    elif isinstance(err, ServerError):
                        yield futures[fut], err
                    else:
                        raise err
        finally:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)

    # -- one request ------------------------------------------------------------------
    def request(
        self,
        payload: dict[str, Any],
        parse: Callable[[httpx.Response, str], T],
        stop: threading.Event | None = None,
        url: str | None = None,
        *,
        retry_timeouts: bool = True,
    ) -> T:
        """POST ``payload`` to ``url`` (default: :attr:`url`) with retries and return
        ``parse(response, where)`` of the first answer with a status below 400; raises
        :class:`ServerError`.

        ``parse`` raises :class:`ServerError` for a body of the wrong shape (not
        retried). ``stop``, once set, ends the retries (the last failure is raised) and
        cancels the request in flight. ``retry_timeouts=False``: a request that runs
        past the timeout raises :class:`RequestTimeout` at once (a caller that can make
        the request smaller does that instead of sending it again).
        """
        # tenacity runs the loop; what is ours: which failures are retried (TryAgain), the
        # delay (Retry-After or jittered back-off), the fault counts, and a caller's stop.
        tries = 0
        last: list[TryAgain] = []

        def attempt() -> T:
            nonlocal tries
            tries += 1
            try:
                return self._post(payload, parse, url or self.url, stop)
            except TryAgain as again:
                if again.kind == "timeout" and not retry_timeouts:
                    with self._faults_lock:
                        self._faults["timeout"] += 1
                    raise RequestTimeout(str(again.error), retryable=True) from None
                raise

        def wait(state: RetryCallState) -> float:
            return self._delay(state.attempt_number, last[-1].retry_after)

        def before_sleep(state: RetryCallState) -> None:
            failed = last[-1]
            with self._faults_lock:
                self._faults[failed.kind] += 1
            delay = state.next_action.sleep if state.next_action else 0.0
            log.info("%s; retry %d/%d in %.2f s", failed.error, tries, self.retries, delay)

        def pause(seconds: float) -> None:
            if self._sleep is not None:
                self._sleep(seconds)
            elif stop is not None:
                stop.wait(seconds)  # wakes at once when the caller stops (Ctrl-C, break)
            else:
                time.sleep(seconds)
            if stop is not None and stop.is_set():
                err = last[-1].error
                raise ServerError(
                    f"{err} (stopped after {tries} tries)",
                    status=err.status,
                    retryable=True,
                    tries=tries,
                )

        def retried(state: RetryCallState) -> bool:
            error = state.outcome.exception() if state.outcome else None
            if isinstance(error, TryAgain):
                last.append(error)
                return True
            return False

        halt = stop_after_attempt(self.retries + 1)
        retrying = Retrying(
            retry=retried,
            stop=halt if stop is None else stop_any(halt, stop_when_event_set(stop)),
            wait=wait,
            sleep=pause,
            before_sleep=before_sleep,
        )
        try:
            return retrying(attempt)
        except RetryError:
            err = last[-1].error
            # A timeout stays one by its type: a caller may then make its request smaller.
            kind = RequestTimeout if last[-1].kind == "timeout" else ServerError
            raise kind(
                f"{err} (gave up after {tries} tries)",
                status=err.status,
                retryable=True,
                tries=tries,
            ) from None
        except ServerError as err:
            err.tries = tries
            raise

    def _delay(self, tries: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        # "Equal jitter": at least half the exponential step, so parallel requests that
        # failed together do not come back together.
        step: float = min(self.max_backoff, self.backoff * 2 ** (tries - 1))
        return step * (0.5 + 0.5 * self._random.random())

    def _post(
        self,
        payload: dict[str, Any],
        parse: Callable[[httpx.Response, str], T],
        url: str,
        stop: threading.Event | None = None,
    ) -> T:
        where = f"POST {url}"
        loop = self._running_loop()  # first: a closed client makes no coroutine to leak
        fetch = self._fetch(url, payload, body_limit(payload), where)
        future = asyncio.run_coroutine_threadsafe(fetch, loop)
        while True:
            try:
                # Short waits only when a caller may stop us: then it is noticed at once.
                resp = future.result(timeout=None if stop is None else 0.05)
                break
            except concurrent.futures.TimeoutError:
                # Our own deadline is raised inside _fetch as TryAgain: this is the wait.
                if stop is not None and stop.is_set():
                    future.cancel()  # closes the connection: the server may abort it
                    raise ServerError(f"{where}: stopped", retryable=True) from None
        try:
            status = resp.status_code
            if status >= 400:
                error = ServerError(
                    f"{where}: HTTP {status}: {_server_message(resp)}",
                    status=status,
                    retryable=status in RETRY_STATUSES or status >= 500,
                )
                if error.retryable:
                    after = _retry_after(resp.headers.get("retry-after"))
                    raise TryAgain(error, f"HTTP {status}", after)
                raise error
            return parse(resp, where)
        except RecursionError:
            # json's parser counts its depth against the recursion limit: a body of 10^5
            # nested brackets is a server's fault, not a traceback.
            raise ServerError(
                f"{where}: the answer is JSON nested too deep to read: {clip(resp.text, 60)!r}",
                status=resp.status_code,
            ) from None

    async def _fetch(self, url: str, payload: dict[str, Any], limit: int, where: str) -> Any:
        """The answer to one POST as an :class:`httpx.Response` whose body is read: within
        :attr:`timeout` seconds in all, and at most ``limit`` bytes (after decoding)."""
        began = time.monotonic()
        try:
            async with (
                asyncio.timeout(self.timeout),  # queueing for a turn included
                self._in_flight,
                self._client.stream("POST", url, json=payload) as resp,
            ):
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise _too_large(where, limit, f"its Content-Length is {declared}")
                body = bytearray()
                async for piece in resp.aiter_bytes():
                    body += piece
                    if len(body) > limit:
                        raise _too_large(where, limit, "reading stopped there")
                # The body as read (decoded): no encoding or length left to apply.
                headers = [
                    (k, v)
                    for k, v in resp.headers.multi_items()
                    if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
                ]
                return httpx.Response(
                    resp.status_code,
                    headers=headers,
                    content=bytes(body),
                    request=resp.request,
                    # The time this try took (retries and back-off not counted).
                    extensions={"seconds": time.monotonic() - began},
                )
        except (TimeoutError, httpx.TimeoutException):
            raise TryAgain(
                ServerError(
                    f"{where}: no answer within {self.timeout:g} s (--timeout)",
                    retryable=True,
                ),
                "timeout",
            ) from None
        except httpx.RemoteProtocolError as err:
            # A dropped connection: the server closed it without (a whole) answer.
            raise TryAgain(
                ServerError(f"{where}: connection dropped ({err})", retryable=True),
                "connection dropped",
            ) from None
        except httpx.NetworkError as err:
            raise TryAgain(
                ServerError(f"{where}: connection failed ({err})", retryable=True),
                "connection failed",
            ) from None
        except httpx.DecodingError as err:
            raise ServerError(f"{where}: the answer cannot be decoded ({err})") from None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the requests run on, started by the first request."""
        with self._loop_lock:
            if self._closed:
                # Its connections are closed for good: a request now would fail deep in
                # httpx; the run that made it has ended.
                raise RuntimeError(
                    f"the client of {self.name!r} at {self.url} was closed (a run closes "
                    "the backends it made): make another one"
                )
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="openai-io", daemon=True)
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def check_model(self, body: Any, where: str) -> None:
        """Raise :class:`ModelMismatchError` when an answer's ``model`` names another
        model than :attr:`name`. An answer without the field passes (some servers leave
        it out), and so does a dated snapshot of the name asked for (OpenAI answers
        ``gpt-4o`` as ``gpt-4o-2024-08-06``; vLLM and SGLang answer with the name asked).

        >>> ServerClient("gpt-4o", "http://h:1/v1").check_model(
        ...     {"model": "gpt-4o-2024-08-06"}, "POST u")
        """
        answered = body.get("model") if isinstance(body, dict) else None
        if answered is None or answered == self.name:
            return
        if isinstance(answered, str) and re.fullmatch(
            re.escape(self.name) + r"-\d[\d-]*", answered
        ):
            return
        raise ModelMismatchError(where, self.name, clip(str(answered), 120))

    # -- lifetime ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the connections and stop the event loop of the requests."""
        with self._loop_lock:
            loop, thread = self._loop, self._loop_thread
            self._loop = self._loop_thread = None
            self._closed = True
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):  # closing: a failure here changes nothing
            asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()


class OpenAIChat(ServerClient):
    """A :class:`~nlieval.backends.base.GenerationBackend` over an OpenAI-compatible API
    (``POST {api_base}/chat/completions``); the settings are :class:`ServerOptions`.

    >>> chat = OpenAIChat("llama3.2", "http://localhost:11434/v1", concurrency=4)
    >>> chat.name, chat.url, chat.concurrency
    ('llama3.2', 'http://localhost:11434/v1/chat/completions', 4)
    >>> with OpenAIChat("fake-model", fake_server) as chat:  # the tests' fake server
    ...     chat.generate([[{"role": "user", "content": "Say hi."}]])
    ['hello']
    """

    ENDPOINT = "/chat/completions"
    #: Any number of conversations per call (``concurrency`` requests in flight), each
    #: answer yielded as it arrives; stop strings go in the request's ``stop``.
    generation = Generation(batch=None, streaming=True, stop=True)

    # -- GenerationBackend ------------------------------------------------------------
    def generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | None = None,
    ) -> list[str]:
        """One answer per conversation, in order; raises the first :class:`ServerError`
        (use :meth:`iter_generate` to keep the answers that did arrive)."""
        answers: list[str | None] = [None] * len(conversations)
        for i, answer in self.iter_generate(
            conversations, max_new_tokens, temperature, seed, stop=stop
        ):
            if isinstance(answer, ServerError):
                raise answer
            answers[i] = answer
        return [a if a is not None else "" for a in answers]

    def iter_generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | None = None,
    ) -> Iterator[tuple[int, str | ServerError]]:
        """``(index, answer)`` for each conversation as soon as it is done, where a request
        that failed for good gives its :class:`ServerError` instead of the answer; each
        answer ends where ``stop`` says (see :meth:`complete`).

        Closing the iterator early (``break``) cancels the requests not yet sent and
        stops retries of those in flight; it returns once they have finished.
        """

        def one(conv: Messages, halt: threading.Event) -> str:
            return self.complete(conv, max_new_tokens, temperature, seed, halt, ends=stop)

        return self.iter_map(one, conversations)

    # -- one request ------------------------------------------------------------------
    def complete(
        self,
        messages: Messages,
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        stop: threading.Event | None = None,
        *,
        ends: Stop | None = None,
    ) -> str:
        """The answer to one conversation, with retries; raises :class:`ServerError`.

        ``stop``, once set, ends the retries (the last failure is raised). ``ends``'
        strings go in the request's ``stop`` field, and the answer is cut here too (a
        server may ignore the field), its rule applied to the text that came
        (:func:`~nlieval.backends.base.cut_answer`).
        """
        payload: dict[str, Any] = {
            "model": self.name,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_new_tokens,
            "temperature": temperature,
            "seed": seed,
        }
        if ends is not None and ends.strings:
            payload["stop"] = list(ends.strings)
        return cut_answer(self.request(payload, self._answer_text, stop), ends)

    def _answer_text(self, resp: httpx.Response, where: str) -> str:
        return _answer_text(resp, where, self.check_model)

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _answer_text(resp: httpx.Response, where: str, check_model: Callable[[Any, str], None]) -> str:
    """The first choice's message content; a body that is not JSON is tried again (a
    proxy's error page or a body cut short: the next try may be fine), JSON of another
    shape is a ServerError, and ``check_model(body, where)`` checks the model named."""
    try:
        body = resp.json()
    except ValueError:
        error = ServerError(
            f"{where}: the answer is not JSON: {clip(resp.text)!r}",
            status=resp.status_code,
            retryable=True,
        )
        raise TryAgain(error, "not JSON") from None
    check_model(body, where)
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ServerError(
            f"{where}: the answer has no choices: {clip(resp.text)!r}", status=resp.status_code
        )
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise ServerError(
            f"{where}: the first choice has no message: {clip(resp.text)!r}",
            status=resp.status_code,
        )
    content = message.get("content")
    # null content (e.g. all tokens spent on reasoning) is an empty answer, not a fault.
    return "" if content is None else str(content)


class RequestTimeout(ServerError):
    """A request that ran past the timeout, raised at once when the caller asked for no
    retries of timeouts (it sends smaller requests instead)."""


def _too_large(where: str, limit: int, how: str) -> ServerError:
    return ServerError(
        f"{where}: the answer is too large: more than the {limit} bytes this request can "
        f"need ({how}; the bound is nlieval.backends.openai.body_limit)"
    )


def _server_message(resp: httpx.Response) -> str:
    """What the server said about an error: OpenAI's ``{"error": {"message"}}``, FastAPI's
    ``{"detail"}``, or the start of the body."""
    try:
        body = resp.json()
    except ValueError:
        return clip(resp.text) or resp.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message")))
        if isinstance(err, dict) and "message" in err:
            return clip(str(err["message"]))
        if err is not None:
            return clip(str(err))
    return clip(resp.text)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date); None if absent.

    >>> _retry_after("2"), _retry_after(None), _retry_after("soon")
    (2.0, None, None)
    """
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def clip(text: str, n: int = 300) -> str:
    """``text`` on one line, cut to ``n`` characters (for messages quoting a server).

    >>> clip("a\\n b  c", 3)
    'a b...'
    """
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."
