"""Argument types shared by every ``nlieval`` subcommand."""

from __future__ import annotations

import argparse
from typing import Any

from ..backends.chat import ServerOptions, load_generator


def csv_list(text: str) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")``.

    >>> csv_list("snli, hans")
    ('snli', 'hans')
    """
    return tuple(x.strip() for x in text.split(",") if x.strip())


def int_list(text: str) -> tuple[int, ...]:
    """``"0,1,5"`` -> ``(0, 1, 5)``.

    >>> int_list("0,5")
    (0, 5)
    """
    try:
        return tuple(int(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def shot_counts(text: str) -> tuple[int, ...]:
    """``"0,5"`` -> ``(0, 5)``: shot counts, none negative.

    >>> shot_counts("0,3")
    (0, 3)
    """
    values = int_list(text)
    if any(k < 0 for k in values):
        raise argparse.ArgumentTypeError(f"shot counts are 0 or more, got {text!r}")
    return values


def api_base(text: str) -> str:
    """An OpenAI-compatible server's base URL, checked before any folder is made.

    >>> api_base("http://localhost:8000/v1")
    'http://localhost:8000/v1'
    """
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"must start with http:// or https://, got {text!r}")
    return text


def positive_int(text: str) -> int:
    """An integer of at least 1 (counts, bins, token limits).

    >>> positive_int("5")
    5
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seeds(text: str) -> tuple[int, ...]:
    """A count (``"3"`` = seeds 0, 1, 2) or a list (``"1,5,7"``; ``"7,"`` is seed 7 alone).

    >>> seeds("3"), seeds("7,")
    ((0, 1, 2), (7,))
    """
    if "," in text:
        return int_list(text)
    try:
        return tuple(range(positive_int(text)))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes a positive count or a comma-separated list, got {text!r}"
        ) from None


def add_data_dir(p: argparse.ArgumentParser) -> None:
    """``--data-dir``: where the official benchmark files are."""
    p.add_argument("--data-dir", default=None, help="folder of official files [$NLIEVAL_DATA_DIR]")


def add_generator_args(p: argparse.ArgumentParser, default_model: str) -> None:
    """The flags that pick a chat model: local transformers, or an OpenAI-compatible server."""
    p.add_argument(
        "--model",
        default=default_model,
        help=f"chat model: alias, folder, .gguf or hub id; with --api-base the server's "
        f"model name [{default_model}]",
    )
    p.add_argument(
        "--api-base",
        default=None,
        type=api_base,
        help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, SGLang, Ollama)",
    )
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request [60]")
    p.add_argument("--retries", type=int, default=4, help="retries of a failed request [4]")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight [8]")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--device", default="auto")


def generator_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~nlieval.backends.base.GenerationBackend` the flags of
    :func:`add_generator_args` ask for."""

    server = None
    if args.api_base:
        server = ServerOptions(
            args.api_base,
            api_key_env=args.api_key_env,
            timeout=args.timeout,
            retries=args.retries,
            concurrency=args.concurrency,
        )
    return load_generator(args.model, server=server, dtype=args.dtype, device=args.device)
