"""Time to first paint of the cockpit TUI vs a plain Textual hello-world (target <= 0.6 s).

    python bench/tui_startup.py [--runs 5]

Each measurement is a fresh Python process (imports included) from spawn to the first screen refresh,
headless. The cockpit opens the recorded test store; its first snapshot arrives from a worker thread after
that first paint, so "first data" is reported separately. The child also reports whether pandas,
matplotlib or torch were imported before the first paint (they must not be).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "recorded-store" / "store.sqlite"
HEAVY = ("pandas", "matplotlib", "torch", "numpy")


def child(kind: str, spawned: float, store: str) -> None:
    sys.path.insert(0, str(ROOT))
    marks: dict[str, float] = {}

    def heavy() -> list[str]:
        return [m for m in HEAVY if m in sys.modules]

    if kind == "hello":
        from textual.app import App
        from textual.widgets import Static

        class Hello(App):
            def compose(self):
                yield Static("Hello, world")

            def on_mount(self) -> None:
                self.call_after_refresh(self.painted)

            def painted(self) -> None:
                marks["paint"] = time.time() - spawned
                self.exit()

        Hello().run(headless=True, size=(150, 36))
        print(json.dumps({"paint_s": marks["paint"], "heavy": heavy()}))
        return

    from cockpit.store import StudyStore
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.controller import RecordedController

    db = StudyStore(store)

    class Probe(CockpitApp):
        def on_mount(self) -> None:
            self.call_after_refresh(self.painted)

        def painted(self) -> None:
            marks["paint"] = time.time() - spawned
            marks["heavy"] = heavy()

        def _apply(self, snap) -> None:
            super()._apply(snap)
            marks["data"] = time.time() - spawned
            self.call_after_refresh(self.exit)

    Probe(RecordedController(lambda: db.snapshot("recorded")), poll_interval=60.0, offer_plan=False).run(
        headless=True, size=(150, 36)
    )
    print(json.dumps({"paint_s": marks["paint"], "data_s": marks.get("data"), "heavy": marks["heavy"]}))


def measure(kind: str, store: str) -> dict:
    spawned = time.time()
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--spawned", repr(spawned), "--store", store],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child")
    parser.add_argument("--spawned", type=float)
    parser.add_argument("--store", default="")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.spawned, args.store)
        return
    tmp = Path(tempfile.mkdtemp())
    shutil.copy(FIXTURE, tmp / "store.sqlite")
    store = str(tmp / "store.sqlite")
    measure("cockpit", store)  # warm the OS file cache and bytecode once
    hello = [measure("hello", store) for _ in range(args.runs)]
    cockpit = [measure("cockpit", store) for _ in range(args.runs)]
    h = statistics.median(r["paint_s"] for r in hello)
    c = statistics.median(r["paint_s"] for r in cockpit)
    d = statistics.median(r["data_s"] for r in cockpit)
    print(f"runs: {args.runs} each (median), fresh process each, headless 150x36")
    print(f"textual hello-world first paint: {h:.3f} s")
    print(f"cockpit first paint:             {c:.3f} s  (target <= 0.6 s; {c / h:.2f}x hello-world)")
    print(f"cockpit first data on screen:    {d:.3f} s")
    print(f"heavy modules before first paint: {sorted(set(m for r in cockpit for m in r['heavy'])) or 'none'}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
