"""The second paper's two examples (examples/workloads/) as local studies: the 2-worker T of each predicted from
its 1-worker baseline against the measured one, and the image example with pinned memory on and off, fp32
against bf16, on 1 worker. Every figure is the report's: scaling.csv of `cockpit run --headless`, and the first
prediction the store kept (made by the plan before the run, from the baseline and the preflight's link) as the
report's "Predicted vs measured" reads it; the refit one is from the runs' own start-up probes.

    python bench/workload_examples.py            # about 6 minutes on 2 cores; needs the workloads extra
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cockpit.forecast.key_effects import key_effects  # noqa: E402
from cockpit.report.source import load_input  # noqa: E402
from cockpit.report.study_data import load_study_data  # noqa: E402
from tests.studies import to_toml  # noqa: E402

EXAMPLES = REPO / "examples" / "workloads"
STUDIES = [  # (name, example, sweep, key defaults)
    ("image-scale", "image", {"gpus_per_node": [1, 2], "batch_size": [32]}, {"steps": 15, "size": 32}),
    ("lm-scale", "lm", {"gpus_per_node": [1, 2], "batch_size": [8]}, {"steps": 15, "seq": 64, "layers": 2, "width": 128}),
    ("image-pin-prec", "image", {"precision": ["fp32", "bf16"], "pin_memory": [False, True], "batch_size": [32]},
     {"steps": 10, "size": 32}),
]
HEADER = ["configuration", "N", "T s", "data wait", "compute", "comm", "optimizer", "other", "S",
          "first predicted T s", "error", "refit T/work s", "measured T/work s", "error"]


def _f(value: str | float | None, spec: str = ".3f") -> str:
    return "-" if value in (None, "") else format(float(value), spec)


def study(root: Path, name: str, example: str, sweep: dict, defaults: dict) -> Path:
    raw = tomllib.loads((EXAMPLES / f"{example}.toml").read_text())
    folder = root / name
    folder.mkdir()
    shutil.copy(EXAMPLES / raw["workload"]["command"][0], folder / raw["workload"]["command"][0])
    raw["study"]["name"] = name
    raw["cluster"]["workdir"] = str(root / "work")
    raw["sweep"] = sweep
    for key, value in defaults.items():
        raw["workload"]["keys"][key]["default"] = value
    (folder / "study.toml").write_text(to_toml(raw))
    return folder / "study.toml"


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="workload-examples-"))
    for name, example, sweep, defaults in STUDIES:
        path = study(root, name, example, sweep, defaults)
        out = root / f"{name}-report"
        done = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", str(path), "--out", str(out),
                               "--timeout", "900"], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{name}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            return 1
        first = load_input(path).first
        print(f"\n{name}")
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for r in csv.DictReader((out / "scaling.csv").open()):
            f = first.get(r["config_id"])
            t = float(r["train_time_s"])
            cells = [f"{r['precision']} {r['keys']}", r["workers"], *(_f(r[c]) for c in (
                "train_time_s", "data_wait_s", "compute_s", "comm_s", "optimizer_s", "other_s")),
                _f(r["speedup"], ".2f"), _f(f.t_s if f else None),
                _f(t / f.t_s - 1 if f and f.t_s > 0 else None, "+.1%"), _f(r.get("predicted_t_same_work_s")),
                _f(r["t_same_work_s"]), _f(r.get("prediction_error"), "+.1%")]
            print("| " + " | ".join(cells) + " |")
        for effect in key_effects(load_study_data(path).rows):  # the report's "What each swept key did"
            print(f"- {effect.words()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
