"""vLLM in process (``--model vllm:NAME``) against transformers in process, on the packaged
SmolLM2 and real SNLI dev items at k = 0 and 5.

Marked ``vllm_inproc``: the runs go through ``nlieval run`` in the Python of the vLLM
environment (``scripts/setup_vllm.sh``; ``NLIEVAL_VLLM_PYTHON`` names its interpreter,
default ``.venv-vllm/bin/python``), with this checkout's ``src`` first on the path; the
transformers reference runs here. Without that Python these tests skip. vLLM computes the
same float32 log-probabilities with other kernels, so agreement is within its precision
(``TOLERANCE``), not exact.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, HFOptions
from nlieval.backends.vllm_engine import NOT_INSTALLED
from nlieval.choice import RunConfig, run
from nlieval.runs import RECORDS
from tests.helpers.engines import absent
from tests.helpers.records import saved_rows

pytestmark = [pytest.mark.vllm_inproc, pytest.mark.data]

ROOT = Path(__file__).resolve().parents[2]
#: Largest |dLL| accepted between the engines (measured: 3e-5 on these items, see
#: benchmarks/README.md; the vLLM server path measured 6e-5).
TOLERANCE = 1e-4
LIMIT = 10
ARGS = ("--tasks", "snli", "--shots", "0,5", "--limit", str(LIMIT), "--no-progress")
VLLM_ARGS = ("--model", "vllm:smollm2-135m", "--enforce-eager", "--max-model-len", "2048")


@pytest.fixture(scope="module")
def vllm_python() -> str:
    python = os.environ.get("NLIEVAL_VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
    if not Path(python).is_file():
        absent("vLLM", "NLIEVAL_VLLM", f"no vLLM Python at {python}; run scripts/setup_vllm.sh")
    return python


def _env(data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "NLIEVAL_DATA_DIR": str(data_dir),
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "VLLM_NO_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _vllm_run(python: str, out: Path, data_dir: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [python, "-m", "nlieval", "run", *VLLM_ARGS, *ARGS, "--out", str(out), *extra]
    return subprocess.Popen(
        cmd, env=_env(data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _records(folder: Path) -> list[dict[str, Any]]:
    return saved_rows(folder)


def _keyed(folder: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(r["k"], r["seed"], r["item_id"]): r for r in _records(folder)}


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("hf")
    cfg = RunConfig(
        model="smollm2-135m",
        engines=EngineOptions(hf=HFOptions(dtype="float32", device="cpu")),
        tasks=("snli",),
        shots=(0, 5),
        limit=LIMIT,
        data_dir=str(data_dir),
    )
    run(cfg, out, progress=False)
    return out


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory, vllm_python: str, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("vllm") / "run"
    proc = _vllm_run(vllm_python, out, data_dir)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-2000:]
    return out


def _worst(got: dict[tuple[Any, ...], dict[str, Any]], want: dict[Any, dict[str, Any]]) -> float:
    assert set(got) == set(want)
    worst = 0.0
    for key, r in got.items():
        w = want[key]
        assert r["pred"] == w["pred"], key
        assert r["prompt"] == w["prompt"], key
        worst = max(worst, *(abs(a - b) for a, b in zip(r["loglik"], w["loglik"], strict=True)))
    return worst


# Slow (as the two below): vLLM started in process and 20 real items scored, and the
# transformers run they are compared with; 40-70 s each on 2 idle cores.
@pytest.mark.slow
def test_vllm_in_process_equals_transformers(vllm_run: Path, hf_run: Path) -> None:
    got, want = _keyed(vllm_run), _keyed(hf_run)
    assert len(got) == 2 * LIMIT  # k = 0 and k = 5, one seed
    worst = _worst(got, want)
    print(f"max |dLL| vLLM in process vs transformers: {worst:.2e}")
    assert worst < TOLERANCE
    # The run folder names the engine and fingerprints the weights as for a folder model.
    config = json.loads((vllm_run / "config.json").read_text())
    assert config["engine"] == "vllm" and config["model"] == "vllm:smollm2-135m"


@pytest.mark.slow
def test_kill_at_a_random_moment_then_resume(
    tmp_path: Path, vllm_python: str, data_dir: Path, vllm_run: Path
) -> None:
    # The moment is drawn from a seed the failure message names, so a failure can be
    # rerun at the same moment (NLIEVAL_KILL_SEED=N); it falls in the first half of the
    # run's 2 * LIMIT records, so the run is still going when the kill comes.
    seed = int(os.environ.get("NLIEVAL_KILL_SEED", "0"))
    stop_after = random.Random(seed).randint(1, LIMIT)
    why = f"kill after {stop_after} records (NLIEVAL_KILL_SEED={seed})"
    out = tmp_path / "killed"
    proc = _vllm_run(vllm_python, out, data_dir)
    deadline = time.monotonic() + 900
    records = out / RECORDS
    while proc.poll() is None and time.monotonic() < deadline:
        if records.is_file() and records.read_text().count("\n") >= stop_after:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"{why}: the run ended before the kill"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, why
    # By hand: torn (whole lines only: a torn last one is not a record).
    cut = records.read_text().count("\n")
    assert stop_after <= cut < 2 * LIMIT, f"{why}: {cut} records survived the kill"
    again = _vllm_run(vllm_python, out, data_dir)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-2000:]
    rows = _records(out)
    keys = [(r["k"], r["seed"], r["item_id"]) for r in rows]
    assert len(keys) == len(set(keys)), f"{why}: duplicate records"
    assert _worst(_keyed(out), _keyed(vllm_run)) < TOLERANCE, why


def test_a_vllm_that_cannot_start_is_one_line(
    tmp_path: Path, vllm_python: str, data_dir: Path
) -> None:
    # A context window larger than the model's: vLLM refuses it while starting.
    proc = _vllm_run(vllm_python, tmp_path / "bad", data_dir, "--max-model-len", "10000000")
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("nlieval: error: vLLM could not start "), err[-2000:]
    assert not (tmp_path / "bad" / RECORDS).is_file() or not _records(tmp_path / "bad")


def test_a_python_without_vllm_is_one_line(tmp_path: Path, data_dir: Path) -> None:
    # This Python (the main environment) has no vLLM: refused before any folder is made.
    if subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True).returncode == 0:
        pytest.skip("this Python has vLLM")
    cmd = [sys.executable, "-m", "nlieval", "run", *VLLM_ARGS, *ARGS, "--out", str(tmp_path / "o")]
    proc = subprocess.run(cmd, env=_env(data_dir), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"nlieval: error: {NOT_INSTALLED}"]
    assert not (tmp_path / "o").exists()


def test_a_tensor_parallel_size_the_model_cannot_split_is_one_line(
    tmp_path: Path, vllm_python: str, data_dir: Path
) -> None:
    # SmolLM2-135M has 9 attention heads: vLLM refuses 2 GPUs (or CPU workers) at its
    # config check, and the line says why (pydantic's own message, not its error count).
    out = tmp_path / "tp"
    proc = _vllm_run(vllm_python, out, data_dir, "--tensor-parallel-size", "2")
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("nlieval: error: vLLM could not start "), err[-2000:]
    assert last.endswith(
        "ValidationError: Total number of attention heads (9) must be divisible by tensor "
        "parallel size (2)."
    ), last
    assert not (out / RECORDS).is_file() or not _records(out)


@pytest.fixture(scope="module")
def even_heads_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight 2-layer Llama with 2 attention heads of width 32 (vLLM's CPU
    attention has no kernel below 32) and SmolLM2's tokenizer: one that 2 workers split."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from nlieval.backends.weights import local_hf_folder, resolve_model

    tok = AutoTokenizer.from_pretrained(local_hf_folder(resolve_model("smollm2-135m")).path)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("even-heads")
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_pipeline_parallel_on_the_cpu_is_one_line(
    tmp_path: Path, vllm_python: str, data_dir: Path
) -> None:
    # vllm-cpu 0.32 starts 2 pipeline stages, then fails at the first request with an
    # error naming nothing: refused before the start, in one line.
    out = tmp_path / "pp"
    proc = _vllm_run(vllm_python, out, data_dir, "--pipeline-parallel-size", "2")
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("nlieval: error: --pipeline-parallel-size 2: vLLM's CPU build "), last
    assert last.endswith("use --tensor-parallel-size"), last


@pytest.mark.slow
def test_two_tensor_parallel_workers_score_as_one(
    tmp_path: Path, vllm_python: str, data_dir: Path, even_heads_model: Path
) -> None:
    args = ("--tasks", "snli", "--shots", "0", "--limit", "6", "--no-progress")
    model = ("--model", f"vllm:{even_heads_model}", "--enforce-eager", "--max-model-len", "512")
    runs = {}
    for n in ("1", "2"):
        out = tmp_path / f"tp{n}"
        cmd = [vllm_python, "-m", "nlieval", "run", *model, *args, "--out", str(out)]
        # Each of 2 workers bound to one core (this machine has one NUMA node: vLLM will
        # not place 2 CPU workers on it by itself).
        env = {**_env(data_dir), **({"VLLM_CPU_OMP_THREADS_BIND": "0|1"} if n == "2" else {})}
        proc = subprocess.run(
            [*cmd, "--tensor-parallel-size", n],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[n] = _keyed(out)
    # Random weights give near-even options: compare the numbers, and the predictions
    # where the two best options are further apart than the tolerance.
    assert set(runs["1"]) == set(runs["2"]) and len(runs["1"]) == 6
    for key, one in runs["1"].items():
        two = runs["2"][key]
        worst = max(abs(a - b) for a, b in zip(one["loglik"], two["loglik"], strict=True))
        assert worst < TOLERANCE, key
        best = sorted(one["loglik"], reverse=True)
        if best[0] - best[1] > 2 * TOLERANCE:
            assert one["pred"] == two["pred"], key


#: Run in the vLLM Python: SmolLM2's chat answers through vLLM in process, all at once and
#: one at a time, with and without a stop; every ``LLM.generate`` call's size is kept.
GENERATE_SCRIPT = r"""
import json, sys
from nlieval.backends import Stop, stream_answers
from nlieval.backends.vllm_engine import VLLMChat, VLLMOptions
from nlieval.metainference.generated import iter_answers

chat = VLLMChat("smollm2-135m", VLLMOptions(enforce_eager=True, max_model_len=2048))
calls = []
engine_generate = chat.llm.generate
def counted(prompts, *args, **kw):
    calls.append(len(prompts))
    return engine_generate(prompts, *args, **kw)
chat.llm.generate = counted
users = json.loads(sys.argv[1])
convs = [[{"role": "user", "content": u}] for u in users]
out = {"batched": chat.generate(convs, max_new_tokens=24)}
out["alone"] = [chat.generate([c], max_new_tokens=24)[0] for c in convs]
out["calls"], calls[:] = list(calls), []
text = out["batched"][0]
out["string"] = s = text[4:6]
out["cut"] = chat.generate(convs, max_new_tokens=24, stop=Stop((s,)))
rule = Stop(rule=lambda t: len(t) >= 12)
out["rule"] = [a for _, a in stream_answers(chat, convs, 24, stop=rule)]
out["rule_alone"] = [chat.generate([c], max_new_tokens=24, stop=rule)[0] for c in convs]
calls[:] = []
many = [[{"role": "user", "content": f"Premise: A dog runs in field {n}."}] for n in range(30)]
out["many"] = len(list(iter_answers(chat, many, 4, 0.0, 0)))
out["many_calls"] = list(calls)
print(json.dumps(out))
"""

USERS = [
    "Write one sentence about a cat.",
    "What is 2 + 2?",
    "Name a color.",
    "Premise: A man is playing a guitar on stage. Write a hypothesis.",
    "Say hello in French.",
]


@pytest.mark.slow  # vLLM started in process and 42 generations: about 2 minutes
def test_batched_generation_equals_one_at_a_time_and_stops(
    vllm_python: str, data_dir: Path
) -> None:
    proc = subprocess.run(
        [vllm_python, "-c", GENERATE_SCRIPT, json.dumps(USERS)],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # All the conversations of a call are one LLM.generate; greedy answers are those
    # each gets alone.
    assert out["calls"] == [len(USERS)] + [1] * len(USERS)
    assert out["batched"] == out["alone"]
    assert len(set(out["batched"])) > 1  # varied answers: the comparison means something
    # A stop string ends every answer before it (derived from the answers without stop).
    s = out["string"]
    assert s and s in out["batched"][0]
    assert out["cut"] == [a.split(s, 1)[0] for a in out["batched"]]
    # A stop rule ends each answer at its first token after which the rule holds: the
    # same batched and alone, a start of the free answer, long enough unless it ended.
    assert out["rule"] == out["rule_alone"]
    for cut, full in zip(out["rule"], out["batched"], strict=True):
        assert full.startswith(cut) and (len(cut) >= 12 or cut == full)
    assert any(len(c) < len(f) for c, f in zip(out["rule"], out["batched"], strict=True))
    # `nlieval generate`'s driver gives vLLM all 30 premises in one call (was 30 calls).
    assert out["many"] == 30 and out["many_calls"] == [30]
