#!/usr/bin/env bash
# pdflatex and booktabs for the tests marked `latex` (tests/cli/test_latex_tables.py):
# Debian's texlive-latex-base (pdflatex) and texlive-latex-recommended (booktabs), without
# their recommended packages. Measured on the 2-core test machine (2026-11-28): 39-105 s the
# first time (16 packages, 48 MB of archives, 151 MB on disk); then a check of about 1 s.
#
#   bash scripts/setup_latex.sh   # apt-get install (once), then one table compiled
#
# Idempotent: with pdflatex and booktabs installed it only compiles a booktabs table once.
# Needs root for apt-get the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stage.sh
. scripts/stage.sh

if ! command -v pdflatex >/dev/null || ! kpsewhich booktabs.sty >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { echo "setup_latex.sh: no pdflatex with booktabs, and apt-get needs root" >&2; exit 1; }
    stage latex-apt "apt-get install texlive-latex-base texlive-latex-recommended (pdflatex, booktabs: 40-110 s the first time)" \
        apt_install texlive-latex-base texlive-latex-recommended
fi
check() {
    local dir
    dir=$(mktemp -d)
    printf '%s\n' '\documentclass{article}\usepackage{booktabs}\begin{document}' \
        '\begin{tabular}{ll}\toprule a & b \\ \midrule 1 & 2 \\ \bottomrule\end{tabular}' \
        '\end{document}' >"$dir/check.tex"
    (cd "$dir" && pdflatex -interaction=nonstopmode -halt-on-error check.tex >/dev/null) \
        || { echo "setup_latex.sh: pdflatex failed on a booktabs table; see $dir/check.log" >&2; return 1; }
    rm -rf "$dir"
}
stage latex-check "pdflatex compiles a booktabs table once" check
