"""View-model functions: idle-GPU flags, log overlap, formatting."""

from __future__ import annotations

from cockpit.store.snapshot import GpuSample, GpuSeries
from cockpit.tui import format as fmt
from cockpit.tui import gpu_rows, model


def series(config_id: str, host: str, gpu: int, utils: list[float]) -> GpuSeries:
    samples = tuple(
        GpuSample(t=float(i), host=host, gpu=gpu, util_pct=u, mem_used_bytes=2**30, mem_total_bytes=40 * 2**30,
                  power_w=100.0, temp_c=50.0)
        for i, u in enumerate(utils)
    )
    return GpuSeries(config_id, host, gpu, samples)


def test_idle_gpu_and_idle_node_are_flagged(recorded):
    snap = recorded.snapshot()
    running = next(c for c in snap.configs if c.state == "running")
    gpus = [
        series(running.config_id, "n1", 0, [95, 97, 99, 96, 98]),
        series(running.config_id, "n1", 1, [90, 3, 1, 0, 2, 1]),  # went idle
        series(running.config_id, "n2", 0, [0, 0, 1, 0, 0]),  # the whole node idles
    ]
    rows = gpu_rows.gpu_rows(gpus, running=True)
    flags = {r.key: str(r.cells[-1]) for r in rows}
    assert flags == {
        f"{running.config_id}:n1:0": "ok",
        f"{running.config_id}:n1:1": "idle",
        f"{running.config_id}:n2:0": "NODE IDLE",
    }
    first = next(r for r in rows if r.key.endswith("n1:0"))
    assert first.cells[2] == "98%" and first.cells[4] == "1.0/40 GiB"
    # after the job ended: how many times each GPU sat idle during the run
    ended = {r.key: str(r.cells[-1]) for r in gpu_rows.gpu_rows(gpus, running=False)}
    assert list(ended.values()) == ["never idle", "idle ×1", "idle ×1"]


def test_a_timeline_spreads_over_the_whole_run():
    assert gpu_rows.spread(list(range(100)), 5) == [0, 25, 50, 74, 99]
    assert gpu_rows.spread([1, 2], 5) == [1, 2]


def test_new_lines_finds_overlap_of_tails():
    old = ["a", "b", "c", "d"]
    assert model.new_lines(old, ["c", "d", "e", "f"]) == ["e", "f"]
    assert model.new_lines(old, ["a", "b", "c", "d"]) == []
    assert model.new_lines([], ["x"]) == ["x"]
    assert model.new_lines(old, ["q", "r"]) == ["q", "r"]  # no overlap: a gap, show everything
    # repeated lines: the longest overlap wins
    assert model.new_lines(["x", "x"], ["x", "x", "y"]) == ["y"]


def test_formatting():
    assert fmt.duration(59) == "59s" and fmt.duration(185) == "3m05s" and fmt.duration(7500) == "2h05m"
    assert fmt.duration(None) == "-" and fmt.duration(float("nan")) == "-"
    assert fmt.rate(1_234_567) == "1.23M" and fmt.rate(830) == "830"
    assert fmt.sparkline([0, 50, 100], 3, 0, 100) == "▁▅█"
    assert fmt.efficiency_style(0.9) == "bold green" and fmt.efficiency_style(0.3) == "bold red"


def test_bad_sort_and_group_keys_are_refused():
    import pytest

    from cockpit.tui.scaling import ScalingView

    view = ScalingView()
    with pytest.raises(ValueError, match="cannot sort by 'nope'"):
        view.sort_by("nope")
    with pytest.raises(ValueError, match="cannot group by 'nope'"):
        view.group("nope")
