"""The vocabularies the HLM trainer's keys choose from, and the calibration floors' rule. Pure Python."""

from __future__ import annotations

import math
import re
from typing import Any

DEVICES = ("auto", "cpu", "cuda")
TASKS = ("beat", "rhythm")
CONTEXTS = ("none", "rr", "rr_rhythm", "rr_af", "rr_af_lock", "rr_af_lock_sinus")  # tokens before each window: trainer.data.rr_context
WAVEFORMS = ("raw", "diff", "both")  # what a samples window holds: trainer.data.beat_template
POOLS = ("mean", "centre")  # trainer.model
CLASS_WEIGHTS = ("balanced", "sqrt", "none")
TOKENIZERS = ("samples", "beats")
# what annotator "auto" tries after a database's ANNOTATORS list, in order (trainer.data.records.auto_annotators)
ANNOTATOR_PREFERENCE = ("atr", "ari")
N_SPECIAL = 4  # pad, mask, cls, sep: trainer.data.tokenizer_keys.SPECIAL_TOKENS


FLOOR = re.compile(r"^\s*([A-Za-z]\w*)\s*=\s*([0-9.]+)\s*$")


def sensitivity_floors(entries: list[Any]) -> dict[str, float] | None:
    """train.calibrate_min_sensitivity's entries (`S=0.8`) as {class: floor}; None when one is not CLASS=FLOOR with
    a floor in (0, 1] or a class is named twice."""
    floors: dict[str, float] = {}
    for entry in entries:
        m = FLOOR.match(str(entry))
        try:
            floor = float(m[2]) if m else math.nan
        except ValueError:
            return None
        if not m or not 0 < floor <= 1 or m[1] in floors:
            return None
        floors[m[1]] = floor
    return floors or None
