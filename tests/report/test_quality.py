"""cockpit.workloads.hlm.quality on known confusion matrices: every figure is the hand computation, and a damaged eval
keeps its run in the tables with a message naming the key."""

from __future__ import annotations

import math

import pytest

from cockpit.workloads.hlm.quality import MACRO_F1, MACRO_F1_NSVF, MASKED_LOSS, quality_of, quality_words

CLASSES = ["N", "S", "V", "F", "Q"]
# rows: true class; N 100, S 10, V 20, F 2 beats, no Q
CONFUSION = [[90, 5, 5, 0, 0], [4, 6, 0, 0, 0], [2, 0, 18, 0, 0], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]]
RECORD_A = [[60, 5, 0, 0, 0], [4, 6, 0, 0, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]]
RECORD_B = [[30, 0, 5, 0, 0], [0, 0, 0, 0, 0], [2, 0, 18, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0]]


def test_macro_f1_is_the_mean_of_the_hand_computed_per_class_f1() -> None:
    q = quality_of({"eval": {"split": "test", "classes": CLASSES, "confusion": CONFUSION,
                             "by_record": {"a": RECORD_A, "b": RECORD_B}}})
    assert q is not None and q.metric == MACRO_F1_NSVF and q.higher_is_better
    # F1 = 2 TP / (support + predicted as the class)
    f1 = {"N": 180 / 197, "S": 12 / 21, "V": 36 / 44, "F": 0.0}
    assert q.value == pytest.approx(sum(f1.values()) / 4)
    assert q.inputs == "mean F1 of N 0.914, S 0.571, V 0.818, F 0.000"
    scores = {c.name: c for c in q.classes}
    assert (scores["S"].support, scores["S"].sensitivity, scores["S"].ppv) == (10, 0.6, 6 / 11)
    assert scores["F"].ppv == 0.0 and scores["Q"].sensitivity is None and scores["Q"].f1 is None
    assert q.accuracy == pytest.approx(114 / 132) and q.samples == 132
    # records, most errors first, each with its largest confusions
    assert [(r.record, r.beats, r.errors) for r in q.records] == [("a", 76, 10), ("b", 56, 8)]
    assert q.records[0].confusions == (("N->S", 5), ("S->N", 4), ("F->N", 1))
    assert q.problem == ""


def test_classes_other_than_aami_average_every_present_class() -> None:
    q = quality_of({"eval": {"classes": ["normal", "af"], "confusion": [[8, 2], [1, 9]]}})
    assert q.metric == MACRO_F1 and q.value == pytest.approx((16 / 19 + 18 / 21) / 2)
    assert q.inputs == "mean F1 of normal 0.842, af 0.857"


def test_foundation_masked_loss_is_lower_is_better_and_compared_only_with_its_own_kind() -> None:
    q = quality_of({"eval": {"split": "train", "masked_loss": 3.5, "masked_accuracy": 0.1, "masked_tokens": 1000}})
    assert q.metric == MASKED_LOSS and q.value == 3.5 and not q.higher_is_better
    assert q.inputs == "mean cross-entropy over 1,000 masked tokens, accuracy 0.100"
    other = quality_of({"eval": {"split": "train", "masked_loss": 3.0, "masked_tokens": 10}})
    assert q.change(other) == pytest.approx(0.5)
    test_split = quality_of({"eval": {"split": "test", "masked_loss": 3.0, "masked_tokens": 10}})
    finetune = quality_of({"eval": {"classes": CLASSES, "confusion": CONFUSION}})
    assert math.isnan(q.change(test_split)) and math.isnan(q.change(finetune)) and math.isnan(q.change(None))


def test_a_run_that_was_not_scored_has_no_quality() -> None:
    assert quality_of({"status": "completed"}) is None
    assert quality_words({"quality_metric": None}) == ""


@pytest.mark.parametrize("ev, message", [
    ("broken", "result.json eval: expected an object, found str"),
    ({"classes": ["N", "S"], "confusion": [[1, 2]]},
     "result.json eval.confusion: expected a 2x2 matrix of counts (one row per class), found 1 rows"),
    ({"classes": ["N", "S"], "confusion": [[1, -2], [0, 1]]}, "result.json eval.confusion: expected counts"),
    ({"classes": "NS", "confusion": [[1]]}, "result.json eval.classes: expected a list of class names, found 'NS'"),
    ({"masked_loss": "nan?"}, "result.json eval.masked_loss: expected a number, found 'nan?'"),
    ({"accuracy": 0.9}, "result.json eval: expected `confusion` (fine-tune) or `masked_loss` (foundation), found "
                        "accuracy"),
])
def test_a_damaged_eval_names_the_key_and_keeps_the_run(ev, message) -> None:
    q = quality_of({"eval": ev})
    assert q is not None and math.isnan(q.value) and q.problem.startswith(message)
    row = {"quality_metric": q.metric, "quality": q.value, "quality_inputs": q.problem}
    assert quality_words(row) == f"quality: {q.problem}"


def test_a_damaged_record_matrix_is_reported_and_the_rest_still_scored() -> None:
    q = quality_of({"eval": {"classes": CLASSES, "confusion": CONFUSION,
                             "by_record": {"a": RECORD_A, "b": [[1, 2]]}}})
    assert q.value == pytest.approx((180 / 197 + 12 / 21 + 36 / 44) / 4)
    assert [r.record for r in q.records] == ["a"]
    assert q.problem == "result.json eval.by_record.b: expected a 5x5 matrix of counts (one row per class), found 1 rows"


def test_words_give_the_inputs_and_the_baseline_beside_the_value() -> None:
    row = {"quality_metric": MACRO_F1_NSVF, "quality": 0.5712, "quality_inputs": "mean F1 of N 0.9",
           "quality_1": 0.6, "quality_change": -0.0288, "baseline": False}
    assert quality_words(row) == "macro-F1 (N,S,V,F) 0.571 (mean F1 of N 0.9); 1x1: 0.600, -0.029 worse"
    loss = {**row, "quality_metric": MASKED_LOSS, "quality": 4.784, "quality_1": 4.545, "quality_change": 0.239}
    assert quality_words(loss).endswith("; 1x1: 4.545, +0.239 worse")  # a higher loss is worse
    assert quality_words({**loss, "quality_change": -0.0004}).endswith(", -0.000 same")
    assert quality_words({**row, "baseline": True}) == "macro-F1 (N,S,V,F) 0.571 (mean F1 of N 0.9)"
