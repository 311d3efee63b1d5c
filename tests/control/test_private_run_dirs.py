"""A demo store copied for a second account, into a read-only folder, with its run directories private (0700,
as the cockpit makes them) and the first account's: `cockpit report` and the TUI go on from the store and say
in ONE line how many runs' files they leave out and what those would have added, never a PermissionError.
Run as an unprivileged user (tests/infra's $HLM_TEST_USER, else nobody) through runuser, as
tests/control/test_browse_demo_store.py does; skipped, saying why, where that user cannot run this interpreter."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cockpit.figures.run_files import unreadable_words
from tests.control.test_browse_demo_store import ROOT, STORE, copy_fixture, set_read_only, unprivileged_user

AS_THE_OTHER = """
import asyncio, sys
from pathlib import Path
from cockpit.cli import main as cli
from cockpit.commands.open import browse

folder, out = Path(sys.argv[1]), Path(sys.argv[2])

async def tui():
    app, store = browse(folder / "local-demo" / "cockpit.sqlite", poll=0.05)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(200):
                if app.polls >= 3:
                    break
                await pilot.pause(0.05)
            assert app.snapshot is not None, (app.polls, [n.message for n in app._notifications])
            print("problems", app.snapshot.problems[:1])
            print("configs", len(app.snapshot.configs))
            await pilot.press("q")
    finally:
        store.close()

asyncio.run(tui())
print("report", cli(["report", str(folder / "study.toml"), "--out", str(out / "report")]))
"""


def private_runs(folder: Path) -> list[str]:
    """Each configuration's run directory made real under the copy (0700, root's, with a metrics file the
    energy is read from), and the store pointed at them; returns the configuration ids."""
    con = sqlite3.connect(folder / STORE)
    ids = [row[0] for row in con.execute("SELECT config_id FROM configs ORDER BY rowid")]
    runs = folder / "local-demo" / "runs"
    for cid in ids:
        (runs / cid).mkdir(parents=True)
        (runs / cid / "metrics.jsonl").write_text(json.dumps({"step": 1, "t": 0.0}) + "\n", encoding="utf-8")
        con.execute("UPDATE configs SET run_dir = ? WHERE config_id = ?", (str(runs / cid), cid))
    con.commit()
    con.close()
    return ids


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: no second account's private run directories to meet")
def test_another_accounts_private_run_directories_are_one_line_not_a_traceback() -> None:
    user = unprivileged_user()
    base = Path(tempfile.mkdtemp(prefix="hlm-private-"))  # under /tmp: reachable by the user
    try:
        base.chmod(0o755)
        folder = copy_fixture(base / "demo")
        ids = private_runs(folder)
        out = base / "out"
        out.mkdir()
        out.chmod(0o777)
        set_read_only(folder, True)
        runs = folder / "local-demo" / "runs"
        for cid in ids:
            (runs / cid).chmod(0o700)  # private, as the cockpit writes run directories; root's
        env = {"PATH": os.environ["PATH"], "HOME": str(out), "MPLCONFIGDIR": str(out / "mpl"),
               "PYTHONPATH": str(ROOT), "TERM": "dumb", "LANG": "C.UTF-8"}
        run = subprocess.run(
            ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
             sys.executable, "-c", AS_THE_OTHER, str(folder), str(out)],
            cwd=out, capture_output=True, text=True, timeout=240,
        )
        said = run.stdout + run.stderr
        assert run.returncode == 0 and "Traceback" not in said and "PermissionError" not in said, said[-3000:]
        line = unreadable_words(ids)
        assert line.startswith("the run directories of 4 runs cannot be read by this account")
        assert f"problems [{line!r}]" in run.stdout and "configs 4" in run.stdout  # the TUI: from the store
        assert "report 0" in run.stdout and (out / "report" / "report.md").exists()
        assert [ln for ln in run.stderr.splitlines() if "cannot be read" in ln] == \
            [f"cockpit: {folder / STORE}: {line}"]  # once, however many runs
    finally:
        set_read_only(base / "demo", False)
        shutil.rmtree(base, ignore_errors=True)
