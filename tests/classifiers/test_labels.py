"""The labels of a classifier's outputs (:mod:`nlieval.classifiers.labels`): a
``--label-map`` that names one output twice is refused in one line (issue 34: the map
was accepted, the later entry winning)."""

from __future__ import annotations

import pytest

from nlieval.classifiers import ClassifierError, task_labels_of


@pytest.mark.parametrize(
    ("entries", "first", "second"),
    [
        ({"0": "entailment", "LABEL_0": "contradiction"}, "0=entailment", "LABEL_0=contradiction"),
        ({"LABEL_0": "entailment", "label_0": "neutral"}, "LABEL_0=entailment", "label_0=neutral"),
    ],
)
def test_a_label_map_naming_one_output_twice_is_refused(
    entries: dict[str, str], first: str, second: str
) -> None:
    id2label = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    with pytest.raises(ClassifierError) as err:
        task_labels_of(id2label, {**entries, "1": "neutral", "2": "contradiction"})
    assert f"names the output 0 of the model (LABEL_0) twice: as {first} and as {second}" in str(
        err.value
    )
    # One entry per output is a map.
    ok = task_labels_of(id2label, {"LABEL_0": "e", "1": "n", "label_2": "c"})
    assert ok == ("entailment", "neutral", "contradiction")
