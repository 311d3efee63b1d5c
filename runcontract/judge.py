"""One line on how a run ended, from its run directory alone (and the launcher's exit status, if known).

Used where a configuration's run is reported (the local executor, the Slurm poller, `cockpit` views): a script
that exits non-zero, writes no result, ignores the stop signal or needs a newer library is named, with the
last lines of its log, so the other configurations go on and the user knows what to fix. Standard library only.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from runcontract import contract
from runcontract.files import ContractError, read_json

LOG_LINES = 3
STARTUP_SHARE = 0.10  # T below this share of the run's wall time: the run measured its start-up more than its steps


# torchrun's line when a worker fails; everything after it is the launcher's own traceback and report
LAUNCHER_FAILED = re.compile(r"torch/distributed/elastic/.*failed \(exitcode: (-?\d+)\) local_rank: (\d+)")


def last_lines(texts: Iterable[str], lines: int = LOG_LINES) -> str:
    """The last non-empty lines of the first text that has any, joined with " | " ("" when none has): the words
    every report of a failed run quotes from its logs (error log first, then output log). torchrun's report of a
    failed worker (its traceback and banner) is replaced by one line, "torchrun: local rank R exited C", so the
    lines quoted are the script's own."""
    for text in texts:
        kept = [line.strip() for line in text.splitlines() if line.strip()]
        launcher = next(((i, m) for i, line in enumerate(kept) if (m := LAUNCHER_FAILED.search(line))), None)
        if launcher is not None:
            at, match = launcher
            kept = [*kept[:at][-(lines - 1):], f"torchrun: local rank {match.group(2)} exited {match.group(1)}"]
        if kept:
            return " | ".join(kept[-lines:])
    return ""


def log_tail(run_dir: str | os.PathLike[str], lines: int = LOG_LINES) -> str:
    """The last non-empty lines of the run's error log, else its output log (the local executor's
    stderr.log/stdout.log, or Slurm's newest slurm-<job>.err/.out), joined with " | "; "" when there is none."""
    run_dir = Path(run_dir)
    candidates: list[Path] = []
    for pattern in (contract.LOCAL_STDERR_FILE, contract.SLURM_STDERR_FILE.replace("%j", "*"),
                    contract.LOCAL_STDOUT_FILE, contract.SLURM_STDOUT_FILE.replace("%j", "*")):
        found = sorted(run_dir.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        candidates += found[:1]
    def texts() -> Iterator[str]:
        for path in candidates:
            try:
                yield path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue

    return last_lines(texts(), lines)


def judge(run_dir: str | os.PathLike[str], returncode: int | None = None, lines: int = LOG_LINES) -> str:
    """How the run in `run_dir` ended, in one line (with the log's last `lines` lines where it went wrong)."""
    run_dir = Path(run_dir)
    try:
        ended = read_json(run_dir / contract.EXIT_FILE)
        result = read_json(run_dir / contract.RESULT_FILE)
        stop = read_json(run_dir / contract.STOP_FILE)
    except ContractError as exc:
        return f"unreadable run directory: {exc}"

    def with_log(text: str) -> str:
        tail = log_tail(run_dir, lines)
        return f"{text}; log: {tail}" if tail else f"{text}; no log lines"

    if ended is not None:
        code = int(ended.get("code", 1))
        message = str(ended.get("message") or ended.get("reason") or "")
        if code == contract.EXIT_OK:
            if result is None:
                return with_log(f"exited 0 but wrote no {contract.RESULT_FILE}")
            return _completed(result)
        if code == contract.EXIT_CHECKPOINTED:
            return (f"checkpointed after {ended.get('signal') or 'a stop signal'} at step {ended.get('step', '?')} "
                    f"(T so far {float(ended.get('train_time_s') or 0.0):.1f} s); run again to resume")
        if code == contract.EXIT_USAGE:
            return with_log(f"refused: {message}")
        return with_log(f"exited {code} ({ended.get('reason') or contract.exit_reason(code)}): {message}")
    if result is not None:
        return _completed(result)
    if stop is not None:
        when = time.strftime("%H:%M:%S", time.localtime(float(stop.get("t") or 0.0)))
        return with_log(f"ignored the stop signal: {stop.get('signal', 'a stop signal')} at {when}, then no checkpoint "
                        f"and no {contract.EXIT_FILE} (killed before it ended)")
    if returncode not in (None, 0):
        return with_log(f"exited {returncode} without writing {contract.EXIT_FILE} or {contract.RESULT_FILE}")
    return with_log(f"wrote no result: no {contract.RESULT_FILE} and no {contract.EXIT_FILE} in {run_dir}")


def startup_note(result: dict) -> str:
    """"the study is measuring start-up: T is 0.22 s of 8.1 s wall; run more steps" where a completed run's T
    (result.json timing.train_time_s) is under STARTUP_SHARE of its wall time (timing.wall_s: the launch to the
    result), else "": the one line every view of a run (judge, the report, the TUI) shows for it."""
    found = result.get("timing")
    timing: dict = found if isinstance(found, dict) else {}
    try:
        t, wall = float(timing.get("train_time_s") or 0.0), float(timing.get("wall_s") or 0.0)
    except (TypeError, ValueError):
        return ""
    if wall <= 0 or t >= STARTUP_SHARE * wall:
        return ""
    return f"the study is measuring start-up: T is {t:.2f} s of {wall:.1f} s wall; run more steps"


def _completed(result: dict) -> str:
    timing = result.get("timing") or {}
    mode = (result.get("attribution") or {}).get("mode", "hlm")
    note = startup_note(result)
    return (f"completed: T = {float(timing.get('train_time_s') or 0.0):.2f} s over {timing.get('steps', '?')} steps "
            f"on {result.get('world_size', '?')} worker(s) (parts: {mode})" + (f"; {note}" if note else ""))
