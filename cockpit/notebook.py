"""A study in a Jupyter notebook: the report's numbers as pandas DataFrames and its figures as matplotlib
Figures (docs/notebook.md).

    from cockpit.notebook import open_study

    study = open_study("tests/fixtures/recorded-store/store.sqlite")  # or a study file (.toml)
    study.scaling()                     # scaling.csv of `cockpit report`, as a DataFrame
    study.metrics(config_id)            # the run's metrics records (every rank)
    study.gpu(config_id)                # its NVML samples
    study.attribution(config_id)        # its overhead O in seconds per term, as printed
    study.memory(config_id)             # its memory per rank: bytes held by kind and the peak
    study.gpu_use()                     # MFU, GPU busy, host-bound seconds and energy per configuration
    study.figures()                     # the report's four figures

Reading never writes: a store is opened read-only, as `cockpit report` and `cockpit open store.sqlite`
open it (also a store a running cockpit is writing: curves are read as the file is at each call, the
scaling table as it was when the study was opened; open it again for newer results). Every number comes
from cockpit.forecast.analysis.analyse, the function behind the report, the TUI and the headless lines.
"""

from __future__ import annotations

import io
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.report.study_data import StudyData, label, load_study_data
from runcontract.axes import AXIS_KEYS
from runcontract.contract import MEMORY_FIGURES

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["TEXT_COLUMNS", "NotebookStudy", "full_run", "open_study"]

# scaling.csv's columns that are text whatever they look like (a config id "1234567890", a dataset "2017"):
# read_csv(path, dtype=TEXT_COLUMNS) reads the report's file as scaling() returns it
TEXT_COLUMNS = {c: str for c in ("config_id", "group_id", *(k.name for k in AXIS_KEYS if k.kind == (str,)), "status")}


# gpu_use()'s figures: analysis row keys (cockpit.forecast.analysis.gpu_figures, cockpit.figures.energy)
GPU_USE_COLUMNS = ("gpu_name", "mfu", "achieved_tflops", "peak_tflops", "mfu_device", "gpu_busy_pct",
                   "trace_gpu_busy_s", "trace_steps_s", "trace_kernels_per_step", "host_bound_s", "energy_j",
                   "energy_power_w", "energy_j_per_sample", "energy_j_per_token", "energy_kwh", "energy_source",
                   "mfu_note", "host_bound_note", "energy_note")


def open_study(path: str | Path, study: str | None = None) -> NotebookStudy:
    """The study of a store (.sqlite) or a study file (.toml; its store, else its local run directories),
    read as `cockpit report` reads it. `study` names one study of a store that holds several.

    Raises cockpit.report.source.ReportError (a ValueError) naming the file when it cannot be read."""
    return NotebookStudy(load_study_data(path, study))


class NotebookStudy:
    """One study, read-only. Configurations are named by their id or their label (`config_ids`, `labels`)."""

    def __init__(self, data: StudyData) -> None:
        self._data = data

    # -- what it is -------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._data.name

    @property
    def study_id(self) -> str:
        return self._data.study_id

    @property
    def source(self) -> str:
        """The file the results were read from (the store, or the run directories' folder)."""
        return self._data.input.source

    @property
    def problems(self) -> list[str]:
        """What could not be read (such runs are left out, as the report leaves them out)."""
        return list(self._data.input.problems)

    @property
    def config_ids(self) -> list[str]:
        """The configurations with a result, in the report's order."""
        return [str(r["config_id"]) for r in self._data.rows]

    @property
    def labels(self) -> dict[str, str]:
        """config id -> the configuration's label (`synthetic foundation w128 1x2 c1 fp32 b16`)."""
        return {str(r["config_id"]): label(r) for r in self._data.rows}

    def __repr__(self) -> str:
        return f"<study {self.name!r} ({self.study_id}): {len(self._data.rows)} configurations from {self.source}>"

    # -- the numbers ------------------------------------------------------------------------------------
    def scaling(self) -> pd.DataFrame:
        """The report's scaling.csv as a DataFrame: the same columns, rows and numbers (written by the same
        function, cockpit.forecast.analysis.write_scaling_csv, over the same analysis rows, and read back as pandas
        reads the file: an empty cell is NaN; the ids and the text axes are read as text, so an id of digits
        stays an id)."""
        import pandas as pd

        from cockpit.forecast.analysis import write_scaling_csv

        text = io.StringIO()
        write_scaling_csv(self._data.rows, text)
        text.seek(0)
        return pd.read_csv(text, dtype=TEXT_COLUMNS)

    def metrics(self, config: str, rank: int | None = None) -> pd.DataFrame:
        """The run's metrics records, oldest first: every rank, or `rank`. Columns as the store keeps them
        (docs/run-directory.md, metrics.jsonl): t, step, rank, loss, tokens_per_s, samples_per_s,
        step_time_s (interval / steps in it), data_wait_s, compute_s, comm_s, optimizer_s (seconds of the
        interval on that rank), train_time_s (T so far)."""
        from cockpit.store.snapshot import MetricPoint

        cid = self._config_id(config)
        return _frame(self._data.metrics(cid, rank=rank), MetricPoint)

    def gpu(self, config: str) -> pd.DataFrame:
        """The run's NVML samples (empty on a CPU run): t, host, gpu, util_pct, mem_used_bytes,
        mem_total_bytes, power_w, temp_c."""
        from cockpit.store.snapshot import GpuSample

        return _frame(self._data.gpu(self._config_id(config)), GpuSample)

    def attribution(self, config: str) -> pd.DataFrame:
        """Where the run's overhead O went, in seconds per term, as every screen and the report print it
        (cockpit.figures.explain.shown_terms: hundredths that add up to the printed O), largest loss first.

        Columns: term (data_wait, compute, comm, optimizer, other, host_bound, unaccounted), label (as printed),
        seconds (as printed), exact_s (full precision, as scaling.csv's loss_<term>_s). `.attrs` holds
        `overhead_s` (O as printed), `config_id`, `label` and `explanation` (the full sentence). A 1x1
        baseline, or a run whose baseline has not finished, has no terms."""
        import pandas as pd

        from cockpit.figures import explain

        row = self._data.row(config)
        o = row.get("overhead_s")
        terms: list[tuple[str, float]] = []
        shown_o = float("nan")
        if isinstance(o, float) and o == o and not row.get("baseline"):
            shown_o, terms = explain.shown_terms(row)
        frame = pd.DataFrame(
            [(t, explain.TERM_LABELS[t], v, float(row[f"loss_{t}_s"])) for t, v in terms],
            columns=["term", "label", "seconds", "exact_s"],
        )
        frame.attrs.update(overhead_s=shown_o, config_id=str(row["config_id"]), label=label(row),
                           explanation=row.get("explanation", ""))
        return frame

    def gpu_use(self) -> pd.DataFrame:
        """What the device says, one row per configuration with a result (the report's "GPU use and energy"
        table as data; the same analysis rows as scaling()): config_id, label, the GPU's NVML name, MFU with
        its inputs (achieved_tflops, peak_tflops, mfu_device), gpu_busy_pct (NVML over T), the trace's
        GPU-busy seconds, steps' seconds and kernels per step where one was read, host_bound_s, and the
        energy over T (energy_j, energy_power_w, energy_j_per_sample, energy_j_per_token, energy_kwh). A
        blank figure's reason is in mfu_note, host_bound_note or energy_note. The study's kWh:
        `study.gpu_use().energy_kwh.sum()`."""
        import pandas as pd

        rows = [{"config_id": str(r["config_id"]), "label": label(r), **{c: r.get(c) for c in GPU_USE_COLUMNS}}
                for r in self._data.rows if r.get("status") == "completed"]
        return pd.DataFrame(rows, columns=["config_id", "label", *GPU_USE_COLUMNS])

    def memory(self, config: str) -> pd.DataFrame:
        """Memory per rank as result.json records it: one row per rank with params_bytes, grads_bytes,
        optimizer_bytes (held, counted from the tensors; a sharded strategy's own shard), model_states_bytes
        (their sum) and peak_bytes (the device's peak). `.attrs` holds `peak_source` (CUDA's
        max_memory_allocated or the CPU process's peak resident memory), `strategy`, `config_id` and `label`.
        scaling() has rank 0's figures (and the largest peak) as its memory_* columns."""
        import pandas as pd

        row = self._data.row(config)
        memory = (row.get("result") or {}).get("memory") or {}
        frame = pd.DataFrame([{"rank": m.get("rank"), **{f: m.get(f) for f in MEMORY_FIGURES}}
                              for m in memory.get("by_rank") or []], columns=["rank", *MEMORY_FIGURES])
        frame.attrs.update(peak_source=memory.get("peak_source", ""), strategy=row.get("strategy"),
                           config_id=str(row["config_id"]), label=label(row))
        return frame

    def figures(self) -> dict[str, Figure]:
        """The report's four figures by name: time_vs_cpus, time_bars, efficiency, overhead, drawn by the
        function that draws the report's PNGs (cockpit.report.figures.draw_figure). They are handed over,
        not kept by pyplot: a notebook shows the one a cell ends with (`study.figures()["efficiency"]`) or
        those it `display`s, and `fig.savefig(...)` writes one."""
        import matplotlib.pyplot as plt

        from cockpit.figures import series
        from cockpit.report.figures import draw_figure

        out = {}
        for name in series.NAMES:
            fig, _ = draw_figure(name, self._data.rows, self._data.input.pending)
            plt.close(fig)  # pyplot lets go of it (no second copy shown inline, nothing kept open)
            out[name] = fig
        return out

    def rows(self) -> list[dict[str, Any]]:
        """The analysis rows themselves (cockpit.forecast.analysis.analyse), for anything the table leaves out (each
        row's per-rank breakdown `ranks`, its `result`)."""
        return [dict(r) for r in self._data.rows]

    def close(self) -> None:
        """Let go of the store file (also done when the object is collected)."""
        self._data.close()

    def __del__(self) -> None:
        try:
            self._data.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _config_id(self, config: str) -> str:
        return str(self._data.row(config)["config_id"])


def _frame(items: list[Any], kind: type) -> pd.DataFrame:
    import pandas as pd

    columns = [f.name for f in fields(kind)]
    return pd.DataFrame([[getattr(i, c) for c in columns] for i in items], columns=columns)


def full_run(study_file: str | Path, run: str, *, deadline: str | None = None, price_node_hour: float | None = None,
             price_kwh: float | None = None, queue: bool = True) -> pd.DataFrame:
    """The production run `run` (`steps=20000`, `epochs=3`, `tokens=2e9`, `samples=1e6`) on every configuration of
    the study file, as `cockpit plan STUDY --full-run RUN` prints it (docs/full-run.md; the same function,
    cockpit.run.full_run.time_to_result): one row per configuration with T, jobs, the queue's start, finish,
    node-hours, kWh and cost, each predicted figure with its 90% interval's ends (`_low`, `_high`; instants in
    epoch seconds), and `first`, `cheapest` (by `deadline`: `2026-12-24T18:00`) and `pareto` marking what the
    plan names. `.attrs["lines"]` holds the lines the command prints under its table. `queue`: ask the study's
    scheduler for its start estimates (`sbatch --test-only` over SSH; a local study has no queue). Raises
    ValueError naming a bad argument, BackendError where the cluster cannot be reached."""
    import pandas as pd

    from cockpit.forecast.full_run import Prices, parse_deadline, parse_production
    from cockpit.forecast.full_run_words import records, summary_lines
    from cockpit.run.full_run import time_to_result
    from cockpit.study.spec import load_study

    production = parse_production(run)
    outcome = time_to_result(load_study(study_file), production, deadline=parse_deadline(deadline) if deadline else None,
                             prices=Prices(price_node_hour, price_kwh), queue=queue)
    frame = pd.DataFrame(records(outcome))
    frame.attrs.update(lines=summary_lines(outcome), run=production.words())
    return frame

