"""`cockpit plan` of 1,000 and 10,000 configurations: the wall time and where it goes, per configuration.

    python bench/plan_scale.py [--sizes 1000 10000] [--repeat 3]

The study is the published MeluXina matrix (examples/meluxina.toml: 8 windows x 3 GPU counts x 7 CPU counts x
2 modes) with a batch-size axis added to reach the size (3 values: 1,008 configurations; 30 values: 10,080).
Each figure is the best of --repeat runs in this process after one warm-up (templates compiled, modules
imported), except "command", a fresh `python -m cockpit plan STUDY` from spawn to exit, printing to a pipe
(imports, parsing, the script checks, the plan, every row of the table and the summary), and "render", which
writes every batch script into a temporary directory (`cockpit plan --render`). The stages:

  load     the study file read and judged (cockpit.study.spec.load_study), its matrix built
  check    the scripts' values judged as `cockpit run` would (render.check_scripts)
  plan     each configuration's status and cost (cockpit.store.recorded.study_plan; no store: every one to submit),
           what the TUI's plan dialog computes too
  table    the plan table of every row and the summary rendered to text (commands.plan, as printed)
  render   one batch script per runnable configuration written (render.render_study_scripts)
  dialog   the TUI's plan dialog (cockpit.tui.plan.PlanScreen) pushed on a headless app until it is idle,
           its table's first page shown (the plan itself not included); then ctrl+end, which adds every
           row, until idle again
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from cockpit.commands.plan import plan_summary, plan_table  # noqa: E402
from cockpit.launch.slurm.render import check_scripts, render_study_scripts  # noqa: E402
from cockpit.store.recorded import study_plan  # noqa: E402
from cockpit.study.spec import Study, load_study  # noqa: E402

EXAMPLE = ROOT / "examples" / "meluxina.toml"
BATCH_SIZES = {1000: [32, 64, 96], 10000: list(range(16, 16 + 30 * 8, 8))}


def study_file(size: int, directory: Path) -> Path:
    """The MeluXina example with a batch-size sweep that brings it to about `size` configurations."""
    sizes = BATCH_SIZES.get(size) or list(range(16, 16 + 8 * max(1, round(size / 336)), 8))
    text = EXAMPLE.read_text().replace('mode = ["foundation", "finetune"]',
                                       f'mode = ["foundation", "finetune"]\nbatch_size = {sizes}')
    path = directory / f"plan{size}.toml"
    path.write_text(text)
    return path


def best(fn: Callable[[Study], object], path: Path, repeat: int) -> float:
    """Best wall time of fn over a freshly loaded study (no id digested yet, as in a new `cockpit plan`)."""
    fn(load_study(path))  # warm-up: templates compiled, modules imported
    times = []
    for _ in range(repeat):
        study = load_study(path)
        start = time.perf_counter()
        fn(study)
        times.append(time.perf_counter() - start)
    return min(times)


def table_text(study: Study) -> str:
    console = Console(file=io.StringIO(), width=100)
    plan = study_plan(study)
    console.print(plan_table(study, 0, plan, console=console))
    console.print(plan_summary(study, plan))
    return console.file.getvalue()  # type: ignore[attr-defined]


def command_seconds(path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cockpit", "plan", str(path)], cwd=path.parent, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def dialog_seconds(study: Study) -> tuple[float, float]:
    """The TUI's plan dialog from push to idle, headless (the plan computed before), and then ctrl+end in its
    table (every row added) until idle."""
    from textual.app import App

    from cockpit.tui.plan import PagedTable, PlanScreen

    plan = study_plan(study)

    async def shown() -> tuple[float, float]:
        app = App()
        async with app.run_test(size=(120, 40)) as pilot:
            start = time.perf_counter()
            app.push_screen(PlanScreen(plan, None))
            await pilot.pause()
            pushed = time.perf_counter() - start
            app.screen.query_one("#plan-table", PagedTable).focus()
            start = time.perf_counter()
            await pilot.press("ctrl+end")
            await pilot.pause()
            return pushed, time.perf_counter() - start

    return asyncio.run(shown())


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages: other work on it slows every figure."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg()) + " (1, 5, 15 min)"


def top_functions(fn: Callable[[], object], count: int = 5) -> list[tuple[str, float]]:
    """The functions with the most own time in one run of fn (under the profiler, so slower than measured)."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    stats = pstats.Stats(profile)
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:count]  # type: ignore[attr-defined]
    return [(f"{Path(file).name}:{line}({name})", own) for (file, line, name), (_, _, own, _, _) in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {load_average()} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        print(f"{'configs':>8} {'runnable':>8} {'load s':>7} {'check s':>8} {'plan s':>7} {'table s':>8} "
              f"{'command s':>9} {'render s':>8}   per configuration (us): load check plan table render")
        dialogs: list[str] = []
        for size in args.sizes:
            path = study_file(size, directory)
            study = load_study(path)
            n, runnable = len(study.matrix()), len(study.runnable())
            t_load = best(lambda s, p=path: load_study(p).matrix(), path, args.repeat)
            t_check = best(check_scripts, path, args.repeat)
            t_plan = best(study_plan, path, args.repeat)
            t_table = best(table_text, path, 1)
            t_command = command_seconds(path, args.repeat)
            out = directory / f"scripts{size}"
            t_render = best(lambda s, o=out: render_study_scripts(s, o), path, 1)
            per = " ".join(f"{1e6 * t / n:.0f}" for t in (t_load, t_check, t_plan, t_table, t_render))
            print(f"{n:>8,} {runnable:>8,} {t_load:>7.3f} {t_check:>8.3f} {t_plan:>7.3f} {t_table:>8.3f} "
                  f"{t_command:>9.3f} {t_render:>8.3f}   {per}")
            pushed, every_row = dialog_seconds(study)
            dialogs.append(f"TUI plan dialog with {n:,} rows: {pushed:.2f} s from push to idle, "
                           f"then {every_row:.2f} s for ctrl+end (every row added)")
        print("\n".join(dialogs))
        print(f"\nwhere the time goes for {n:,} configurations (own time under the profiler):")
        for stage, fn in (("check", check_scripts), ("plan", study_plan), ("table", table_text)):
            fresh = load_study(path)  # ids not yet digested: what a fresh `cockpit plan` pays
            top = top_functions(lambda: fn(fresh))  # noqa: B023 - called at once
            print(f"  {stage}: " + ", ".join(f"{name} {own:.3f} s" for name, own in top))
    print(f"load average {load_average()} at the end")


if __name__ == "__main__":
    main()
