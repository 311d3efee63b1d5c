"""The work directory's space as the site's tools print it (cockpit.launch.storage), and the study's footprint
(cockpit.forecast.disk) that the preflight refuses a study on. df is run for real on a 1 MB tmpfs; `lfs` and
`quota` are not installed here, so their output is the tools' documented layout."""

from __future__ import annotations

import subprocess

import pytest

from cockpit.figures.sizes import size_words
from cockpit.forecast import disk
from cockpit.launch.storage import parse_lfs_quota, parse_probe, parse_quota, probe_command
from cockpit.study.spec import load_study
from tests.studies import write_study


def _probe(path: str, tool: str = "df") -> str:
    return subprocess.run(["bash", "-c", probe_command(path, tool)], capture_output=True, text=True, check=True).stdout


def test_df_on_a_small_file_system_before_and_after_it_fills(small_fs) -> None:
    fs = small_fs("1m")
    before = parse_probe(_probe(f"{fs.path}/study/runs/abc"), "df")  # not made yet: its nearest parent
    assert before.path == str(fs.path) and before.size_bytes == 1024 * 1024 and before.free_bytes > 1_000_000
    fs.fill(leave=0)
    after = parse_probe(_probe(str(fs.path)), "df")
    assert after.free_bytes == 0 and after.used_bytes == 1024 * 1024
    assert after.words() == f"1.05 MB / 1.05 MB, 0 B free (df on {fs.path})"


def test_a_quota_that_binds_is_what_the_line_says() -> None:
    df = "/scratch\nFilesystem 1024-blocks Used Available Capacity Mounted on\nlustre 1000000000 1000 999000000 1% /scratch\n"
    lfs = "--- quota\n     /scratch 1048576*  1000000 1048576       -    1234       0       0       -\n"
    s = parse_probe(df + lfs, "lfs")
    assert (s.quota_used_bytes, s.quota_limit_bytes) == (1048576 * 1024, 1048576 * 1024)
    assert s.quota_binds and s.free_bytes == 0
    assert s.words() == "1.07 GB / 1.07 GB, 0 B free (lfs quota on /scratch)"
    assert parse_lfs_quota("  /project 10 0 0 - 1 0 0 -") == (10 * 1024, None)  # no limit set
    quota = ("Disk quotas for user hlm (uid 1000):\n     Filesystem  blocks   quota   limit   grace   files\n"
             "      /dev/sda1  200  300  400   10  0  0\n")
    assert parse_quota(quota, "/dev/sda1") == (200 * 1024, 400 * 1024)
    assert parse_quota(quota, "/dev/sdb1") == (None, None)


def test_an_unreadable_probe_and_an_unknown_tool_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="df gave no line"):
        parse_probe("/x\n", "df")
    with pytest.raises(ValueError, match=r"storage_tool 'zfs': expected one of df, lfs, quota, none"):
        probe_command("/x", "zfs")
    # the path reaches a shell quoted
    assert "'/x; rm -rf ~'" in probe_command("/x; rm -rf ~", "df")


def test_the_footprint_shows_its_inputs_beside_the_result(tmp_path) -> None:
    study = load_study(write_study(tmp_path / "s.toml", "fp", tmp_path / "work", sweep={"window": [32, 64]},
                                   train={"steps": 10, "window": 32}))
    fp = disk.footprint(study)
    params = max(disk.run_parameters(study, c) for c in study.runnable())
    assert fp.runs == 2 and fp.parameters == params
    assert fp.checkpoints_bytes == sum(disk.run_parameters(study, c) * 16 for c in study.runnable())
    # the token cache is <workdir>/<study>/tokens by default: the synthetic shards count
    assert fp.shards_bytes == 2 * 30 * 360 * 2 and fp.shards_note == ""
    assert fp.total_bytes == fp.checkpoints_bytes + fp.in_flight_bytes + fp.logs_bytes + fp.shards_bytes
    assert fp.words().startswith(f"{size_words(fp.total_bytes)} = 2 runs' checkpoints and models "
                                 f"{size_words(fp.checkpoints_bytes)} ({params:,} parameters at most, 16 B each)")
