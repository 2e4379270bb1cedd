#!/usr/bin/env bash
# Write every figure that docs/ shows into docs/img (or the folder given), from the run
# folders under runs/ that the docs' own commands make. This is the one writer of
# docs/img: the commands a reader pastes write their figures into runs/img.
#
#   bash scripts/doc_images.sh            # into docs/img
#   bash scripts/doc_images.sh /tmp/img   # somewhere else, e.g. to compare
#   bash scripts/doc_images.sh --page reports.md [DIR]   # only the figures of one page
#
# Each figure names the run folders it reads and the page whose commands make them. A
# figure whose folders are missing is reported, the others are still written, and the
# script then exits 1. No model is loaded: plots read saved records only; the screenshot
# of `nlieval view` needs Chromium (scripts/setup_browser.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
PAGE=
if [ "${1:-}" = --page ]; then
    PAGE=${2:?--page needs a page of docs/, e.g. reports.md}
    [ -f "docs/$PAGE" ] || { echo "doc_images.sh: no page docs/$PAGE" >&2; exit 2; }
    shift 2
fi
IMG=${1:-docs/img}
mkdir -p "$IMG/baan"
failed=()

# figure PAGE COMMAND...: run one plot command (with --page, only that page's); on failure
# remember it and go on.
figure() {
    local page=$1
    shift
    if [ -n "$PAGE" ] && [ "$page" != "$PAGE" ]; then
        return
    fi
    echo "==> $*"
    if ! "$@" >/dev/null; then
        failed+=("$* (its run folders: docs/$page)")
    fi
}

figure chaosnli-dynamics-contamination.md \
    nlieval plots runs/gemma-chaos --out "$IMG"
figure chaosnli-dynamics-contamination.md \
    nlieval plots runs/smol-dyn-chaos runs/baan2022 --common-items --against original \
    --out "$IMG/baan"
figure chaosnli-dynamics-contamination.md \
    nlieval dynamics runs/smol-dyn --plot "$IMG/dynamics.png"
figure chaosnli-dynamics-contamination.md \
    nlieval dynamics runs/smol-dyn-chaos --plot "$IMG/dynamics_chaosnli.png" \
    --entropy-plot "$IMG/dynamics_entropy_by_checkpoint.png"
figure chaosnli-dynamics-contamination.md \
    nlieval contamination --scores runs/contam-snli.jsonl \
    --run runs/readme-smollm2-135m --plot "$IMG/epg.png"
figure scientific.md \
    nlieval sci-report runs/smol-scinli-instruct --plot-dir "$IMG"
figure scientific.md \
    nlieval sci-report runs/minilm-sci runs/minilm-sci-hyp --plot-dir "$IMG"
figure reports.md \
    nlieval figure shots runs/smollm2-135m runs/gemma3-270m \
    --out "$IMG/across_accuracy_vs_shots.png"
figure reports.md \
    nlieval figure dynamics runs/smol-dyn runs/gemma-dyn --positions runs/positions.json \
    --out "$IMG/across_dynamics_tokens.png"
figure reports.md \
    nlieval figure dynamics runs/smol-dyn runs/gemma-dyn --positions runs/positions.json \
    --metric gold_nll --out "$IMG/across_dynamics_tokens_nll.png"

# The item and figures pages of a site of nlieval view, as headless Chromium draws it from file:// (the
# virtual time budget lets the page's script load its data before the picture is taken).
figure view.md \
    nlieval view runs/mm-bert runs/mm-bert-hyp runs/mm-roberta --out runs/site
figure view.md \
    "${NLIEVAL_CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,900 --virtual-time-budget=5000 \
    --screenshot="$(realpath "$IMG")/view_items.png" "file://$PWD/runs/site/index.html#items"
# The confusion and meta-inference pages, of the MisMatched folders and a run on the
# inferred items of docs/examples/inferred (the commands of view.md make them).
figure view.md \
    nlieval view runs/mm-bert runs/mm-bert-hyp runs/mm-roberta runs/inf-toy runs/inf-toy-source \
    --out runs/site-all
figure view.md \
    "${NLIEVAL_CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,900 --virtual-time-budget=5000 \
    --screenshot="$(realpath "$IMG")/view_confusion.png" "file://$PWD/runs/site-all/index.html#confusion"
figure view.md \
    "${NLIEVAL_CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,1500 --virtual-time-budget=5000 \
    --screenshot="$(realpath "$IMG")/view_inferred.png" "file://$PWD/runs/site-all/index.html#inferred"
figure view.md \
    "${NLIEVAL_CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,620 --virtual-time-budget=5000 \
    --screenshot="$(realpath "$IMG")/view_figures.png" "file://$PWD/runs/site/index.html#figures"

if [ ${#failed[@]} -gt 0 ]; then
    echo "doc_images.sh: ${#failed[@]} figure command(s) failed:" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "doc_images.sh: every figure${PAGE:+ of docs/$PAGE} written into $IMG"
