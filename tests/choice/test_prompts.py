"""Templates render exactly the METHODS.md layouts; few-shot draws are fixed and clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval.choice.prompts import PromptBuilder, draw_shots, load_template
from nlieval.types import ALPHA, NLI2, NLI3, Item, Label


def test_nli3_prompt_text_exactly() -> None:
    shot = Item("s", "A man sleeps.", "A man is awake.", Label.CONTRADICTION)
    test = Item("t", "A cat sits.", "An animal sits.", Label.ENTAILMENT)
    p = PromptBuilder("nli3", NLI3, [shot]).build(test)
    assert p.text == (
        "Premise: A man sleeps.\nHypothesis: A man is awake.\n"
        "A. Entailment\nB. Neutral\nC. Contradiction\nAnswer: C\n\n"
        "Premise: A cat sits.\nHypothesis: An animal sits.\n"
        "A. Entailment\nB. Neutral\nC. Contradiction\nAnswer:"
    )
    assert p.continuations == (" A", " B", " C")
    assert p.shots == ("s",)


def test_hans_prompt_adds_one_period() -> None:
    item = Item(
        "t", "The doctor advised the president .", "The president advised the doctor .", None
    )
    p = PromptBuilder("nli2", NLI2, []).build(item)
    assert p.text == (
        "Premise: The doctor advised the president.\n"
        "Hypothesis: The president advised the doctor.\n"
        "A. Entailment\nB. Non-Entailment\nAnswer:"
    )


def test_alphanli_prompt_uses_choices() -> None:
    shot = Item(
        "s", "Ron got a job.", "Ron was fired.", Label.HYP2, ("He worked hard.", "He was rude.")
    )
    test = Item(
        "t", "Sandy lived in NY.", "Sandy was prepared.", None, ("It stormed.", "She partied.")
    )
    p = PromptBuilder("alphanli", ALPHA, [shot]).build(test)
    assert p.text == (
        "Observation 1: Ron got a job.\nObservation 2: Ron was fired.\n"
        "A. He worked hard.\nB. He was rude.\nAnswer: B\n\n"
        "Observation 1: Sandy lived in NY.\nObservation 2: Sandy was prepared.\n"
        "A. It stormed.\nB. She partied.\nAnswer:"
    )
    assert p.continuations == (" A", " B")


def test_user_template_string_and_file(tmp_path: Path) -> None:
    item = Item("t", "P.", "H.", None)
    tpl = (
        "{{ premise }} => {{ hypothesis }}? "
        "{% for l, t in options %}{{ l }}={{ t }} {% endfor %}Answer:"
    )
    assert PromptBuilder("nli3", NLI3, [], tpl).build(item).text == (
        "P. => H.? A=Entailment B=Neutral C=Contradiction Answer:"
    )
    f = tmp_path / "t.jinja"
    f.write_text(tpl)
    assert PromptBuilder("nli3", NLI3, [], str(f)).build(item).text.startswith("P. => H.?")
    with pytest.raises(ValueError, match="template line 1"):
        load_template("nli3", "{% for x in %}")


def _pool(n: int = 60) -> list[Item]:
    return [Item(f"p{i}", f"prem {i}", f"hyp {i}", NLI3[i % 3]) for i in range(n)]


def test_draws_are_fixed_per_task_k_seed() -> None:
    pool = _pool()
    a = [x.id for x in draw_shots(pool, "snli", 5, 0)]
    assert a == [x.id for x in draw_shots(list(reversed(pool))[::-1], "snli", 5, 0)]
    assert a != [x.id for x in draw_shots(pool, "snli", 5, 1)]
    assert a != [x.id for x in draw_shots(pool, "mnli_m", 5, 0)]
    assert len(set(a)) == 5


def test_test_item_never_among_its_shots() -> None:
    pool = _pool()
    shots = draw_shots(pool, "t", 5, 3)
    for s in shots:
        alt = draw_shots(pool, "t", 5, 3, exclude=s.id)
        assert s.id not in [x.id for x in alt]
        assert len(alt) == 5
        # Only the excluded shot is replaced; the others stay.
        assert len({x.id for x in alt} & {x.id for x in shots}) == 4


def test_balanced_draws_cover_labels() -> None:
    pool = [Item(f"p{i}", "p", "h", NLI3[0 if i < 50 else 1 + i % 2]) for i in range(60)]
    shots = draw_shots(pool, "t", 6, 0, balanced=True)
    assert sorted(x.label.value for x in shots if x.label) == sorted(
        ["entailment", "neutral", "contradiction"] * 2
    )


def test_unlabelled_pool_items_are_never_shots_and_short_pool_fails() -> None:
    pool = [Item("a", "p", "h", None), Item("b", "p", "h", Label.NEUTRAL)]
    assert [x.id for x in draw_shots(pool, "t", 1, 0)] == ["b"]
    with pytest.raises(ValueError, match="only 1 usable"):
        draw_shots(pool, "t", 2, 0)
