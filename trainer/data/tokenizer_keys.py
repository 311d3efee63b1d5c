"""The tokenizer tables' keys, defaults and validators, in pure Python.

Prepare, the preflight and the study spec (cockpit/spec.py, on the laptop, which has no numpy-heavy data
stack to spare) all validate a tokenizer table here, so a value is refused in the same words everywhere.
"""

from __future__ import annotations

import math
from typing import Any

from trainer.data.errors import DataError

SPECIAL_TOKENS = {"pad": 0, "mask": 1, "cls": 2, "sep": 3}
N_SPECIAL = len(SPECIAL_TOKENS)
TOKENIZERS = ("samples", "beats")

# Every key a tokenizer table may hold; keys that belong to the other tokenizer are accepted and
# ignored (a study gives one table for all datasets), anything else is an error.
DEFAULTS: dict[str, dict[str, Any]] = {
    "samples": {
        "vocab": 256, "quantizer": "mulaw", "mu": 15, "lead": 0, "fs": 360,
        "clip_percentile": 0.1, "margin": 0.1, "annotator": "auto", "highpass_hz": 0.0,
    },
    "beats": {"rr_bins": 16, "rr_min_ms": 200, "rr_max_ms": 2000, "annotator": "auto"},
}
COMMON_KEYS = {"name", "records"}


def canonical(tokenizer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Validate a tokenizer table and return (name, the full parameters of that tokenizer)."""
    if not isinstance(tokenizer, dict):
        raise DataError(f"tokenizer: expected a table with a 'name', found {tokenizer!r}")
    name = tokenizer.get("name", "samples")
    if name not in TOKENIZERS:
        raise DataError(f"tokenizer.name: unknown tokenizer {name!r} (expected one of: {', '.join(TOKENIZERS)})")
    known = COMMON_KEYS | set(DEFAULTS["samples"]) | set(DEFAULTS["beats"])
    unknown = sorted(set(tokenizer) - known)
    if unknown:
        raise DataError(f"tokenizer: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    params = dict(DEFAULTS[name])
    params.update({k: v for k, v in tokenizer.items() if k in params and v is not None})
    _check(name, params)
    return name, params


def _check(name: str, p: dict[str, Any]) -> None:
    def need(key: str, ok: bool, what: str) -> None:
        if not ok:
            raise DataError(f"tokenizer.{key}: {what}, found {p[key]!r}")

    def is_num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    need("annotator", isinstance(p["annotator"], str) and p["annotator"].replace("_", "").isalnum(),
         "expected an annotator extension such as 'atr', 'ari' or 'auto'")
    if name == "samples":
        need("vocab", isinstance(p["vocab"], int) and 2 <= p["vocab"] <= 65535 - N_SPECIAL,
             f"expected an integer 2..{65535 - N_SPECIAL}")
        need("quantizer", p["quantizer"] in ("uniform", "mulaw"), "expected 'uniform' or 'mulaw'")
        need("mu", is_num(p["mu"]) and p["mu"] > 0, "expected a positive number")
        need("lead", isinstance(p["lead"], (int, str)) and not isinstance(p["lead"], bool),
             "expected a lead index or name")
        need("fs", p["fs"] in (0, None) or (is_num(p["fs"]) and p["fs"] > 0),
             "expected a sampling rate in Hz (0 keeps each record's own)")
        need("clip_percentile", is_num(p["clip_percentile"]) and 0 <= p["clip_percentile"] < 50,
             "expected a percentile in [0, 50)")
        need("margin", is_num(p["margin"]) and 0 <= p["margin"] <= 10, "expected a fraction in [0, 10]")
        need("highpass_hz", is_num(p["highpass_hz"]) and 0 <= p["highpass_hz"] < 20,
             "expected a cut-off in Hz in [0, 20) (0 = off)")
    else:
        need("rr_bins", isinstance(p["rr_bins"], int) and 2 <= p["rr_bins"] <= 4096, "expected an integer 2..4096")
        need("rr_min_ms", is_num(p["rr_min_ms"]) and p["rr_min_ms"] > 0, "expected a positive number of ms")
        need("rr_max_ms", is_num(p["rr_max_ms"]) and p["rr_max_ms"] > p["rr_min_ms"],
             "expected a number of ms above rr_min_ms")
