"""Fine-tune parts that decide whether the model learns: validation split, early stopping, class weights,
the classifier's input, evaluation speed-ups."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from runcontract.records import read_exit, read_result
from tests.data.conftest import copy_records
from tests.train.tiny import RandomWindows, tiny_data, tiny_settings
from trainer import rundir
from trainer.commands.cli import main
from trainer.data import DataError
from trainer.data.batches import LabelledWindows
from trainer.model import HeartLanguageModel, ModelConfig
from trainer.parallelism.distributed import Dist
from trainer.run import checkpoint
from trainer.run.sources import balanced_weights, labelled_part, named_validation, validation_split
from trainer.run.train import run
from trainer.scoring import calibration, scores
from trainer.scoring.evaluate import classify
from trainer.scoring.scores import class_scores, judged_macro_f1
from trainer.settings import ConfigError, from_config


def test_validation_split_holds_out_whole_patients_evenly() -> None:
    records = [f"r{i}" for i in range(10)]
    train, val = validation_split(records, {}, 0.2)
    assert val == ["r2", "r7"] and set(train) == set(records) - set(val)
    patients = {"a_1": "a", "a_2": "a", "b_1": "b", "c_1": "c"}
    train, val = validation_split(list(patients), patients, 0.3)
    assert {patients[r] for r in train}.isdisjoint({patients[r] for r in val}) and val
    with pytest.raises(DataError, match="needs at least two"):
        validation_split(["a_1", "a_2"], {"a_1": "a", "a_2": "a"}, 0.2)


def test_named_validation_holds_out_the_named_records_patients_whole() -> None:
    patients = {"a_1": "a", "a_2": "a", "b_1": "b", "c_1": "c"}
    assert named_validation(list(patients), patients, ["a_2", "c_1"]) == (["b_1"], ["a_1", "a_2", "c_1"])
    with pytest.raises(DataError, match=r"train.val_records: x_9, t_1 not in the training split \(4 records: a_1"):
        named_validation(list(patients), patients, ["x_9", "a_1", "t_1"])
    with pytest.raises(DataError, match="every training patient would be in validation"):
        named_validation(list(patients), patients, ["a_1", "b_1", "c_1"])
    mixed = ["a_1", "svdb/865", "svdb/866"]
    with pytest.raises(DataError, match=r"865 not in the training split .*named with its database: 865 -> svdb/865$"):
        named_validation(mixed, {}, ["865"])


def test_the_labelled_part_keeps_evenly_spaced_patients_whole() -> None:
    assert labelled_part([f"r{i}" for i in range(20)], {}, 0.25) == ["r2", "r6", "r10", "r14", "r18"]
    patients = {"a_1": "a", "a_2": "a", "b_1": "b", "c_1": "c", "d_1": "d"}
    assert labelled_part(list(patients), patients, 0.5) == ["b_1", "d_1"]
    assert labelled_part(list(patients), patients, 0.75) == ["a_1", "a_2", "c_1", "d_1"]  # both of a's records
    assert labelled_part(list(patients), patients, 0.01) == ["c_1"]  # never none


def test_a_fine_tune_on_a_share_of_the_labels_trains_on_those_patients_and_says_which(
        physionet: Path, tmp_path: Path) -> None:
    """Five DS1 records of real mitdb: validation takes one patient (108), label_fraction 0.5 two of the other
    four (106 and 112, evenly spaced); result.json names them, and the windows trained on are theirs."""
    data = copy_records(physionet / "mitdb", tmp_path / "mitdb", ["100", "101", "106", "108", "109", "112"],
                        ("hea", "atr", "dat"))
    code = main(["train", "--run-dir", str(tmp_path / "run"), "--data", str(data), "--token-cache",
                 str(tmp_path / "c"), "--tokenizer", "samples", "--fs", "180", "--mode", "finetune", "--pool",
                 "centre", "--window", "32", "--batch-size", "8", "--layers", "1", "--d-model", "16", "--heads", "2",
                 "--steps", "2", "--val-fraction", "0.2", "--label-fraction", "0.5", "--device", "cpu",
                 "--cpus-per-task", "1", "--num-workers", "0"])
    assert code == 0, read_exit(tmp_path / "run")
    info = read_result(tmp_path / "run")["data"]
    assert info["val_records"] == ["108"] and info["labelled_records"] == ["106", "112"]
    assert sum(info["train_class_counts"].values()) == info["train_windows"] < 2 * 2600  # two half-hour records


def test_sqrt_weights_favour_rare_classes_less_than_balanced() -> None:
    counts = [900, 90, 10]
    for power in (1.0, 0.5):
        w = balanced_weights(counts, 3, power)
        assert sum(c * x for c, x in zip(counts, w, strict=True)) / sum(counts) == pytest.approx(1.0)
    bal, sq = balanced_weights(counts, 3), balanced_weights(counts, 3, 0.5)
    assert bal[2] / bal[0] == pytest.approx(90) and sq[2] / sq[0] == pytest.approx(90 ** 0.5)


def test_centre_pooling_reads_the_beat_position_only() -> None:
    torch.manual_seed(0)
    model = HeartLanguageModel(ModelConfig(vocab_size=20, max_len=9, layers=1, d_model=16, heads=2,
                                           num_classes=3, pool="centre", centre=4)).eval()
    x = torch.randint(0, 20, (2, 9))
    h = model.encode(x)
    assert torch.allclose(model(x), model.head(h[:, 4]))
    with pytest.raises(ValueError, match="model.pool"):
        ModelConfig(vocab_size=20, max_len=9, num_classes=3, pool="max")
    with pytest.raises(ValueError, match="outside the sequence"):
        ModelConfig(vocab_size=20, max_len=9, num_classes=3, pool="centre", centre=9)


def test_macro_f1_over_n_s_v_f_leaves_q_out() -> None:
    confusion = [[8, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 1, 0], [1, 0, 0, 0, 0]]
    r = class_scores(confusion, ["N", "S", "V", "F", "Q"])
    assert r["macro_f1_nsvf"] == pytest.approx((16 / 17 + 3) / 4)
    assert r["macro_f1_nsvf"] > r["macro_f1"]  # Q (never found) drags the all-class figure down
    assert class_scores([[1, 0], [0, 1]], ["low", "high"])["macro_f1_nsvf"] is None


def test_validation_runs_outside_t_keeps_the_best_weights_and_stops_early(tmp_path: Path) -> None:
    s = tiny_settings(tmp_path, mode="finetune", steps=12, val_every=2, patience=1, pool="centre")
    data = tiny_data(s)
    data.val = LabelledWindows(RandomWindows(24, s.axes.window, 3))
    assert run(s, data) == 0
    r = read_result(tmp_path)
    v = r["validation"]
    assert v["scored_windows"] == 24  # what each check scored, beside the part's own count (`windows`)
    steps = [h["step"] for h in v["history"]]
    assert steps[0] == 2 and steps == list(range(2, 2 * len(steps) + 1, 2))
    assert v["best_step"] in steps and r["timing"]["val_s"] == pytest.approx(v["seconds"])
    assert r["timing"]["val_s"] > 0
    # early stop: one validation without improvement ends the run before its 12 steps
    assert v["stopped_early"] == (r["timing"]["steps"] < 12)
    if v["stopped_early"]:
        assert steps[-1] == v["best_step"] + 2
    # T still splits exactly into its five parts; validation is not one of them
    assert sum(r["breakdown_s"].values()) == pytest.approx(r["timing"]["train_time_s"], abs=1e-6)
    assert r["eval"]["windows_per_s"] > 0 and r["eval"]["seconds"] > 0


def test_new_keys_are_checked_with_their_dotted_name(tmp_path: Path) -> None:
    base = {"train": {"steps": 1}}
    s = from_config(tmp_path, {**base, "model": {"context": "rr", "pool": "centre"}})
    assert (s.model.context, s.model.pool, s.train.val_fraction, s.train.patience) == ("rr", "centre", 0.0, 0)
    for section, key, value, msg in (("model", "context", "ecg", "model.context"),
                                     ("model", "pool", "max", "model.pool"),
                                     ("model", "waveform", "delta", "model.waveform"),
                                     ("train", "val_fraction", 1.5, "train.val_fraction"),
                                     ("train", "val_every", 0, "train.val_every"),
                                     ("train", "patience", -1, "train.patience"),
                                     ("train", "class_weights", "log", "train.class_weights")):
        cfg = {"model": {}, "train": {"steps": 1}}
        cfg[section][key] = value
        with pytest.raises(ConfigError, match=msg):
            from_config(tmp_path, cfg)


def test_calibration_moves_the_head_by_the_share_that_scores_best_on_validation(tmp_path: Path) -> None:
    """A trained run with unequal class weights, then calibrate(): every share's matrix is what classify()
    finds with the head so moved, the kept one scores best, and the head keeps exactly that move."""
    s = tiny_settings(tmp_path, mode="finetune", steps=8, pool="centre")
    data = tiny_data(s)
    assert run(s, data) == 0
    payload = checkpoint.load(tmp_path / rundir.MODEL_FILE)
    model = HeartLanguageModel(ModelConfig(**payload["model_config"]))
    model.load_state_dict(payload["model"])
    weight = torch.tensor([1.0, 6.0])  # "high" six times as costly to miss: the decision leans towards it
    val, d = LabelledWindows(RandomWindows(48, s.axes.window, 3)), Dist()
    before = model.head.bias.detach().clone()
    chosen = calibration.calibrate(model, model.head, weight, val, ["low", "high"], d)
    assert [t["share"] for t in chosen["tried"]] == list(calibration.SHARES)
    assert chosen["judged_classes"] == ["low", "high"]  # too few of either to judge: both (the plain macro-F1)
    assert all(t["judged_macro_f1"] == t["macro_f1"] for t in chosen["tried"])
    best = max(t["macro_f1"] for t in chosen["tried"])
    assert chosen["share"] == min(t["share"] for t in chosen["tried"] if t["macro_f1"] == best)
    torch.testing.assert_close(model.head.bias.detach(), before - chosen["share"] * torch.log(weight))
    assert classify(model, val, ["low", "high"], d)["macro_f1"] == pytest.approx(best)  # the head now decides so
    for tried in chosen["tried"]:  # each share's figure is that of the head moved by it
        with torch.no_grad():
            model.head.bias.copy_(before - tried["share"] * torch.log(weight))
        assert classify(model, val, ["low", "high"], d)["macro_f1"] == pytest.approx(tried["macro_f1"])


class _Linear(torch.nn.Module):
    """A class head over the tokens as numbers: enough for calibrate(), which only needs logits."""

    def __init__(self, n_in: int, classes: int) -> None:
        super().__init__()
        self.head = torch.nn.Linear(n_in, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(tokens.float())


def test_calibration_leaves_a_class_the_validation_part_holds_too_few_of(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three classes, the third with 3 validation items under a floor of 10: the shift and the choice cover
    the first two only, and the third's bias is where training left it."""
    monkeypatch.setattr(scores, "JUDGED_SUPPORT", 10)
    torch.manual_seed(0)
    labels = [0] * 30 + [1] * 20 + [2] * 3
    items = [(torch.randint(0, 9, (4,)), torch.tensor(c)) for c in labels]
    model = _Linear(4, 3)
    before = model.head.bias.detach().clone()
    weight = torch.tensor([1.0, 5.0, 50.0])
    chosen = calibration.calibrate(model, model.head, weight, items, ["a", "b", "rare"], Dist())  # type: ignore[arg-type]
    assert chosen["judged_classes"] == ["a", "b"]
    assert chosen["bias_shift"][2] == 0.0 and model.head.bias[2].item() == pytest.approx(before[2].item())
    torch.testing.assert_close(model.head.bias.detach()[:2], before[:2] - chosen["share"] * torch.log(weight[:2]))
    best = max(t["judged_macro_f1"] for t in chosen["tried"])
    assert chosen["share"] == min(t["share"] for t in chosen["tried"] if t["judged_macro_f1"] == best)


def test_judged_macro_f1_weighs_only_the_classes_held_enough_of() -> None:
    confusion = [[90, 10, 0], [5, 45, 0], [1, 1, 1]]  # the third class: 3 items, F1 0.4
    s = class_scores(confusion, ["N", "S", "F"])
    value, judged = judged_macro_f1(s, min_support=10)
    assert judged == ["N", "S"] and value == pytest.approx((s["f1"]["N"] + s["f1"]["S"]) / 2)
    assert judged_macro_f1(s, min_support=60) == (pytest.approx(s["macro_f1"]), ["N", "S", "F"])  # one: all


def test_calibrate_needs_a_validation_part_and_class_weights(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"train.calibrate: needs a validation part .* val_fraction = 0.0"):
        tiny_settings(tmp_path, mode="finetune", calibrate=True)
    with pytest.raises(ConfigError, match="class_weights = 'none'"):
        tiny_settings(tmp_path, mode="finetune", calibrate=True, val_fraction=0.2, class_weights="none")
    assert tiny_settings(tmp_path, mode="finetune", calibrate=True, val_records=["r1"]).train.val_records == ["r1"]
    with pytest.raises(ConfigError, match=r"give one of val_fraction .* or val_records .*, not both"):
        tiny_settings(tmp_path, mode="finetune", val_fraction=0.2, val_records=["r1"])


def test_a_calibrated_run_records_the_choice_beside_validation_outside_t(tmp_path: Path) -> None:
    s = tiny_settings(tmp_path, mode="finetune", steps=6, val_every=3, pool="centre", val_fraction=0.2,
                      calibrate=True)
    data = tiny_data(s)
    data.val = LabelledWindows(RandomWindows(24, s.axes.window, 3))
    data.class_weights = [1.0, 4.0]
    assert run(s, data) == 0
    r = read_result(tmp_path)
    chosen = r["validation"]["calibration"]
    assert chosen["share"] in calibration.SHARES and chosen["class_weight"] == [1.0, 4.0]
    assert chosen["bias_shift"] == pytest.approx([0.0, -chosen["share"] * math.log(4.0)])
    assert chosen["seconds"] > 0 and r["timing"]["val_s"] == pytest.approx(r["validation"]["seconds"])
    assert r["timing"]["val_s"] >= chosen["seconds"] + sum(v["seconds"] for v in r["validation"]["history"]) - 1e-9
