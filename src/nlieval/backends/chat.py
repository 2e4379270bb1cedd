"""One way to get a chat model, whatever serves it.

``load_generator("smollm2-135m")`` loads a transformers chat model (alias, folder, GGUF
file or hub id) and answers through its chat template; with ``api_base`` it talks to any
OpenAI-compatible server (vLLM, SGLang, Ollama, hosted APIs) instead.
Both return a :class:`~nlieval.backends.base.GenerationBackend`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .base import GenerationBackend


@dataclass(frozen=True)
class ServerOptions:
    """How to talk to an OpenAI-compatible server.

    ``api_key`` is read from the environment variable named by ``api_key_env`` (never
    written into run folders). ``timeout`` is per request in seconds; a failed request
    (timeout, dropped connection, HTTP 408/409/429/5xx) is retried ``retries`` times with
    exponential back-off starting at ``backoff`` seconds; at most ``concurrency``
    requests are in flight at once.
    """

    api_base: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0
    concurrency: int = 8


def load_generator(
    model: str,
    *,
    server: ServerOptions | None = None,
    dtype: str = "auto",
    device: str = "auto",
) -> GenerationBackend:
    """A chat backend for ``model``: local transformers, or ``server`` when given.

    >>> load_generator("gpt-4o-mini", server=ServerOptions("http://localhost:8000/v1")).name
    ... # doctest: +SKIP
    'gpt-4o-mini'
    """
    if server is not None:
        from .openai import OpenAIChat

        return OpenAIChat(
            model,
            server.api_base,
            api_key=os.environ.get(server.api_key_env),
            timeout=server.timeout,
            retries=server.retries,
            backoff=server.backoff,
            concurrency=server.concurrency,
        )
    from .generator import LocalChat

    return LocalChat(model, dtype=dtype, device=device)
