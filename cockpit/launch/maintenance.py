"""Maintenance reservations: which one a job's time limit crosses, and the time limit that ends before it.

Slurm starts no job whose time limit would run into a reservation with the MAINT flag on its nodes: the job
pends with the reason "ReqNodeNotAvail, Reserved for maintenance" until the reservation ends, although it
would have started at once with a time limit that ends before the reservation starts. The cockpit reads
``scontrol show reservation`` (cockpit/launch/slurm/client.py) into :class:`Reservation` and says, with the
reservation's name, start and end, which time limit fits; a job pending for it is "waiting: maintenance",
never a failure.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The reasons Slurm 22.05 gives a job held back by a reservation (squeue %r, scontrol's Reason=): a MAINT
# reservation on the nodes it needs ("ReqNodeNotAvail, Reserved for maintenance"), and a job that asked for a
# reservation not yet started ("Reservation").
MAINTENANCE_REASONS = ("Reserved for maintenance",)
RESERVATION_REASONS = ("ReqNodeNotAvail, Reserved for maintenance", "Reservation")
MARGIN_S = 60.0  # the time limit offered ends this long before the reservation starts (scheduling, start-up)


@dataclass(frozen=True)
class Reservation:
    """One ``scontrol show reservation`` entry (times as epoch seconds)."""

    name: str
    start: float
    end: float
    nodes: str = ""  # Slurm's node list ("ALL", "node[1-4]")
    partition: str = ""  # empty: the reservation names nodes, not a partition
    flags: tuple[str, ...] = ()

    @property
    def maintenance(self) -> bool:
        return "MAINT" in self.flags

    def touches(self, partition: str | None) -> bool:
        """Whether the reservation may hold this partition's nodes: one on the partition, or one that names
        nodes (no partition) is counted as touching it (the node lists are not compared)."""
        return not self.partition or not partition or self.partition == partition

    def crossed_by(self, time_limit_s: float, now: float) -> bool:
        """A job starting now with this time limit would still run when the reservation starts."""
        return now < self.end and now + time_limit_s > self.start


def waiting_for_maintenance(reason: str) -> bool:
    """Whether a pending job's Slurm reason says it waits for a maintenance reservation."""
    return any(words in reason for words in MAINTENANCE_REASONS)


def crossing(reservations: Iterable[Reservation], time_limit_s: float, partition: str | None,
             now: float | None = None) -> list[Reservation]:
    """The maintenance reservations on the partition that a job submitted now with this time limit crosses,
    the earliest first."""
    now = time.time() if now is None else now
    return sorted((r for r in reservations if r.maintenance and r.touches(partition)
                   and r.crossed_by(time_limit_s, now)), key=lambda r: r.start)


def fitting_minutes(reservation: Reservation, now: float | None = None) -> int:
    """The longest time limit in whole minutes that ends MARGIN_S before the reservation starts (0: none)."""
    now = time.time() if now is None else now
    return max(0, int((reservation.start - now - MARGIN_S) // 60))


def clock(t: float, now: float | None = None) -> str:
    """'14:30' today, 'Sat 28 Nov 02:00' on another day (local time of this machine)."""
    now = time.time() if now is None else now
    same_day = time.localtime(t)[:3] == time.localtime(now)[:3]
    return time.strftime("%H:%M" if same_day else "%a %d %b %H:%M", time.localtime(t))


def minutes_words(minutes: int) -> str:
    """Minutes as Slurm's --time reads them: 45 -> '00:45:00', 1500 -> '1-01:00:00'."""
    days, rest = divmod(minutes, 24 * 60)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{text}" if days else text


def window_words(r: Reservation, now: float | None = None) -> str:
    """'maintenance reservation maint_nov from 14:30 to 16:30 (nodes ALL)'."""
    where = f"nodes {r.nodes}" if r.nodes else f"partition {r.partition}"
    return f"maintenance reservation {r.name} from {clock(r.start, now)} to {clock(r.end, now)} ({where})"


def advice(r: Reservation, time_limit_s: float, now: float | None = None) -> str:
    """What a job of this time limit meets, and the time limit that would start it now."""
    now = time.time() if now is None else now
    limit = minutes_words(int(time_limit_s // 60))
    fits = fitting_minutes(r, now)
    if r.start <= now:
        return f"{window_words(r, now)} is under way: jobs start after {clock(r.end, now)}"
    if fits <= 0:
        return (f"time limit {limit} crosses {window_words(r, now)}: no time limit ends before it starts; "
                f"jobs start after {clock(r.end, now)}")
    return (f"time limit {limit} crosses {window_words(r, now)}: jobs wait until {clock(r.end, now)}, or start "
            f"now with a time limit of at most {minutes_words(fits)} ([cluster].time_limit)")


def pending_words(reservations: Sequence[Reservation], partition: str | None, now: float | None = None) -> str:
    """'maintenance until 16:30 (maint_nov)' for a job pending for maintenance; 'maintenance' where the
    reservation is not known (not listed, or not readable)."""
    now = time.time() if now is None else now
    ahead = [r for r in reservations if r.maintenance and r.touches(partition) and r.end > now]
    if not ahead:
        return "maintenance"
    r = min(ahead, key=lambda x: x.start)
    return f"maintenance until {clock(r.end, now)} ({r.name})"
