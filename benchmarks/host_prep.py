"""Host-side preparation of option scoring, without a model forward (no GPU needed).

What the GPU profile of issue 12 showed to bound the scoring loop on a fast device: the
work on the host per item (prompt building, tokenization, tensor building, reading the
scores back) and the copies of the cached prefix's keys/values. This script measures
both on real data with the packaged SmolLM2 tokenizer, the way ``nlieval run`` builds the
prompts (``choice.runner.plan`` + ``SweepPoint.prompt``):

- the model body is replaced by a stub that writes zero keys/values of the real shapes
  into the cache it is given (so every cache copy still happens) and returns zero
  hidden states; the output layer by one returning zero logits. Everything else in
  ``HFCausalLM.loglikelihood`` runs as is;
- ``prompt ms`` builds the prompt texts, ``tokenize ms`` is ``HFCausalLM._rows``
  (tokenization and rows), ``rest ms`` the rest of ``loglikelihood`` (grouping, tensors,
  reading the scores), ``host total`` their sum: the host preparation per item, the
  fastest of ``--repeat`` runs (each phase apart: the machine is shared). Not in it: the
  stubbed model and the key/value cache copies, which are device work on a GPU
  (``KV copy ms``: their time on this CPU);
- ``KV copied/item``: bytes of the prefix's keys/values copied per item
  (``counts["kv_bytes_copied"]``: the fill of the batch rows, once per group; for the
  code before issue 12, which had no counter: (2 x rows + 1) x prefix bytes per batch,
  ``copy.deepcopy``, ``batch_repeat_interleave`` and the concatenation in
  ``DynamicCache.update``).

    NLIEVAL_DATA_DIR=../shared/data python benchmarks/host_prep.py --limit 200
    PYTHONPATH=/tmp/old/src ... python benchmarks/host_prep.py      # another checkout

Prints a markdown table; ``--json PATH`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

import nlieval  # noqa: E402
from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.base import ScoreRequest  # noqa: E402
from nlieval.backends.hf import HFCausalLM  # noqa: E402
from nlieval.backends.weights import DEFAULT_MODEL, local_hf_folder, resolve_model  # noqa: E402
from nlieval.choice import RunConfig  # noqa: E402
from nlieval.choice.runner import plan  # noqa: E402


class StubBody(torch.nn.Module):
    """Stands in for the decoder: zero keys/values of the model's shapes go into the
    cache (one ``update`` per layer, as the real layers do), zero hidden states out."""

    def __init__(self, config: Any, dtype: torch.dtype) -> None:
        super().__init__()
        self.config = config
        self.dtype_ = dtype
        self.heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )

    def forward(self, input_ids: torch.Tensor, past_key_values: Any = None, **kwargs: Any) -> Any:
        rows, width = input_ids.shape
        if past_key_values is not None:
            kv = torch.zeros(rows, self.heads, width, self.head_dim, dtype=self.dtype_)
            for layer in range(self.config.num_hidden_layers):
                past_key_values.update(kv, kv, layer)
        hidden = torch.zeros(rows, width, self.config.hidden_size, dtype=self.dtype_)
        return type("Out", (), {"last_hidden_state": hidden, "logits": None})()


TIMES: dict[str, float] = {"model": 0.0, "kv": 0.0, "rows": 0.0}


def _timed(fn: Any, key: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[key] += time.perf_counter() - start

    return wrapper


def stub_model(lm: HFCausalLM) -> dict[str, int]:
    """Replace the forward passes of ``lm`` by stubs and time them (``TIMES["model"]``)
    and the cache copies (``TIMES["kv"]``); returns a dict the old code's copies are
    counted into (the new code counts its own)."""
    import copy

    from transformers import DynamicCache

    from nlieval.backends import hf

    patched: Any = lm  # its methods are replaced below
    cfg = lm.model.config
    body = StubBody(cfg, lm.dtype)
    vocab = cfg.vocab_size
    lm._decoder = _timed(body, "model")
    zero_logits = torch.zeros(256, vocab)  # a real tensor: log_softmax's fast path
    patched._head = _timed(lambda hidden: zero_logits[: hidden.shape[0]], "model")

    def plain(input_ids: torch.Tensor, **kwargs: Any) -> Any:
        keep = kwargs.get("logits_to_keep") or input_ids.shape[1]
        logits = zero_logits[: input_ids.shape[0] * keep].view(input_ids.shape[0], keep, vocab)
        return type("Out", (), {"logits": logits})()

    lm.model = _Wrapped(lm.model, _timed(plain, "model"))
    old: dict[str, int] = {"kv_bytes_copied": 0}
    patched._rows = _timed(lm._rows, "rows")
    if hasattr(lm, "_group_cache"):
        patched._group_cache = _timed(lm._group_cache, "kv")
        # The prefix forward is a model call: counted by the stub, not as a copy.
    else:
        # The code before issue 12: per batch, copy.deepcopy of the prefix cache, then
        # batch_repeat_interleave to the batch's rows, then DynamicCache.update
        # concatenates the suffix to every row's prefix copy (one more copy).
        per_token = 2 * cfg.num_hidden_layers * body.heads * body.head_dim * lm.dtype.itemsize
        inner = lm._forward_cached

        def counted(prefix: Any, batch: Any) -> Any:
            old["kv_bytes_copied"] += (2 * len(batch) + 1) * len(prefix) * per_token
            return inner(prefix, batch)

        patched._forward_cached = counted
        shim = type("CopyShim", (), {"deepcopy": staticmethod(_timed(copy.deepcopy, "kv"))})
        hf_module: Any = hf
        hf_module.copy = shim
        repeat = _timed(DynamicCache.batch_repeat_interleave, "kv")
        cache_class: Any = DynamicCache
        cache_class.batch_repeat_interleave = repeat
    return old


class _Wrapped:
    """The model with its ``__call__`` replaced (config and parameters still readable)."""

    def __init__(self, model: Any, call: Any) -> None:
        self._model, self._call = model, call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def measure(lm: HFCausalLM, old: dict[str, int], point: Any, items: list[Any]) -> dict[str, float]:
    lm._cached = None
    if hasattr(lm, "_prefix_memo"):
        lm._prefix_memo.clear()
    before = lm.counts.get("kv_bytes_copied", 0) + old["kv_bytes_copied"]
    t0 = time.perf_counter()
    prompts = [point.prompt(it) for it in items]
    reqs = [ScoreRequest(p.text, p.continuations, prefix_len=len(p.prefix)) for p in prompts]
    t1 = time.perf_counter()
    TIMES.update(model=0.0, kv=0.0, rows=0.0)
    lm.loglikelihood(reqs)
    t2 = time.perf_counter()
    n = len(items)
    copied = lm.counts.get("kv_bytes_copied", 0) + old["kv_bytes_copied"] - before
    # loglikelihood minus tokenization, the stubbed model and the cache copies is the
    # rest of the host's work.
    rest = (t2 - t1) - TIMES["rows"] - TIMES["model"] - TIMES["kv"]
    return {
        "prompt_ms": 1e3 * (t1 - t0) / n,
        "tokenize_ms": 1e3 * TIMES["rows"] / n,
        "rest_ms": 1e3 * max(0.0, rest) / n,
        "kv_ms": 1e3 * TIMES["kv"] / n,
        "stub_ms": 1e3 * TIMES["model"] / n,
        "kv_copied_per_item": copied / n,
        "chars_per_item": sum(len(r.context) for r in reqs) / n,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--shots", default="0,5,10")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=os.environ.get("NLIEVAL_DATA_DIR"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    folder = local_hf_folder(resolve_model(args.model)).path
    lm = HFCausalLM(folder, HFOptions(device="cpu", dtype="float32"), batch_size=args.batch_size)
    old = stub_model(lm)
    cfg = RunConfig(
        model=folder,
        tasks=tuple(args.tasks.split(",")),
        shots=tuple(int(k) for k in args.shots.split(",")),
        limit=args.limit,
        data_dir=args.data_dir,
    )
    rows = []
    for ds, points, _ in plan(cfg):
        items = list(ds.items)
        for point in points:
            runs = [measure(lm, old, point, items) for _ in range(args.repeat)]
            row: dict[str, Any] = {"task": point.task, "k": point.k, "items": len(items)}
            for key in runs[0]:
                # The fastest run: the machine is shared, and other work only ever adds.
                row[key] = min(r[key] for r in runs)
            row["total_ms"] = row["prompt_ms"] + row["tokenize_ms"] + row["rest_ms"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\nnlieval from {os.path.dirname(nlieval.__file__)}, batch size {args.batch_size}")
    print(
        "| task | k | items | chars/item | prompt ms | tokenize ms | rest ms "
        "| host total ms/item | KV copy ms/item | KV copied/item |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['task']} | {r['k']} | {r['items']} | {r['chars_per_item']:.0f} "
            f"| {r['prompt_ms']:.3f} | {r['tokenize_ms']:.3f} | {r['rest_ms']:.3f} "
            f"| **{r['total_ms']:.3f}** | {r['kv_ms']:.3f} "
            f"| {r['kv_copied_per_item'] / 1e6:.2f} MB |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
