"""Advice with a number: which study key acts on a loss, the value to try, and what the prediction model
expects from it; and the prediction of any changed configuration from a study's recorded runs.

Three modules, one job each: :mod:`~cockpit.forecast.advice.effects` (the one table of keys and their modelled
effects, and a configuration read as keys), :mod:`~cockpit.forecast.advice.forecasting` (a configuration predicted
from recorded runs: :func:`forecast`, which the advice, `cockpit plan --what-if` and `cockpit compare` all
use) and :mod:`~cockpit.forecast.advice.options` (the key and value tried per loss, and the advice's one line).
docs/prediction.md states each formula. The names below are the package's API.
"""

from cockpit.forecast.advice.effects import (
    BUCKET_LADDER_MB,
    GROUP_AXES,
    MAX_BUCKETS,
    Effect,
    axes_of,
    buckets_for,
    changed,
    config_of,
    diff_keys,
    effect_of,
    flat_config,
    identity_keys,
    key_effects,
    study_key,
    toml_value,
    what_if_arg,
)
from cockpit.forecast.advice.forecasting import (
                                    Forecast,
                                    Recorded,
                                    carried,
                                    carried_parts,
                                    forecast,
                                    straggler_wait,
)
from cockpit.forecast.advice.options import Advice, advice_text, advise, run_work

__all__ = ["BUCKET_LADDER_MB", "GROUP_AXES", "MAX_BUCKETS", "Advice", "Effect", "Forecast", "Recorded", "advice_text",
           "advise", "axes_of", "buckets_for", "carried", "carried_parts", "changed", "config_of", "diff_keys",
           "effect_of", "flat_config", "forecast", "identity_keys", "key_effects", "run_work", "straggler_wait",
           "study_key", "toml_value", "what_if_arg"]
