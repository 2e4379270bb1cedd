"""One way to name a model (the registry): the same rule in every command, and folders
started from the Python API that resume from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.backends import EngineOptions, resolve, stand_in
from nlieval.backends.completions import CompletionsLM
from nlieval.backends.hf import HFCausalLM
from nlieval.backends.openai import OpenAIChat, ServerOptions
from nlieval.backends.registry import ModelSpec, parse_model
from nlieval.choice import RunConfig, run
from nlieval.classifiers import META_FILE
from nlieval.cli import main
from nlieval.sci.instruct import InstructConfig, run_instruct
from tests.helpers.fake_openai import EchoLM, FakeServer, running
from tests.helpers.records import saved_records

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("model", "api_base", "want"),
    [
        ("smollm2-135m", None, ModelSpec("hf", "smollm2-135m")),
        ("hf:org/m", None, ModelSpec("hf", "org/m")),
        ("org/m", URL, ModelSpec("server", "org/m")),
        ("server:org/m", URL, ModelSpec("server", "org/m")),
        ("openai-completions:org/m", URL, ModelSpec("server", "org/m")),
        # Only the first colon prefix counts: a served name may hold colons (Ollama tags).
        ("server:llama3:8b", URL, ModelSpec("server", "llama3:8b")),
    ],
)
def test_one_parsing_rule(model: str, api_base: str | None, want: ModelSpec) -> None:
    assert parse_model(model, api_base) == want


@pytest.mark.parametrize(
    ("model", "api_base", "message"),
    [
        ("server:m", None, "--api-base"),
        ("openai-completions:m", None, "--api-base"),
        ("hf:m", URL, "drop one"),
        ("server:", URL, "model name"),
        ("hf:", None, "model name"),
        ("", None, "model name"),
    ],
)
def test_meaningless_model_strings_are_refused(
    model: str, api_base: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_model(model, api_base)


def test_backends_by_engine(tiny_llama: Path) -> None:
    opts = ServerOptions(URL, timeout=3.0)
    scorer = resolve("m", server=opts, batch_size=4, top_logprobs=0).scorer()
    assert isinstance(scorer, CompletionsLM)
    assert (scorer.options, scorer.batch_size, scorer.top_logprobs) == (opts, 4, 0)
    chat = resolve("m", server=opts).chat()
    assert isinstance(chat, OpenAIChat) and chat.timeout == 3.0 and chat.name == "m"
    assert isinstance(resolve(str(tiny_llama)).scorer(), HFCausalLM)
    with pytest.raises(ValueError, match="--checkpoints"):
        resolve("m", server=opts, checkpoints=("step100",))


def test_one_place_says_what_a_model_is(tmp_path: Path, tiny_llama: Path) -> None:
    def checkpoint(folder: Path) -> Path:
        folder.mkdir(parents=True)
        (folder / META_FILE).touch()  # what makes a folder a saved classifier
        return folder

    ckpt = checkpoint(tmp_path / "ckpt")
    train = tmp_path / "train"
    for seed in (10, 1, 0):
        checkpoint(train / f"seed{seed}")
    lm = resolve(str(tiny_llama))
    assert (lm.kind, lm.takes_shots, lm.sweep) == ("causal-lm", True, ())
    one = resolve(str(ckpt))
    assert (one.kind, one.takes_shots) == ("classifier-folder", False)
    seeds = resolve(str(train))
    assert seeds.kind == "train-folder" and seeds.sweep == () and not seeds.takes_shots
    assert seeds.seeds == tuple(str(train / f"seed{n}") for n in (0, 1, 10))  # seed order
    assert resolve(str(train), sweep_seeds=True).sweep == seeds.seeds
    assert resolve("m", server=ServerOptions(URL)).kind == "server"
    # A sweep's folder is loaded instead of the model; anything else is a hub revision
    # of it (so the model must be a hub id: a local folder takes none).
    mixed = resolve("org/m", checkpoints=(str(ckpt), "step100"))
    assert [(c.key, c.model, c.revision, c.kind) for c in mixed.loads] == [
        (str(ckpt), str(ckpt), None, "classifier-folder"),
        ("step100", "org/m", "step100", "causal-lm"),
    ]
    # A stand-in gives its own backend and claims no weights.
    given = stand_in(RunConfig("org/none", ("smoke",)), lambda ck: "backend")
    assert (given.scorer(), given.fingerprints(), given.labels()) == ("backend", {}, {})
    given.check()  # the name is no model, and nothing says so


# --------------------------------------------------------------------------- commands


@pytest.mark.parametrize("command", ["run", "instruct", "generate"])
def test_hf_model_with_a_server_is_refused_by_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [command, "--model", "hf:smollm2-135m", "--api-base", URL, "--out", str(out)]
    argv += ["--task", "smoke"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "drop one of them" in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["run", "instruct", "generate"])
def test_server_model_without_address_is_refused_by_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([command, "--model", "server:m", "--out", str(out), "--task", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--api-base" in err
    assert not out.exists()


def test_run_with_api_base_scores_on_the_server(
    tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before the registry, `run --model tiny --api-base URL` loaded "tiny" in process and
    # ignored the server without a word; now a plain name with --api-base is served.
    common = ["--task", "smoke", "--limit", "4", "--no-progress", "--top-logprobs", "0"]
    plain, prefixed = tmp_path / "plain", tmp_path / "prefixed"
    argv = ["run", "--model", "tiny", "--api-base", server.url, "--out", str(plain)]
    assert main([*argv, *common]) == 0
    sent = [r for r in server.requests if "prompt" in r]
    assert sent and all(r["model"] == "tiny" for r in sent)
    argv = ["run", "--model", "openai-completions:tiny", "--api-base", server.url]
    assert main([*argv, "--out", str(prefixed), *common]) == 0
    a = {r.item_id: r.loglik for r in saved_records(plain)}
    b = {r.item_id: r.loglik for r in saved_records(prefixed)}
    assert len(a) == 4 and a == b
    saved = json.loads((plain / "config.json").read_text())
    assert (saved["model"], saved["engine"], saved["api_base"]) == ("tiny", "server", server.url)


def test_instruct_with_api_base_asks_the_server(tmp_path: Path, data_dir: Path) -> None:
    with running() as server:
        server.default = lambda body: ("ok", "Reasoning")
        argv = ["instruct", "--model", "chat-m", "--api-base", server.url, "--shots", "0"]
        argv += ["--limit", "3", "--out", str(tmp_path / "i"), "--no-progress"]
        assert main([*argv, "--data-dir", str(data_dir)]) == 0
        assert [r["model"] for r in server.requests] == ["chat-m"] * 3
    assert {r.pred for r in saved_records(tmp_path / "i")} == {"reasoning"}


def test_a_server_run_resumes_against_another_address(
    tmp_path: Path, server: FakeServer, echo_lm: EchoLM, capsys: pytest.CaptureFixture[str]
) -> None:
    # The identity of a server run is its engine and model name, not the address.
    out = tmp_path / "r"
    common = ["--model", "org/tiny", "--task", "smoke", "--no-progress", "--out", str(out)]
    assert main(["run", *common, "--limit", "2", "--api-base", server.url]) == 0
    with running(echo_lm) as other:
        assert main(["run", *common, "--limit", "4", "--api-base", other.url]) == 0
        assert len([r for r in other.requests if "prompt" in r]) > 0
    assert len(saved_records(out)) == 4
    # The same name in process is another model: refused, nothing written.
    capsys.readouterr()
    assert main(["run", *common, "--limit", "6"]) == 2
    assert "engine: 'server' -> 'hf'" in capsys.readouterr().err
    assert len(saved_records(out)) == 4


# --------------------------------------------------------------------------- Python -> CLI


def test_run_folder_from_python_resumes_from_the_cli(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    run(RunConfig(str(tiny_llama), ("smoke",), limit=3), out, progress=False)
    first = saved_records(out)
    argv = ["run", "--model", f"hf:{tiny_llama}", "--task", "smoke", "--limit", "5"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    records = saved_records(out)
    assert [r.to_json() for r in records[:3]] == [r.to_json() for r in first]
    assert len(records) == 5


def test_instruct_folder_from_python_resumes_from_the_cli(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "i"
    with running() as server:
        server.default = lambda body: ("ok", "Neutral")
        opts = ServerOptions(server.url)
        cfg = InstructConfig(
            "chat-m",
            shots=(0,),
            limit=2,
            data_dir=str(data_dir),
            engines=EngineOptions(server=opts),
        )
        run_instruct(cfg, out, progress=False)
        argv = ["instruct", "--model", "chat-m", "--api-base", server.url, "--shots", "0"]
        argv += ["--limit", "4", "--data-dir", str(data_dir), "--out", str(out)]
        assert main([*argv, "--no-progress"]) == 0, capsys.readouterr().err
        assert len(server.requests) == 4  # 2 from Python, 2 more from the CLI
    assert len(saved_records(out)) == 4


def test_spellings_of_one_served_model_resume_one_folder(
    tmp_path: Path, server: FakeServer
) -> None:
    # openai-completions:tiny, server:tiny and tiny with --api-base are one model: the
    # folder keeps its first spelling, and records keep one model name.
    out = tmp_path / "r"
    common = ["--task", "smoke", "--no-progress", "--out", str(out), "--api-base", server.url]
    assert main(["run", "--model", "openai-completions:tiny", "--limit", "2", *common]) == 0
    assert main(["run", "--model", "tiny", "--limit", "3", *common]) == 0
    assert main(["run", "--model", "server:tiny", "--limit", "4", *common]) == 0
    records = saved_records(out)
    assert len(records) == 4 and {r.model for r in records} == {"openai-completions:tiny"}


def test_vllm_in_process_is_a_causal_lm_fingerprinted_as_its_folder(tiny_llama: Path) -> None:
    # vllm:NAME names the same weights as NAME: the same fingerprint, another engine.
    vllm, hf = resolve(f"vllm:{tiny_llama}"), resolve(str(tiny_llama))
    assert (vllm.kind, vllm.spec.engine, vllm.spec.label) == (
        "causal-lm",
        "vllm",
        f"vllm:{tiny_llama}",
    )
    assert vllm.fingerprints() == hf.fingerprints() and list(hf.fingerprints()) == ["model"]
    with pytest.raises(ValueError, match="--checkpoints needs the transformers engine"):
        resolve(f"vllm:{tiny_llama}", checkpoints=("step1",))
    with pytest.raises(ValueError, match="loaded in process, but --api-base"):
        parse_model("vllm:m", "http://h:8000/v1")
    with pytest.raises(ValueError, match="needs a model name"):
        parse_model("vllm:")


def test_vllm_options_are_flags_of_run_with_their_defaults() -> None:
    cfg = RunConfig(model="vllm:m", tasks=("snli",))
    assert cfg.engine == "vllm"
    assert (cfg.vllm.tensor_parallel_size, cfg.vllm.max_model_len) == (1, None)
    # None of them is part of a run's identity: they do not change the numbers.
    assert not {"tensor_parallel_size", "gpu_memory_utilization"} & set(RunConfig.IDENTITY)
