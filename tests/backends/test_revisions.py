"""A hub revision applies to a hub model only: one that cannot apply (to a packaged
model, a local folder, a .gguf file, a server's model, or a packaged model's name given
as a checkpoint) is refused in one line by every command and every loader, instead of
being dropped and another model scored under its name; one that applies is carried into
loading and into the run's identity (issue 42, defect 1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import HFOptions, resolve
from nlieval.backends.weights import ModelError, resolve_model
from nlieval.cli import main
from tests.helpers.records import saved_rows
from tests.helpers.tiny_models import tiny_model

URL = "http://127.0.0.1:9/v1"
SHAS = {"r1": "1" * 40, "r2": "2" * 40}


@pytest.fixture(scope="module")
def two_tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny causal LMs of one architecture, weights of seeds 0 and 1."""
    root = tmp_path_factory.mktemp("two-tiny")
    return tiny_model(root / "a", "llama", seed=0), tiny_model(root / "b", "llama", seed=1)


@pytest.fixture
def fake_hub(tmp_path: Path, two_tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> str:
    """A local hub cache holding ``org/tiny`` at two revisions (branches r1 and r2, the
    two tiny models), read offline the way the hub's own client reads its cache."""
    import shutil

    import huggingface_hub.constants

    repo = tmp_path / "hub" / "models--org--tiny"
    (repo / "refs").mkdir(parents=True)
    for (rev, sha), folder in zip(SHAS.items(), two_tiny, strict=True):
        shutil.copytree(folder, repo / "snapshots" / sha)
        (repo / "refs" / rev).write_text(sha)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return "org/tiny"


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], out: Path) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not out.exists()  # refused before a folder is made
    return err


def _gguf(tmp_path: Path) -> Path:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")  # never read: the refusal comes first
    return f


@pytest.mark.parametrize("command", ["run", "instruct", "generate"])
@pytest.mark.parametrize("kind", ["packaged model", "local folder", ".gguf file"])
def test_a_revision_of_a_local_model_is_refused_by_every_command(
    command: str,
    kind: str,
    tmp_path: Path,
    tiny_llama: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = {
        "packaged model": "smollm2-135m",
        "local folder": str(tiny_llama),
        ".gguf file": str(_gguf(tmp_path)),
    }[kind]
    out = tmp_path / "out"
    argv = [command, "--model", model, "--revision", "step100", "--task", "smoke"]
    err = _one_line_error(capsys, [*argv, "--out", str(out)], out)
    assert f"revision step100 cannot apply to {model}, a {kind}" in err
    assert "hub model (owner/name)" in err


@pytest.mark.parametrize("command", ["run", "instruct", "generate"])
def test_a_revision_of_a_served_model_is_refused_by_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [command, "--model", "m", "--api-base", URL, "--revision", "r1", "--task", "smoke"]
    err = _one_line_error(capsys, [*argv, "--out", str(out)], out)
    assert "server's model takes no hub revision" in err


@pytest.mark.parametrize(
    ("model", "checkpoints", "message"),
    [
        # The reported case: the default model, two packaged models as "checkpoints".
        (None, "smollm2-135m,gemma3-270m", "smollm2-135m: a packaged model is not a checkpoint"),
        ("org/tiny", "r1,gemma3-270m", "gemma3-270m: a packaged model is not a checkpoint"),
        ("FOLDER", "step100", "step100: not a path, and --model FOLDER is a local folder"),
        ("smollm2-135m", "step100", "is a packaged model, which takes no hub revision"),
        ("org/tiny", "./no/such/step100", "./no/such/step100: no such path"),
    ],
)
def test_a_checkpoint_that_cannot_be_loaded_is_refused_in_one_line(
    model: str | None,
    checkpoints: str,
    message: str,
    tmp_path: Path,
    tiny_llama: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    argv = ["run", "--task", "smoke", "--checkpoints", checkpoints, "--out", str(out)]
    if model is not None:
        argv += ["--model", model.replace("FOLDER", str(tiny_llama))]
    err = _one_line_error(capsys, argv, out)
    assert message.replace("FOLDER", str(tiny_llama)) in err
    assert "a checkpoint is a path (a model folder or .gguf file" in err
    assert "or a hub revision (branch, tag or commit) of a hub model" in err


def test_a_revision_beside_checkpoints_is_refused(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["run", "--model", "org/tiny", "--revision", "r1", "--checkpoints", str(tiny_llama)]
    err = _one_line_error(capsys, [*argv, "--task", "smoke", "--out", str(out)], out)
    assert "--revision r1 with --checkpoints" in err


def _loaders() -> dict[str, Callable[[str, str], Any]]:
    from nlieval.backends.generator import LocalChat
    from nlieval.backends.hf import HFCausalLM
    from nlieval.backends.hf_classifier import HFSequenceClassifier
    from nlieval.backends.multiple_choice import HFMultipleChoice
    from nlieval.backends.vllm_engine import _folder

    return {
        "resolve_model": lambda m, r: resolve_model(m, r),
        "causal LM": lambda m, r: HFCausalLM(m, HFOptions(revision=r)),
        "causal LM (checkpoint's)": lambda m, r: HFCausalLM(m, HFOptions(), revision=r),
        "chat": lambda m, r: LocalChat(m, HFOptions(revision=r)),
        "sequence classifier": lambda m, r: HFSequenceClassifier(m, HFOptions(), revision=r),
        "multiple choice": lambda m, r: HFMultipleChoice(m, HFOptions(), revision=r),
        "vllm": lambda m, r: _folder(m, r),
        "resolve": lambda m, r: resolve(m, hf=HFOptions(revision=r)),
        "resolve vllm": lambda m, r: resolve(f"vllm:{m}", hf=HFOptions(revision=r)),
    }


@pytest.mark.parametrize("loader", list(_loaders()))
@pytest.mark.parametrize("kind", ["packaged model", "local folder", ".gguf file"])
def test_every_loader_refuses_a_revision_it_cannot_apply(
    loader: str, kind: str, tmp_path: Path, tiny_llama: Path
) -> None:
    model = {
        "packaged model": "gemma3-270m",
        "local folder": str(tiny_llama),
        ".gguf file": str(_gguf(tmp_path)),
    }[kind]
    with pytest.raises(ModelError, match=f"revision main cannot apply to .*, a {kind}"):
        _loaders()[loader](model, "main")


def _run(argv: list[str], out: Path) -> tuple[dict[str, str], dict[str | None, list[Any]]]:
    """The run's model fingerprints, and each checkpoint's option log-likelihoods."""
    assert main([*argv, "--task", "smoke", "--limit", "4", "--no-progress", "--out", str(out)]) == 0
    prints = json.loads((out / "config.json").read_text())["fingerprints"]
    by_ckpt: dict[str | None, list[Any]] = {}
    for r in saved_rows(out):
        by_ckpt.setdefault(r.get("checkpoint"), []).append(r["loglik"])
    return {k: v for k, v in prints.items() if k.startswith("model")}, by_ckpt


def test_hub_revisions_are_loaded_and_are_two_identities(
    fake_hub: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prints, scores = _run(["run", "--model", fake_hub, "--checkpoints", "r1,r2"], tmp_path / "s")
    # Each revision's commit, as its ref in the hub cache names it.
    assert prints == {f"model {rev}": f"hub:org/tiny@{sha}" for rev, sha in SHAS.items()}
    assert set(scores) == {"r1", "r2"} and scores["r1"] != scores["r2"]
    # --revision alone: the same weights as the checkpoint of that name.
    one, single = _run(["run", "--model", fake_hub, "--revision", "r2"], tmp_path / "one")
    assert one == {"model": f"hub:org/tiny@{SHAS['r2']}"} and single[None] == scores["r2"]
    # Another revision is another identity: the folder of r2 refuses it.
    capsys.readouterr()
    argv = ["run", "--model", fake_hub, "--revision", "r1", "--task", "smoke", "--limit", "4"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "one")]) == 2
    assert "revision" in capsys.readouterr().err


def test_two_paths_are_two_models(two_tiny: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = map(str, two_tiny)
    prints, scores = _run(["run", "--model", a, "--checkpoints", f"{a},{b}"], tmp_path / "s")
    assert list(prints) == [f"model {a}", f"model {b}"]
    assert prints[f"model {a}"] != prints[f"model {b}"]
    assert set(scores) == {a, b} and scores[a] != scores[b]
