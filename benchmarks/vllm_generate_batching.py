"""``nlieval generate`` on vLLM in process: engine calls and seconds, one premise per call
(how the generation loop drove vLLM before it read the engine's declaration) vs all the
premises of a chunk in one ``LLM.generate`` (what ``VLLMChat`` declares now).

Runs :func:`nlieval.metainference.generated.generate_items` twice in one process on the
same started engine: once through a wrapper that declares nothing (so it is asked one
conversation at a time, as before), once through :class:`VLLMChat` itself. Prints the
number of ``LLM.generate`` calls, wall seconds, and whether both folders' ``items.jsonl``
(the hypotheses parsed from the answers) are the same bytes. Run it in the vLLM
environment (``scripts/setup_vllm.sh``):

    NLIEVAL_DATA_DIR=../shared/data VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 \
        .venv-vllm/bin/python \
        benchmarks/vllm_generate_batching.py --limit 30
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nlieval.backends import ChatModel, Generation, stand_in
from nlieval.backends.vllm_engine import VLLMChat, VLLMOptions
from nlieval.metainference.generated import ITEMS, GenerateConfig, generate_items


class OneAtATime:
    """The chat model as the generation loop saw vLLM before: one conversation a call
    (declared as a batch of 1, since a backend that declares nothing gets them all)."""

    generation = Generation(batch=1, stop=True)

    def __init__(self, chat: VLLMChat) -> None:
        self.chat, self.name = chat, chat.name

    def generate(self, conversations: Sequence[Any], *args: Any, **kw: Any) -> list[str]:
        return list(self.chat.generate(conversations, *args, **kw))


def main() -> None:
    """Run both ways and print one line each, then whether the items agree."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="snli")
    ap.add_argument("--limit", type=int, default=30, help="premises (the first N distinct ones)")
    ap.add_argument("--examples", type=int, default=2, help="solved examples per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=160)
    args = ap.parse_args()
    chat = VLLMChat(args.model, VLLMOptions(enforce_eager=True, max_model_len=2048))
    calls: list[int] = []
    engine_generate = chat.llm.generate

    def counted(prompts: Any, *a: Any, **kw: Any) -> Any:
        calls.append(len(prompts))
        return engine_generate(prompts, *a, **kw)

    chat.llm.generate = counted
    config = GenerateConfig(
        args.task,
        max_sentences=args.limit,
        examples=args.examples,
        max_new_tokens=args.max_new_tokens,
    )
    items = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, backend in (("one at a time", OneAtATime(chat)), ("batched", chat)):
            calls.clear()
            out = Path(tmp) / label.replace(" ", "-")
            start = time.perf_counter()
            summary = generate_items(
                stand_in(ChatModel(chat.name), lambda _, b=backend: b), config, out
            )
            wall = time.perf_counter() - start
            items[label] = (out / ITEMS).read_bytes()
            print(
                f"{label}: {summary.premises} premises, {len(calls)} LLM.generate calls, "
                f"{wall:.1f} s wall, {summary.parsed_first_try} parsed first try"
            )
    print(f"same items.jsonl: {items['one at a time'] == items['batched']}")


if __name__ == "__main__":
    main()
