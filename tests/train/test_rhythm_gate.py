"""The S decision's rhythm gate and the bootstrap over validation records (trainer.scoring.calibration), on real mitdb
records with atrial fibrillation (221) and with S beats in sinus rhythm and its runs (209), tokenized by the product's own prepare."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from trainer.data.dataset import WindowDataset
from trainer.data.prepare import prepare_dataset
from trainer.data.rr_context import CONTEXT_FEATURES, RR_BINS, bin_floor, feature_site, gate_feature
from trainer.model import GATED_LOGIT, HeartLanguageModel, ModelConfig, gated
from trainer.parallelism.distributed import Dist
from trainer.scoring import calibration
from trainer.scoring.evaluate import classify
from trainer.scoring.scores import class_scores, judged_macro_f1

PRE_LOCAL = list(CONTEXT_FEATURES).index("pre_local")


@pytest.fixture(scope="module")
def shard(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("gate")
    return prepare_dataset(physionet / "mitdb", {"name": "samples", "fs": 180, "records": ["209", "221"]}, cache, 1)


@pytest.fixture(scope="module", params=["rr_af", "rr_af_lock"])
def windows(shard: Path, request: pytest.FixtureRequest) -> WindowDataset:
    """Each context that offers the gate: the irregularity, or the irregularity where no P wave keeps time."""
    return WindowDataset(shard, 32, "beat", ["209", "221"], context=request.param)


class EarlyMeansS(torch.nn.Module):
    """Calls S wherever the beat comes early against its neighbours (the pre/local token), with a margin no
    share of the class weights' tilt undoes: what a beat model learns from sinus rhythm, and what atrial
    fibrillation, where every beat comes early or late, makes it get wrong."""

    def __init__(self, windows: WindowDataset) -> None:
        super().__init__()
        self.cfg = ModelConfig(vocab_size=windows.vocab_size, max_len=windows.length, num_classes=5)
        self.early_below = windows.manifest.vocab_size + PRE_LOCAL * RR_BINS + RR_BINS // 2 - 3  # pre/local < 0.84
        self.head = torch.nn.Linear(1, 5)
        with torch.no_grad():
            self.head.weight.copy_(torch.tensor([[-6.0], [6.0], [-9.0], [-9.0], [-9.0]]))
            self.head.bias.copy_(torch.tensor([3.0, -3.0, -3.0, -3.0, -3.0]))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = self.head((tokens[:, PRE_LOCAL] < self.early_below).float()[:, None])
        return gated(logits, tokens, self.cfg.gate) if self.cfg.gate is not None else logits


def test_the_gate_shuts_one_class_where_its_token_is_at_or_past_the_threshold() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [1.0, 2.0, 0.0]])
    tokens = torch.tensor([[5, 9], [6, 9], [7, 9]])
    out = gated(logits, tokens, [0, 6, 1])
    assert out[0].tolist() == [1.0, 2.0, 0.0] and out[1:, 1].tolist() == [GATED_LOGIT, GATED_LOGIT]
    assert out[:, [0, 2]].tolist() == logits[:, [0, 2]].tolist()
    cfg = ModelConfig(vocab_size=20, max_len=4, num_classes=3, gate=[0, 6, 1])
    assert ModelConfig(**cfg.to_dict()) == cfg  # model.pt keeps it
    model = HeartLanguageModel(cfg)
    assert model(torch.tensor([[7, 1, 2, 3]]))[0, 1].item() == GATED_LOGIT
    with pytest.raises(ValueError, match=r"model gate \[0, 6, 3\]"):
        ModelConfig(vocab_size=20, max_len=4, num_classes=3, gate=[0, 6, 3])


def test_calibration_gates_s_inside_fibrillation_and_the_model_then_scores_what_it_recorded(
        windows: WindowDataset) -> None:
    """The stand-in calls 221's fibrillation beats S; the calibration keeps a gate, the model's configuration
    carries it, and the pooled figure it recorded is what classify() finds with the gated model."""
    model, d = EarlyMeansS(windows), Dist()
    classes = list(windows.manifest["beat_classes"])
    weight = torch.tensor([1.0, 8.0, 8.0, 8.0, 8.0])
    before = classify(model, windows, classes, d)
    chosen = calibration.calibrate(model, model.head, weight, windows, classes, d)
    gate = chosen["gate"]
    feature = gate_feature(windows.context)
    assert gate is not None and gate["bin"] in calibration.GATE_BINS and gate["feature"] == feature
    site = feature_site(windows.context, feature, windows.manifest.vocab_size)
    assert site is not None and model.cfg.gate == gate["model_gate"] == [site[0], site[1] + gate["bin"], 1]
    assert gate["threshold"] == pytest.approx(bin_floor(windows.context, feature, gate["bin"]))
    after = classify(model, windows, classes, d)
    kept = next(t for t in chosen["tried"] if t["share"] == chosen["share"] and t["gate_bin"] == gate["bin"])
    assert after["macro_f1"] == pytest.approx(kept["macro_f1"])
    assert judged_macro_f1(after)[0] == pytest.approx(kept["judged_macro_f1"])
    assert after["ppv"]["S"] > before["ppv"]["S"]  # fewer fibrillation beats called S
    assert after["sensitivity"]["S"] == before["sensitivity"]["S"]  # 209's S beats come in a regular rhythm
    ungated = next(t for t in chosen["tried"] if t["share"] == chosen["share"] and t["gate_bin"] is None)
    assert kept["bootstrap_macro_f1"] > ungated["bootstrap_macro_f1"]
    assert chosen["bootstrap"]["records"] == ["209", "221"]


def test_the_bootstrap_is_the_mean_macro_f1_over_resamples_of_the_records() -> None:
    """Two records' matrices: the figure is the mean over the fixed draw of the macro-F1 of the resample's sum,
    recomputed here by class_scores; with one record it is that record's macro-F1."""
    a = np.array([[50, 5], [2, 20]])
    b = np.array([[80, 1], [9, 3]])
    mats = np.stack([np.stack([a, b])])  # [1 candidate, 2 records, 2, 2]
    draw = np.random.default_rng(calibration.BOOTSTRAP_SEED).integers(0, 2, size=(calibration.BOOTSTRAP, 2))
    expected = np.mean([class_scores((a * (row == 0).sum() + b * (row == 1).sum()).tolist(), ["N", "S"])["macro_f1"]
                        for row in draw])
    assert calibration.bootstrap_macro_f1(mats, [0, 1])[0] == pytest.approx(expected)
    one = calibration.bootstrap_macro_f1(mats[:, :1], [0, 1])[0]
    assert one == pytest.approx(class_scores(a.tolist(), ["N", "S"])["macro_f1"])


def test_a_class_the_training_part_lacks_keeps_its_bias(windows: WindowDataset) -> None:
    """Weight 0 (no F or Q beat in the training records, as many databases have): no tilt to undo there, and the
    bias stays finite; a NaN bias would make that class every beat's argmax."""
    model, d = EarlyMeansS(windows), Dist()
    classes = list(windows.manifest["beat_classes"])
    chosen = calibration.calibrate(model, model.head, torch.tensor([1.0, 8.0, 8.0, 0.0, 0.0]), windows, classes, d)
    assert all(np.isfinite(chosen["bias_shift"])) and chosen["bias_shift"][3:] == [0.0, 0.0]
    assert torch.isfinite(model.head.bias).all()
    called = classify(model, windows, classes, d)["confusion"]
    assert sum(row[3] + row[4] for row in called) == 0  # never the classes it never trained on
