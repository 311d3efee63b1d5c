"""A run's energy over T as the views show it: joules, kWh, joules per sample and per token, from result.json
`energy` (runcontract/energy.py: the GPUs' NVML energy counter, else their power integrated; on CPU the RAPL package
counters), or the reason it was not measured. Never a figure where nothing was measured."""

from __future__ import annotations

import math
from typing import Any

J_PER_KWH = 3.6e6


def energy_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The row's energy_* fields: energy_j, energy_kwh, energy_j_per_sample, energy_j_per_token,
    energy_power_w, energy_source and energy_note (why blank, or "")."""
    record = result.get("energy")
    timing = result.get("timing") or {}
    if not isinstance(record, dict):
        return _blank("result.json has no energy record (a trainer before it was recorded)")
    joules = record.get("joules")
    if not isinstance(joules, int | float) or joules != joules:
        return _blank(f"not measured: {record.get('reason') or 'no reason recorded'}")
    samples, tokens = timing.get("samples"), timing.get("tokens")
    return {"energy_j": float(joules), "energy_kwh": float(joules) / J_PER_KWH,
            "energy_j_per_sample": float(joules) / samples if isinstance(samples, int | float) and samples else math.nan,
            "energy_j_per_token": float(joules) / tokens if isinstance(tokens, int | float) and tokens else math.nan,
            "energy_power_w": float(record.get("mean_power_w") or math.nan),
            "energy_source": str(record.get("source") or ""), "energy_note": ""}


def _blank(note: str) -> dict[str, Any]:
    return {"energy_j": math.nan, "energy_kwh": math.nan, "energy_j_per_sample": math.nan,
            "energy_j_per_token": math.nan, "energy_power_w": math.nan, "energy_source": "", "energy_note": note}


def energy_words(row: dict[str, Any]) -> str:
    """`1281 J over T (218 W, NVML energy counter): 0.100 J/sample, 0.39 mJ/token, 0.00036 kWh` or the note."""
    j = row.get("energy_j")
    if not isinstance(j, float) or j != j:
        return f"energy: {row.get('energy_note') or 'not measured'}"
    return (f"energy {j:,.0f} J over T ({row['energy_power_w']:.0f} W, {row['energy_source']}): "
            f"{row['energy_j_per_sample']:.3g} J/sample, {row['energy_j_per_token'] * 1e3:.3g} mJ/token, "
            f"{row['energy_kwh']:.3g} kWh")
