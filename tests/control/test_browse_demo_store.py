"""Browsing a store that `cockpit demo` wrote (WAL mode) never writes it, and failures are one line each.

The store is tests/fixtures/demo-store (tests/fixtures/demo-store/record.py re-records it with the real
`cockpit demo --headless`). Browsing = `cockpit open STORE` (the TUI, driven by Textual's pilot),
`cockpit report` and `cockpit plan`: in a read-only directory they exit 0 and leave every file byte for byte
as it was, with nothing added (no -wal, -shm or journal). Root ignores a directory's mode for writing, so the
same commands also run as an unprivileged user ($HLM_TEST_USER, else nobody) through runuser, where the
read-only directory really refuses writes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.commands.open import browse
from cockpit.store import StudyStore, writer_live
from cockpit.tui.detail import RunDetailScreen

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "demo-store"
STORE = Path("local-demo") / "cockpit.sqlite"
STUDY = "local-demo"


async def wait_for(pilot, condition, timeout: float = 60.0) -> None:
    """Let the app run until `condition()` holds (as tests/tui/test_live.py waits for a live study)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "the cockpit did not get there in time"
        await pilot.pause(0.05)


def copy_fixture(target: Path) -> Path:
    """The fixture's study.toml and store, copied to `target` (record.py is not needed)."""
    (target / "local-demo").mkdir(parents=True)
    shutil.copyfile(FIXTURE / "study.toml", target / "study.toml")
    shutil.copyfile(FIXTURE / STORE, target / STORE)
    return target


def tree(folder: Path) -> dict[str, str]:
    """Every file below `folder` with the sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def set_read_only(folder: Path, read_only: bool) -> None:
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555 if read_only else 0o755)
        else:
            p.chmod(0o444 if read_only else 0o644)


@pytest.fixture
def ro_demo(tmp_path: Path):
    folder = copy_fixture(tmp_path / "demo")
    set_read_only(folder, True)
    yield folder
    set_read_only(folder, False)  # so pytest can remove it


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "demo")


def corrupt_result(folder: Path) -> tuple[str, dict]:
    """Cut one result row's JSON in the middle (the input of the failure tests); returns its id and config."""
    con = sqlite3.connect(folder / STORE)
    cid, values = con.execute("SELECT config_id, values_json FROM configs ORDER BY rowid DESC LIMIT 1").fetchone()
    con.execute("UPDATE results SET result_json = substr(result_json, 1, 60) WHERE config_id = ?", (cid,))
    con.commit()
    con.close()
    assert sorted(p.name for p in (folder / "local-demo").iterdir()) == ["cockpit.sqlite"]
    return cid, json.loads(values)


def test_the_fixture_is_a_wal_store_the_demo_wrote():
    data = (FIXTURE / STORE).read_bytes()
    assert data[:16] == b"SQLite format 3\x00" and data[18:20] == b"\x02\x02"  # WAL: what every cockpit writes
    assert (FIXTURE / STORE).stat().st_size < 2 * 2**20
    store = StudyStore(FIXTURE / STORE, read_only=True)
    try:
        snap = store.snapshot(STUDY)
        assert len(snap.configs) == 4 and all(c.state == "completed" and c.analysis for c in snap.configs)
    finally:
        store.close()
    assert sorted(p.name for p in (FIXTURE / "local-demo").iterdir()) == ["cockpit.sqlite"]


async def test_open_report_and_plan_leave_a_read_only_copy_byte_identical(ro_demo: Path, tmp_path: Path, capsys):
    before = tree(ro_demo)
    out = tmp_path / "out"
    out.mkdir()
    app, store = browse(ro_demo / STORE, poll=0.05, export_dir=out)  # what `cockpit open STORE` runs
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.polls >= 3)
            assert len(app.snapshot.configs) == 4
            assert store.db._kind == "immutable"  # nobody writes it: read as it is, no -shm/-wal
            await pilot.press("2", "3", "4", "1", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
            # A key goes to the focused widget, and a binding runs when the key has bubbled back up: `e`
            # pressed before `escape` has closed the run detail would land in the detail, which has no `e`.
            await pilot.press("escape")
            await wait_for(pilot, lambda: len(app.screen_stack) == 1)
            await pilot.press("e")  # the CSV is written by a worker thread the ExportCsv message starts
            await wait_for(pilot, lambda: app.exports)
            assert [p.parent for p in app.exports] == [out]
            await pilot.press("q")
        assert app.return_code in (0, None)
    finally:
        store.close()
    assert cli(["report", str(ro_demo / "study.toml"), "--out", str(out / "report-study")]) == 0
    assert cli(["report", str(ro_demo / STORE), "--out", str(out / "report-store")]) == 0
    assert cli(["plan", str(ro_demo / "study.toml")]) == 0
    assert "4 done" in capsys.readouterr().out
    assert tree(ro_demo) == before  # same files, same bytes: nothing written, nothing left beside the store
    assert (out / "report-study" / "report.md").exists() and (out / "report-store" / "report.md").exists()


async def test_a_snapshot_that_comes_while_a_view_is_mounted_is_drawn_once_it_is(demo: Path):
    """A poll's snapshot comes in from its thread while the UI awaits: on a loaded machine it found a run
    detail just pushed, or the plots' view mounting on its first visit, before their widgets existed, and
    the cockpit stopped on NoMatches. Here it comes at exactly that moment, every time."""
    from textual.widgets import TabbedContent

    from cockpit.tui.plots import PlotsView

    app, store = browse(demo / STORE, poll=None)  # one snapshot at mount, no polls: only the ones sent here
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            snap = store.snapshot(STUDY)
            app.open_detail(snap.configs[-1].config_id)
            detail = app.screen
            assert isinstance(detail, RunDetailScreen) and not detail.is_mounted
            app._apply(snap)
            plots = PlotsView(id="plots-view")
            app.query_one(TabbedContent).get_pane("plots").mount(plots)  # as the first visit does, not awaited
            assert not plots.is_mounted
            app._apply_tab("plots", snap)
            await wait_for(pilot, lambda: detail.is_mounted and plots.is_mounted)
            await pilot.pause()
            assert detail._snapshot is snap and plots._drawn_key is not None
            await pilot.press("q")
        assert app.return_code in (0, None)
    finally:
        store.close()


def test_a_live_writer_is_followed_and_its_files_left_to_it(demo: Path):
    """A cockpit writing the store in another process: each look sees its commits; when it exits it
    removes its -wal and -shm (the browser held no connection between looks)."""
    path = demo / STORE
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\n"
         "from cockpit.store import StudyStore\n"
         f"s = StudyStore({str(path)!r}); k = s.study_key({STUDY!r})\n"
         "for line in sys.stdin:\n"
         "    s.add_problem(k, 'test', line.strip()); print('ok', flush=True)\n"
         "s.close()\n"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    store = StudyStore(path, read_only=True)
    try:
        for i in range(3):
            writer.stdin.write(f"written {i}\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "ok"
            assert writer_live(path)
            snap = store.snapshot(STUDY)
            assert store.db._kind == "live" and snap.problems[0] == f"test: written {i}"
        writer.stdin.close()
        assert writer.wait(timeout=30) == 0
        assert sorted(p.name for p in path.parent.iterdir()) == ["cockpit.sqlite"]  # the writer cleaned up
        snap = store.snapshot(STUDY)
        assert store.db._kind == "immutable" and snap.problems[0] == "test: written 2"
    finally:
        store.close()
        if writer.poll() is None:
            writer.kill()


def test_files_a_killed_cockpit_left_are_read_from_a_private_copy(demo: Path):
    path = demo / STORE
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import time\n"
         "from cockpit.store import StudyStore\n"
         f"s = StudyStore({str(path)!r}); s.add_problem(s.study_key({STUDY!r}), 'test', 'before the kill')\n"
         "print('ok', flush=True); time.sleep(300)\n"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    assert writer.stdout.readline().strip() == "ok"
    writer.kill()
    writer.wait()
    before = tree(demo)
    assert {"cockpit.sqlite-wal", "cockpit.sqlite-shm"} <= {p.name for p in path.parent.iterdir()}
    assert not writer_live(path)
    store = StudyStore(path, read_only=True)
    try:
        snap = store.snapshot(STUDY)
        assert store.db._kind == "copy" and snap.problems[0] == "test: before the kill"  # read from the -wal
    finally:
        store.close()
    assert tree(demo) == before


def unprivileged_user() -> str:
    """An unprivileged user to run this interpreter as: $HLM_TEST_USER (tests/infra) when it exists, else nobody.
    Skips, saying why, without runuser, without such a user, or when that user cannot run this interpreter (a
    virtual environment whose Python lives in root's home)."""
    import pwd

    if shutil.which("runuser") is None:
        pytest.skip("no runuser to run as an unprivileged user")
    for name in (os.environ.get("HLM_TEST_USER") or "hlmtest", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        probe = subprocess.run(["runuser", "-u", name, "--", sys.executable, "-c", "pass"], capture_output=True,
                               text=True, timeout=60)
        if probe.returncode != 0:
            pytest.skip(f"user {name} cannot run {sys.executable}: {probe.stderr.strip()}")
        return name
    pytest.skip("no unprivileged user (hlmtest or nobody)")


UNPRIVILEGED = """
import asyncio, sys
from pathlib import Path
from cockpit.cli import main as cli
from cockpit.commands.open import browse

folder, out = Path(sys.argv[1]), Path(sys.argv[2])
try:
    (folder / "probe").write_text("x")
except PermissionError:
    pass
else:
    sys.exit("the directory is writable for this user: the check would prove nothing")

async def tui():
    app, store = browse(folder / "local-demo" / "cockpit.sqlite", poll=0.05, export_dir=out)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(100):
                if app.polls >= 3:
                    break
                await pilot.pause(0.05)
            assert app.polls >= 3 and len(app.snapshot.configs) == 4, app.polls
            await pilot.press("2", "3", "1", "e")
            await app.workers.wait_for_complete()
            await pilot.press("q")
    finally:
        store.close()
    return 0

codes = [asyncio.run(tui()),
         cli(["report", str(folder / "study.toml"), "--out", str(out / "report")]),
         cli(["plan", str(folder / "study.toml")])]
print("codes", codes)
sys.exit(max(codes))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: the in-process test above already runs read-only")
def test_an_unprivileged_user_browses_a_read_only_directory():
    user = unprivileged_user()
    base = Path(tempfile.mkdtemp(prefix="hlm-browse-"))  # under /tmp: reachable by the user
    try:
        base.chmod(0o755)
        folder = copy_fixture(base / "demo")
        out = base / "out"
        out.mkdir()
        out.chmod(0o777)
        set_read_only(folder, True)
        before = tree(folder)
        env = {"PATH": os.environ["PATH"], "HOME": str(out), "MPLCONFIGDIR": str(out / "mpl"),
               "PYTHONPATH": str(ROOT), "TERM": "dumb", "LANG": "C.UTF-8"}
        run = subprocess.run(
            ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
             sys.executable, "-c", UNPRIVILEGED, str(folder), str(out)],
            cwd=out, capture_output=True, text=True, timeout=240,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert "codes [0, 0, 0]" in run.stdout
        assert tree(folder) == before
        assert (out / "report" / "report.md").exists()
        # and the same user asked for a report inside the read-only directory: one line naming it, exit 2
        refused = subprocess.run(
            ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
             sys.executable, "-m", "cockpit", "report", str(folder / "study.toml"), "--out", str(folder / "r")],
            cwd=out, capture_output=True, text=True, timeout=120,
        )
        assert refused.returncode == 2
        assert refused.stderr.strip() == (f"cockpit: --out {folder / 'r'}: cannot write there "
                                          "(Permission denied); choose a directory you can write")
        assert tree(folder) == before
    finally:
        set_read_only(base / "demo", False)
        shutil.rmtree(base, ignore_errors=True)


# --- one line per failure, never a traceback ----------------------------------------------------------------

def test_report_into_an_unwritable_directory_is_one_line(demo: Path, capsys):
    if not Path("/sys").is_dir():
        pytest.skip("no /sys here")
    out = "/sys/hlm-cockpit-report"  # refused even to root (a read-only directory is not, for root)
    assert cli(["report", str(demo / STORE), "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"cockpit: --out {out}: cannot write there (")
    assert err.rstrip().endswith("; choose a directory you can write")


def test_a_corrupt_result_row_is_named_and_the_other_runs_reported(demo: Path, tmp_path: Path, capsys):
    cid, values = corrupt_result(demo)
    from cockpit.study.spec import config_label

    label = config_label(values)
    assert cli(["report", str(demo / STORE), "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert f"{label} ({cid}): result row is not valid JSON (" in lines[0]
    assert "re-collect it from" in lines[0] and "with `cockpit run " in lines[0]
    assert "3 results, 3 configurations" in captured.out
    report = (tmp_path / "r" / "report.md").read_text()
    assert "1 configurations without a result yet" in report
    with (tmp_path / "r" / "scaling.csv").open() as f:
        assert len(f.read().splitlines()) == 1 + 3
    # the same through the study file, and the plan: the other runs shown, the bad one named, exit 2
    assert cli(["report", str(demo / "study.toml"), "--out", str(tmp_path / "r2")]) == 2
    assert cli(["plan", str(demo / "study.toml")]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert sum(f"({cid}): result row is not valid JSON" in line for line in captured.err.splitlines()) == 2
    assert "3 done" in captured.out


def test_a_corrupt_result_row_is_collected_again_by_a_writer(demo: Path):
    cid, _ = corrupt_result(demo)
    store = StudyStore(demo / STORE)
    try:
        key = store.study_key(STUDY)
        assert cid not in store.results(key) and not store.has_valid_result(key, cid)  # `cockpit run` re-reads it
        assert all(store.has_valid_result(key, c) for c in store.results(key))
    finally:
        store.close()


async def test_the_tui_shows_a_corrupt_row_as_a_problem_and_renders_the_rest(demo: Path):
    cid, _ = corrupt_result(demo)
    app, store = browse(demo / STORE, poll=0.05)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(100):
                if app.snapshot is not None:
                    break
                await pilot.pause(0.05)
            snap = app.snapshot
            assert snap is not None  # not stuck on "loading study…"
            assert len(snap.configs) == 4 and sum(c.analysis is not None for c in snap.configs) == 3
            bad = next(c for c in snap.configs if c.config_id == cid)
            assert "not valid JSON" in bad.verdict
            expected = f"({cid}): result row is not valid JSON"
            for _ in range(100):  # the notice follows the snapshot that carries the problem
                messages = [n.message for n in app._notifications]
                if any(expected in m for m in messages):
                    break
                await pilot.pause(0.05)
            assert any(expected in m for m in messages), messages
            assert not any("poll failed" in m for m in messages)
            await pilot.press("q")
    finally:
        store.close()


def test_a_store_given_as_a_study_file_says_cockpit_open(demo: Path, capsys):
    store = demo / STORE
    for command in (["plan", str(store)], ["run", "--headless", str(store)]):
        assert cli(command) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1
        assert f"{store}: this is a cockpit store (an SQLite database), not a study file; did you mean " \
               f"`cockpit open {store}`?" in err
