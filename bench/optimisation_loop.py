"""The optimisation loop, for real on CPU workers: a baseline study, the cockpit's advice, the advised
change as a second study, and `cockpit compare`; the advised change's predicted gain against the measured
one.

Study A is small and real (local executor, synthetic ECG, 1 and 2 gloo workers of one core each, a fixed
number of steps). Its 2-worker run's advice (cockpit.advice, as the report and the headless lines print it)
names a key, a value and the T the prediction model expects. Study B is A with exactly the advised keys set
(`--what-if`'s arguments, applied by cockpit.whatif to A's file), run the same way. `cockpit compare A B`
then prints both side by side with B as predicted from A. The gain is T of A's 2-worker run minus T of B's.

Nothing is tuned to the answer: the model is chosen so that the all-reduce is a visible share of a step on
two cores (about 3.4 MB of gradients against a small batch), and whatever key the advice names is what B
changes. Each study runs its configurations one at a time; run it alone (the load average is printed).

    python bench/optimisation_loop.py            # about 2-4 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cockpit import advice  # noqa: E402
from cockpit.commands.compare import load as load_study_results  # noqa: E402
from cockpit.compare import Pair, compare  # noqa: E402
from cockpit.report.source import load_input  # noqa: E402
from cockpit.whatif import parse_assignment, variant_of  # noqa: E402
from tests.studies import to_toml  # noqa: E402 - the one writer of study TOML

TOLERANCE = 0.25  # of the predicted gain


def study_toml(name: str, workdir: Path, args: argparse.Namespace) -> str:
    return f"""[study]
name = "{name}"

[cluster]
kind = "local"
workdir = "{workdir}"
gpus_per_node = 2
max_concurrent_jobs = 1

[data.datasets.synthetic]
synthetic = true
records = 4
seconds = 120

[data.tokenizer]
name = "samples"
vocab = 256

[model]
layers = {args.layers}
d_model = {args.d_model}
heads = 4

[train]
steps = {args.steps}
lr = 1e-3
batch_size = {args.batch_size}
cpus_per_task = 1
device = "cpu"
eval = false
metrics_interval_s = 1.0

[sweep]
window = [{args.window}]
gpus_per_node = [1, 2]
"""


def run_study(path: Path) -> float:
    """`cockpit run --headless` (no preflight: nothing to check on this machine); its explained lines."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", "--skip-preflight", str(path),
                           "--out", str(path.parent / f"{path.stem}-report")],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}")
    for line in proc.stdout.splitlines():
        if ": T " in line:
            print("   ", line)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--keep", action="store_true", help="keep the studies' directory and print it")
    args = p.parse_args()
    print(f"load average before: {load_average()} on {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="hlm-loop-"))
    a_path = tmp / "A.toml"
    a_path.write_text(study_toml("loop-a", tmp / "work", args))
    print(f"1. baseline study A ({a_path.name}): 1 and 2 workers, d_model {args.d_model} x {args.layers} layers, "
          f"window {args.window}, batch {args.batch_size}, {args.steps} steps")
    wall = run_study(a_path)

    from cockpit.analysis import analyse

    rows = analyse(load_input(a_path).results)
    row = next(r for r in rows if r.get("workers") == 2)
    items = row["advice_items"]
    chosen = next((a for a in items if a.predicted is not None), None)
    print(f"2. the cockpit's advice for A's 2-worker run ({row['verdict']}):")
    for item in items:
        print(f"    {item.text()}")
        for other in item.alternatives:
            print(f"      or {other.text(head=False)}")
    if chosen is None or chosen.predicted is None:
        print("no advice with a predicted gain: nothing to try")
        return 1
    predicted = chosen.predicted
    what_if = chosen.what_if
    print(f"   trying the advice: {chosen.setting} (= cockpit plan A.toml --what-if {' '.join(what_if)})")

    from cockpit.spec import load_study

    assignments = [parse_assignment(a) for a in what_if]
    variant_of(load_study(a_path), assignments)  # the spec accepts it, as --what-if would
    raw = tomllib.loads(a_path.read_text())
    for key, value in assignments:
        section, name = key.split(".", 1)
        raw.setdefault(section, {})[name] = value
    raw["study"]["name"] = "loop-b"
    b_path = tmp / "B.toml"
    b_path.write_text(to_toml(raw))
    print(f"3. study B = A with {chosen.setting}")
    wall += run_study(b_path)
    a2_path = tmp / "A2.toml"
    a2_path.write_text(a_path.read_text().replace('name = "loop-a"', 'name = "loop-a2"'))
    print("4. study A again (A2), after B: how much two runs of the same study differ here")
    wall += run_study(a2_path)

    print("5. cockpit compare A.toml B.toml")
    subprocess.run([sys.executable, "-m", "cockpit", "compare", str(a_path), str(b_path)], cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "110"}, check=True)

    pairs = {}
    for name, path in (("B", b_path), ("A2", a2_path)):
        a_name, a_results, links = load_study_results(a_path)
        x_name, x_results, _ = load_study_results(path)
        c = compare(a_name, a_results, x_name, x_results, links)
        pairs[name] = next(pr for pr in c.pairs if pr.a.get("workers") == 2)
    pair, again = pairs["B"], pairs["A2"]
    t_a, t_b, t_a2 = pair.a["train_time_s"], pair.b["train_time_s"], again.b["train_time_s"]
    gain_p, gain_m = t_a - predicted.t_s, t_a - t_b
    ratio = gain_m / gain_p if gain_p else float("nan")
    print(f"6. the advised change, {chosen.setting}, on the 2-worker run (rank 0's T and its parts):")
    print(f"   {'':22}{'A':>8}{'B predicted':>13}{'B measured':>12}{'A2 (A again)':>14}")
    for part in PARTS:
        a, b, a2 = (r.get(f"{part}_s", 0.0) for r in (pair.a, pair.b, again.b))
        print(f"   {LABELS[part]:22}{a:8.2f}{predicted.parts.get(part, 0.0):13.2f}{b:12.2f}{a2:14.2f}")
    print(f"   {'T':22}{t_a:8.2f}{predicted.t_s:13.2f}{t_b:12.2f}{t_a2:14.2f}")
    print(f"   {'E = T1/(T/work)/N':22}{pair.a['efficiency']:8.3f}{predicted.efficiency:13.3f}"
          f"{pair.b['efficiency']:12.3f}{again.b['efficiency']:14.3f}")
    print(f"   gain T_A - T_B: predicted {gain_p:+.2f} s, measured {gain_m:+.2f} s ({ratio:.2f}x the predicted); "
          f"A2 - A: {t_a2 - t_a:+.2f} s (two runs of the same study)")
    if abs(ratio - 1) <= TOLERANCE:
        print(f"   within {TOLERANCE:.0%} of the predicted gain")
    else:
        print(f"   NOT within {TOLERANCE:.0%}: off by {gain_m - gain_p:+.2f} s ({ratio - 1:+.0%}). Why: {why(pair, again, predicted)}")
    print(f"wall: {wall:.0f} s for the three studies; load average after: {load_average()}")
    if args.keep:
        print(f"kept: {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


PARTS = ("data_wait", "compute", "comm", "optimizer", "other")
LABELS = {"data_wait": "data wait", "compute": "compute", "comm": "exposed all-reduce", "optimizer": "optimizer",
          "other": "other loop time"}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def why(pair: Pair, again: Pair, predicted: advice.Forecast) -> str:
    """Where the measured change parted from the predicted one: the parts the model changes (predicted
    against measured) and the parts it holds fixed (measured against how much the repeat of A moved them)."""
    a, b, a2 = pair.a, pair.b, again.b

    def part(r: dict, p: str) -> float:
        return float(r.get(f"{p}_s") or 0.0)

    priced = [p for p in PARTS if abs(predicted.parts.get(p, 0.0) - part(a, p)) > 1e-6]
    fixed = [p for p in PARTS if p not in priced]
    words = [f"{LABELS[p]} (which the model changes) moved {part(b, p) - part(a, p):+.2f} s against a predicted "
             f"{predicted.parts.get(p, 0.0) - part(a, p):+.2f} s" for p in priced]
    worst = max(fixed, key=lambda p: abs(part(b, p) - part(a, p)))
    moved, noise = part(b, worst) - part(a, worst), part(a2, worst) - part(a, worst)
    words.append(f"{LABELS[worst]}, which the model holds fixed under this key, moved {moved:+.2f} s "
                 f"({moved / part(a, worst):+.0%}) while running A again moved it {noise:+.2f} s"
                 + (": the change itself moved it, an effect the model does not price" if abs(moved) > 2 * abs(noise)
                    else ": within what two runs of one study differ by here"))
    return "; ".join(words)


if __name__ == "__main__":
    sys.exit(main())
