"""ChaosNLI annotation statistics: Fleiss' kappa and the label-change shares."""

from __future__ import annotations

import os

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from nlieval.analyses.chaosnli import fleiss_kappa, label_change_share
from nlieval.data import load_task

DATA = os.environ.get("NLIEVAL_DATA_DIR")


def test_fleiss_kappa_agrees_with_statsmodels() -> None:
    rng = np.random.default_rng(0)
    for cats in (2, 3, 4):
        for _ in range(10):
            shares = rng.dirichlet(np.ones(cats), size=40)
            table = np.array([rng.multinomial(100, p) for p in shares])
            assert fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table, method="fleiss"))
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[3, 1], [2, 1]])


@pytest.mark.data
@pytest.mark.skipif(not DATA, reason="needs NLIEVAL_DATA_DIR")
def test_chaosnli_label_change_shares_match_the_paper() -> None:
    # ChaosNLI (Nie et al. 2020): the majority of 100 new labels differs from the original
    # label on 31.77% (MNLI), 24.97% (SNLI) and 10.64% (alpha-NLI) of the items.
    got = {
        t: round(100 * label_change_share(load_task(t, DATA).items), 2)
        for t in ("chaosnli_mnli", "chaosnli_snli", "chaosnli_alphanli")
    }
    assert got == {"chaosnli_mnli": 31.77, "chaosnli_snli": 24.97, "chaosnli_alphanli": 10.64}
    counts = np.array([it.meta["human_counts"] for it in load_task("chaosnli_snli", DATA).items])
    assert fleiss_kappa(counts) == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"))


@pytest.mark.data
@pytest.mark.skipif(not DATA, reason="needs NLIEVAL_DATA_DIR")
def test_stats_prints_the_label_change_share(capsys: pytest.CaptureFixture[str]) -> None:
    from nlieval.cli import main

    assert main(["stats", "--task", "chaosnli_mnli", "--data-dir", str(DATA)]) == 0
    out = capsys.readouterr().out
    assert "differs from the original label on 31.77% of items; Fleiss' kappa" in out
