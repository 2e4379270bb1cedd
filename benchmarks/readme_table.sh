#!/usr/bin/env bash
# The measured table of the README: both packaged models on the first 1,000 items of
# SNLI dev and ANLI R3 dev at k = 0, 1, 5 (seed 0), on this machine's CPU.
# Needs NLIEVAL_DATA_DIR (or --data-dir) pointing at the official files.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
for m in smollm2-135m gemma3-270m; do
    /usr/bin/time -v nlieval run --model "$m" --task snli,anli_r3 --shots 0,1,5 --limit 1000 \
        --out "runs/readme-$m" --no-progress > "runs/readme-$m.log" 2>&1
done
nlieval report runs/readme-smollm2-135m runs/readme-gemma3-270m --no-write
