"""Answers per second of local chat generation: one conversation at a time vs batched.

Runs ``nlieval instruct``'s library function (:func:`nlieval.sci.instruct.run_instruct`)
twice in one process on the same loaded model: once through a backend that answers one
conversation at a time with plain ``model.generate`` (what the transformers backend did
before batching), once through :class:`nlieval.backends.generator.LocalChat`. Prints wall
and CPU seconds, answers per second, and whether every answer is the same.

    python benchmarks/generation_bench.py --data-dir ../shared/data --limit 60 --k 4
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nlieval.backends.generator import LocalChat
from nlieval.runs import RunFolder
from nlieval.sci.instruct import InstructConfig, run_instruct


class OneAtATime:
    """The earlier local generation: each conversation alone through ``model.generate``,
    after ``torch.manual_seed(seed)``, no cache shared between conversations."""

    def __init__(self, chat: LocalChat) -> None:
        self.chat = chat
        self.name = chat.name

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        import torch

        tok, model = self.chat.tok, self.chat.model
        answers = []
        for conv in conversations:
            text = tok.apply_chat_template(list(conv), tokenize=False, add_generation_prompt=True)
            enc = tok(text, return_tensors="pt", add_special_tokens=False).to(self.chat.device)
            torch.manual_seed(seed)
            with torch.inference_mode():
                out = model.generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    do_sample=temperature > 0,
                    temperature=temperature if temperature > 0 else None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=self.chat.pad_id,
                )
            new = out[0, enc["input_ids"].shape[1] :]
            answers.append(str(tok.decode(new, skip_special_tokens=True)))
        return answers


def timed(config: InstructConfig, backend: Any, out: Path) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds of one run, and its answers by item id."""
    factory: Callable[[], Any] = lambda: backend  # noqa: E731
    wall, cpu = time.perf_counter(), time.process_time()
    run_instruct(config, out, factory, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    answers = {r.item_id: r.answer or "" for r in RunFolder(out).iter_records()}
    return wall, cpu, answers


def main() -> None:
    """Print one line per backend and the agreement of their answers."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--batch-sizes", default="8,16")
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    config = InstructConfig(
        args.model,
        ("scinli",),
        shots=(args.k,),
        runs=(0,),
        limit=args.limit,
        balanced_limit=True,
        data_dir=args.data_dir,
    )
    chat = LocalChat(args.model)
    results: dict[str, tuple[float, float, dict[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_baseline:
            results["one at a time"] = timed(config, OneAtATime(chat), Path(tmp) / "one")
        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            chat.batch_size = bs
            results[f"LocalChat batch {bs}"] = timed(config, chat, Path(tmp) / f"b{bs}")
    ref = next(iter(results.values()))[2]
    print("| backend | answers | wall s | CPU s | answers/s (wall) | same answers |")
    print("|---|---|---|---|---|---|")
    for name, (wall, cpu, answers) in results.items():
        same = sum(answers[i] == ref[i] for i in ref)
        print(
            f"| {name} | {len(answers)} | {wall:.1f} | {cpu:.1f} | {len(answers) / wall:.2f} "
            f"| {same}/{len(ref)} |"
        )


if __name__ == "__main__":
    main()
