"""The column table: every column the cockpit's tables can show, and what each stands for in a row.

The scaling table, the filter (cockpit.tui.filter), sorting and the command palette name columns by these
keys; which of them a study shows is its layout (cockpit.tui.model.scaling_layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.store.snapshot import ConfigRow
from runcontract.axes import AXIS, LABEL_ORDER

RUNNING = ("running", "completing")
STATE_WORDS = {"completed": "done", "not_submitted": "not submitted", "changed": "changed"}


def state_word(state: str) -> str:
    """A configuration's state in the header's words ("done", not "completed")."""
    return STATE_WORDS.get(state, state.replace("_", " "))


@dataclass(frozen=True)
class Column:
    """A table column; a fixed width for columns whose values change live (no re-measuring per update)."""

    key: str
    label: str
    width: int | None = None


# every column the scaling table can show, by key; labels carry the unit where the cells do not. The axes'
# headers are the axes table's (runcontract/axes.py); the scale column is nodes × workers per node
SCALING_COLUMN = {
    "mark": Column("mark", " ", 1),
    **{a: Column(a, "nodes×GPUs" if a == "scale" else AXIS[a].header) for a in LABEL_ORDER},
    "keys": Column("keys", "workload keys"),  # a script workload's own keys (Configuration.label_values)
    "state": Column("state", "state", 14),
    "time": Column("time", "T s", 6),
    "work": Column("work", "work", 5),
    "t_same_work": Column("t_same_work", "T/work s", 8),
    "speedup": Column("speedup", "speedup", 7),
    "efficiency": Column("efficiency", "eff", 4),
    "overhead": Column("overhead", "overhead s", 10),
    "tokens": Column("tokens", "tok/s avg", 9),
    "mfu": Column("mfu", "MFU", 6),
    "energy": Column("energy", "energy kWh", 10),
    "verdict": Column("verdict", "where the time went"),
    "quality": Column("quality", "quality Δ1×1", 14),
}
FIGURES = ("state", "speedup", "efficiency", "time", "t_same_work", "work", "overhead", "tokens", "verdict")
# every column in the historical order (headless consumers and the report's cross-check index cells by it); an
# axis added later is not in it (a study's own layout shows it where it varies: model.scaling_layout)
SCALING_COLUMNS = tuple(SCALING_COLUMN[k] for k in (
    "mark", *(a for a in LABEL_ORDER if a != "batch_size" and (a == "scale" or AXIS[a].core)), "state", "time", "work", "t_same_work", "speedup",
    "efficiency", "overhead", "tokens", "verdict"))
SORTABLE = tuple(k for k in SCALING_COLUMN if k != "mark")

QUEUE_COLUMNS = (
    Column("config", "configuration"),
    Column("job", "job"),
    Column("state", "state", 13),
    Column("elapsed", "elapsed / limit", 15),
    Column("nodes", "nodes"),
    Column("nodelist", "node list"),
    Column("reason", "reason"),
    Column("attempt", "try"),
)

GPU_JOB_COLUMNS = (
    Column("config", "configuration"),
    Column("job", "job"),
    Column("state", "state", 13),
    Column("allocated", "allocated / limit", 17),
    Column("nodes", "nodes"),
    Column("time", "T s", 8),
    Column("outside", "outside T s", 11),
)

GPU_COLUMNS = (
    Column("host", "host"),
    Column("gpu", "gpu"),
    Column("util", "util", 5),
    Column("util_spark", "utilisation over time", 24),
    Column("mem", "memory", 14),
    Column("mem_spark", "memory over time", 16),
    Column("power", "power", 7),
    Column("temp", "temp", 7),
    Column("flag", "flag", 10),
)

FIELD_ATTRS = {"time": "train_time_s", "work": "work_ratio", "t_same_work": "t_same_work_s", "speedup": "speedup",
               "efficiency": "efficiency", "overhead": "overhead_s", "tokens": "tokens_per_s", "state": "state",
               "verdict": "verdict", "workers": "workers", "explanation": "explanation",
               "quality": "quality"}

# columns of the analysis row itself (cockpit.forecast.analysis: MFU and energy, shown where a run has them)
ANALYSIS_FIELDS = {"mfu": "mfu", "energy": "energy_kwh"}


def field_value(row: ConfigRow, key: str) -> object:
    """The value a column (or filter field) of a row stands for, as recorded (no arithmetic)."""
    v = row.values
    if key == "scale":
        return row.workers
    if key in FIELD_ATTRS:
        return getattr(row, FIELD_ATTRS[key])
    if key in ANALYSIS_FIELDS:
        return (row.analysis or {}).get(ANALYSIS_FIELDS[key])
    if key == "id":
        return row.config_id
    return v.get(key)


def sort_value(row: ConfigRow, key: str) -> tuple:
    """Sort key that puts missing numbers last whatever the direction."""
    value = field_value(row, key)
    if value is None or (isinstance(value, float) and value != value):
        return (1, "")
    return (0, value) if isinstance(value, int | float) else (0, str(value))
