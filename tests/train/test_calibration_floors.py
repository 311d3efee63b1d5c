"""train.calibrate_min_sensitivity: the key's words, its rule across keys, and the choice it makes among the
candidates a calibration tried (trainer.scoring.calibration.choose)."""

from __future__ import annotations

import pytest

from trainer.config_keys import check_train, sensitivity_floors
from trainer.scoring.calibration import GATE_BINS, check_floors, choose


def candidate(share: float, gate: int | None, f1: float, s_se: float, v_se: float = 0.95) -> dict:
    return {"share": share, "gate_bin": gate, "bootstrap_macro_f1": f1, "sensitivity": {"N": 0.99, "S": s_se, "V": v_se}}


TRIED = [candidate(0.0, None, 0.60, 0.90), candidate(0.5, None, 0.70, 0.78), candidate(0.4, GATE_BINS[1], 0.68, 0.81),
         candidate(0.3, GATE_BINS[1], 0.66, 0.85), candidate(0.8, GATE_BINS[0], 0.72, 0.70, v_se=0.85)]


def test_without_floors_the_best_macro_f1_wins():
    best, met = choose(TRIED)
    assert (best["share"], best["bootstrap_macro_f1"], met) == (0.8, 0.72, True)


def test_floors_keep_the_best_macro_f1_among_those_meeting_them():
    best, met = choose(TRIED, {"S": 0.80})
    assert (best["share"], best["gate_bin"], met) == (0.4, GATE_BINS[1], True)
    best, met = choose(TRIED, {"S": 0.80, "V": 0.96})  # V met by none: the nearest, then the best among equals
    assert met is False and best["sensitivity"]["S"] >= 0.80 and best["bootstrap_macro_f1"] == 0.68


def test_no_candidate_meets_the_floors_the_nearest_is_kept():
    best, met = choose(TRIED, {"S": 0.95})
    assert (best["share"], met) == (0.0, False)  # 0.05 short, the least of all


def test_a_class_without_validation_beats_falls_short_by_its_whole_floor():
    rows = [{**candidate(0.0, None, 0.6, 0.9), "sensitivity": {"S": None}}, candidate(0.5, None, 0.5, 0.1)]
    assert choose(rows, {"S": 0.8})[0]["share"] == 0.5


@pytest.mark.parametrize(("entries", "expected"), [
    (["S=0.8"], {"S": 0.8}), (["S=0.8", "V = 0.9"], {"S": 0.8, "V": 0.9}), (["S=1"], {"S": 1.0}),
    (["S"], None), (["S=0"], None), (["S=1.5"], None), (["S=0.8", "S=0.9"], None), (["S=0.8.1"], None), ([], None)])
def test_the_keys_words(entries, expected):
    assert sensitivity_floors(entries) == expected


def test_floors_need_the_calibration():
    base = {"steps": 10, "val_records": ["201"], "class_weights": "balanced"}
    assert check_train({**base, "calibrate": True, "calibrate_min_sensitivity": ["S=0.8"]}) is None
    said = check_train({**base, "calibrate": False, "calibrate_min_sensitivity": ["S=0.8"]})
    assert said is not None and said.startswith("train.calibrate_min_sensitivity: ") and "calibrate = False" in said


def test_a_floor_for_a_class_the_run_lacks_is_refused():
    check_floors({"S": 0.8}, ["N", "S", "V", "F", "Q"])
    with pytest.raises(ValueError, match="no class X among this run's classes N, S, V"):
        check_floors({"X": 0.8}, ["N", "S", "V"])
