"""How a job ended, read from its run directory: result.json and exit.json parsed defensively, the
trainer's exit reason in words, and the state a requeued job shows. Pure functions: no backend, no store."""

from __future__ import annotations

import json
import logging
from typing import Any

from runcontract.contract import EXIT_DISK_FULL, EXIT_REASONS

log = logging.getLogger("cockpit.run.runner")  # the runner's logger: its warnings keep the name filters know


def parse_result(data: bytes, where: str) -> dict[str, Any] | None:
    """A result.json read from a backend, validated like runcontract.records.read_result (None if unusable)."""
    try:
        res = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s: result.json is not valid JSON", where)
        return None
    if not isinstance(res, dict) or not isinstance((res.get("timing") or {}).get("train_time_s"), int | float):
        log.warning("%s: result.json lacks timing.train_time_s", where)
        return None
    return res


def parse_exit(data: bytes) -> dict[str, Any] | None:
    """An exit.json read from a backend (None when empty, not JSON or not an object)."""
    try:
        value = json.loads(data) if data else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def exit_reason(record: dict[str, Any]) -> str:
    """The trainer's own account of how it ended (exit.json), for the job's reason column."""
    detail = record.get("message") or record.get("reason") or ""
    return f"exit {record.get('code')}: {detail}".strip().rstrip(":")


def disk_full_words(reason: str, exit_code: int | None, record: dict[str, Any] | None) -> tuple[str, int | None]:
    """A job that ended for a full work directory, said so and coded so: the batch script's exit 5 where the
    trainer left no exit.json (it could not write one), the trainer's code where the launcher's differs."""
    code = record.get("code") if record is not None else None
    if code == EXIT_DISK_FULL:
        return reason, EXIT_DISK_FULL
    if exit_code == EXIT_DISK_FULL and record is None:
        return "; ".join(filter(None, [reason, f"exit {EXIT_DISK_FULL}: {EXIT_REASONS[EXIT_DISK_FULL]}"])), exit_code
    return reason, exit_code


def requeue_aware(before: str, polled: str, reason: str) -> tuple[str, str]:
    """A job Slurm put back in the queue (node failure, preemption, its own time-limit checkpoint) is
    `pending` again under the same id: show it as `requeued`, with why, until it runs again."""
    if polled == "pending" and before in ("running", "completing", "requeued"):
        why = "requeued by Slurm after it had started" + (f"; now waiting: {reason}" if reason else "")
        return "requeued", why
    return polled, reason


def config_of_name(name: str, prefix: str) -> str | None:
    """The configuration id in a job name `<study>-<config id>` (None for another study's job)."""
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None
