"""Scaling-table refresh with 1000 configurations (target <= 30 ms) and memory with 1000 configurations
and 64 GPUs streaming at 1 Hz.

    python bench/tui_refresh.py [--configs 1000] [--gpus 64] [--ticks 600]

The app runs headless with a controller that serves generated snapshots (the shape `StudyStore.snapshot`
returns: configuration rows with results/progress, a 5-minute window of GPU samples per GPU). Timings are
for `ScalingView.apply` plus the screen update that follows it, in the app's own event loop.

"On screen" is from the start of the apply to the end of the last compositor frame (Textual's render of
every changed region of the screen, the work a real terminal's frame needs) before the app is idle again;
it includes waiting for Textual's frame timer. The pilot round trip is also printed: it adds
`pilot.pause()`'s idle detection, which sleeps at least 20 ms and another 20 ms whenever the app used
more than 1 ms of CPU in the first 20, so it cannot go under ~40 ms for any refresh that paints.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.store.snapshot import (  # noqa: E402
    ConfigRow,
    ConnectionState,
    GpuSample,
    GpuSeries,
    JobRow,
    StudySnapshot,
    count_states,
)
from cockpit.study.spec import Configuration  # noqa: E402
from cockpit.tui.app import CockpitApp  # noqa: E402
from cockpit.tui.controller import RecordedController  # noqa: E402
from cockpit.tui.scaling import ScalingView  # noqa: E402

WINDOW_S = 300  # the GPU view keeps 5 minutes of samples


def configs(n: int) -> list[ConfigRow]:
    axes = itertools.product(
        ("mitdb", "nsrdb", "sddb"), ("foundation", "finetune"), (128, 256, 384, 512, 640, 768, 896, 1024),
        ("bf16", "fp32"), (1, 2, 4, 8, 16, 32, 64, 128), (1, 2, 4), (1, 2),
    )
    rows = []
    for i, (ds, mode, win, prec, cpus, g, nodes) in enumerate(itertools.islice(axes, n)):
        cfg = Configuration(ds, mode, win, prec, 32, cpus, g, nodes)
        done = i % 3 != 0
        t = 100.0 * win / 128 / (g * nodes) ** 0.8
        s = 100.0 * win / 128 / t if done else None
        rows.append(ConfigRow(
            cfg.config_id, cfg.group_id, cfg.is_baseline, cfg.values(), "completed" if done else "running",
            job_id=str(10_000 + i), workers=cfg.workers, train_time_s=t if done else None,
            tokens_per_s=5e4 * g if done else None, speedup=s, efficiency=s / cfg.workers if s else None,
            overhead_s=t - t * 0.9 if done else None, verdict="compute-bound: 80% of step time" if done else "",
            progress=None if done else 0.1, eta_s=None if done else 600.0,
        ))
    return rows


def gpus(rows: list[ConfigRow], n: int, t_end: float) -> list[GpuSeries]:
    running = [r for r in rows if r.state == "running"]
    out = []
    for k in range(n):
        cfg = running[k // 4 % len(running)]
        samples = tuple(
            GpuSample(t_end - WINDOW_S + s, f"node{k // 4:03d}", k % 4, util_pct=90.0 + (s % 7),
                      mem_used_bytes=30e9, mem_total_bytes=40e9, power_w=300.0, temp_c=65.0)
            for s in range(WINDOW_S)
        )
        out.append(GpuSeries(cfg.config_id, f"node{k // 4:03d}", k % 4, samples))
    return out


def snapshot(rows: list[ConfigRow], gpu: list[GpuSeries], t: float) -> StudySnapshot:
    jobs = [JobRow(r.config_id, r.job_id, r.state, elapsed_s=60.0, time_limit_s=3600.0, nodes=1) for r in rows]
    return StudySnapshot("bench", "bench-cluster", ConnectionState.CONNECTED, t, t, rows, jobs, gpus=gpu,
                         counts=count_states(rows))


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run(args: argparse.Namespace) -> None:
    rows = configs(args.configs)
    t0 = 1_800_000_000.0
    state = {"snap": snapshot(rows, gpus(rows, args.gpus, t0), t0)}
    app = CockpitApp(RecordedController(lambda: state["snap"], live=True), clock=lambda: t0, poll_interval=None,
                     offer_plan=False)
    async with app.run_test(size=(160, 48)) as pilot:
        view = app.query_one(ScalingView)

        applied: list[float] = []
        repaint: list[float] = []
        roundtrip: list[float] = []
        frames: list[tuple[float, float]] = []  # (start, end) of every compositor frame
        screen = app.screen
        compositor_refresh = screen._compositor_refresh

        def frame() -> None:
            begin = time.perf_counter()
            compositor_refresh()
            frames.append((begin, time.perf_counter()))

        screen._compositor_refresh = frame
        await pilot.pause()  # let start-up finish (first layout, footer): not part of any refresh

        async def settle(start: float) -> tuple[float, float]:
            """Wait for the app to go idle; (on-screen ms, pilot round trip ms) from start."""
            first = len(frames)
            await pilot.pause()
            end = time.perf_counter()
            shown = frames[-1][1] if len(frames) > first else end
            return (shown - start) * 1000, (end - start) * 1000

        async def timed(snap: StudySnapshot) -> float:
            start = time.perf_counter()
            app._apply(snap)
            mid = time.perf_counter()
            first = len(frames)
            on_screen, total = await settle(start)
            applied.append((mid - start) * 1000)
            repaint.append(sum(e - b for b, e in frames[first:]) * 1000)
            roundtrip.append(total)
            return on_screen

        # 1) progress of the running third changes (same rows, same order): incremental cell updates
        incremental = []
        for k in range(1, 21):
            moved = [replace(r, progress=min(1.0, 0.1 + k * 0.04)) if r.state == "running" else r for r in rows]
            incremental.append(await timed(snapshot(moved, state["snap"].gpus, t0 + k)))
        # the floor: Textual repainting the same visible rows with nothing of ours to do
        floor = []
        table = view.table
        for _ in range(10):
            start = time.perf_counter()
            table._update_count += 1  # invalidates DataTable's render cache, as any cell update does
            table.refresh()
            floor.append((await settle(start))[0])
        # 2) a new order (sort) or a filter: the table is rebuilt
        rebuild = []
        for key in ("efficiency", "time", "window", "tokens", "speedup"):
            start = time.perf_counter()
            view.sort_by(key)
            rebuild.append((await settle(start))[0])
        # 3) memory: GPUs streaming at 1 Hz for args.ticks seconds of data (one snapshot per second)
        await pilot.press("3")
        gc.collect()
        before = rss_mib()
        series = state["snap"].gpus
        for tick in range(args.ticks):
            t = t0 + WINDOW_S + tick
            series = [
                replace(g, samples=g.samples[1:] + (replace(g.samples[-1], t=t, util_pct=float(tick % 100)),))
                for g in series
            ]
            app._apply(snapshot(rows, series, t))
            if tick % 10 == 0:
                await pilot.pause()
        gc.collect()
        after = rss_mib()
    print(f"{args.configs} configurations, {args.gpus} GPUs x {WINDOW_S} samples, headless 160x48")
    print(f"refresh, progress of {sum(r.state == 'running' for r in rows)} running rows changed: "
          f"on screen median {statistics.median(incremental):.1f} ms, max {max(incremental):.1f} ms (target <= 30 ms)")
    print(f"  of which building rows + diffing + cell updates: median {statistics.median(applied):.1f} ms; "
          f"Textual repaint (compositor frames): median {statistics.median(repaint):.1f} ms")
    print(f"  pilot round trip (adds pilot.pause()'s >= 20 ms idle detection): "
          f"median {statistics.median(roundtrip):.1f} ms, max {max(roundtrip):.1f} ms")
    print(f"  repaint floor (same rows, DataTable cache invalidated, nothing of ours): "
          f"on screen median {statistics.median(floor):.1f} ms")
    print(f"refresh, re-sorted (rows reordered in place, no re-measure): on screen median {statistics.median(rebuild):.1f} ms, max {max(rebuild):.1f} ms")
    print(f"peak RSS before streaming {before:.0f} MiB, after {args.ticks} s of 1 Hz samples {after:.0f} MiB "
          f"(+{after - before:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=64)
    parser.add_argument("--ticks", type=int, default=600)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
