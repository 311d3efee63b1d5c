"""A tokenizer table validated by the key registry's rules (trainer/config_keys/), in pure Python.

Prepare, the preflight and the study spec (cockpit/study/spec.py, on the laptop, which has no numpy-heavy data
stack to spare) all validate a tokenizer table here, so a value is refused in the same words everywhere.
"""

from __future__ import annotations

from typing import Any

from trainer.config_keys import N_SPECIAL, TOKENIZER, TOKENIZERS, tokenizer_defaults
from trainer.data.errors import DataError

SPECIAL_TOKENS = {"pad": 0, "mask": 1, "cls": 2, "sep": 3}
assert len(SPECIAL_TOKENS) == N_SPECIAL
# Every key a tokenizer table may hold, with its default, per tokenizer; keys that belong to the other
# tokenizer are accepted and ignored (a study gives one table for all datasets), anything else is an error.
DEFAULTS: dict[str, dict[str, Any]] = {name: tokenizer_defaults(name) for name in TOKENIZERS}


def canonical(tokenizer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Validate a tokenizer table and return (name, the full parameters of that tokenizer)."""
    if not isinstance(tokenizer, dict):
        raise DataError(f"tokenizer: expected a table with a 'name', found {tokenizer!r}")
    unknown = sorted(set(tokenizer) - set(TOKENIZER))
    if unknown:
        raise DataError(f"tokenizer: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(TOKENIZER))})")
    for key, value in tokenizer.items():  # the other tokenizer's keys too: a wrong value is wrong wherever it is
        problem = TOKENIZER[key].problem(value)
        if problem:
            raise DataError(f"tokenizer.{key}: {problem}")
    name = tokenizer.get("name") or "samples"
    params = dict(DEFAULTS[name])  # the defaults are the registry's, valid by the same rules
    params.update({k: v for k, v in tokenizer.items() if k in params and v is not None})
    if name == "beats" and not params["rr_max_ms"] > params["rr_min_ms"]:
        raise DataError(f"tokenizer.rr_max_ms: expected a number of ms above rr_min_ms "
                        f"({params['rr_min_ms']}), got {params['rr_max_ms']!r}")
    return name, params
