"""Slurm's words for a controller away and for a maintenance reservation, read as the cockpit reads them (the
lines are those the test Slurm 22.05 printed with its controller stopped or paused; the reservation line is
`scontrol -o show reservation` with SLURM_TIME_FORMAT=%s). The real outage and reservation run in
test_controller_away.py and test_maintenance.py."""

from __future__ import annotations

import time

import pytest

from cockpit.launch.backend import OutcomeUnknown
from cockpit.launch.maintenance import (
    Reservation,
    advice,
    crossing,
    fitting_minutes,
    minutes_words,
    pending_words,
    waiting_for_maintenance,
)
from cockpit.launch.slurm.parse import SubmitLater, controller_unreachable, parse_reservations, parse_sbatch
from cockpit.launch.ssh import CommandResult

STOPPED = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
PAUSED = "slurm_load_jobs error: Socket timed out on send/recv operation"
RESERVATION = ("ReservationName=hlm-maint StartTime=1800000000 EndTime=1800001200 Duration=00:20:00 "
               "Nodes=node1 NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES "
               "TRES=cpu=2 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE "
               "BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)")


@pytest.mark.parametrize("text", [STOPPED, PAUSED,
                                  "slurm_load_reservations error: Unable to contact slurm controller (connect failure)"])
def test_a_controller_that_does_not_answer_is_told_apart_from_any_other_error(text: str) -> None:
    assert controller_unreachable(text)
    assert not controller_unreachable("squeue: error: Invalid user: nobody")


def test_an_sbatch_that_timed_out_may_have_queued_its_job_one_that_could_not_connect_did_not() -> None:
    with pytest.raises(OutcomeUnknown):
        parse_sbatch(CommandResult("sbatch", 1, "", "sbatch: error: Batch job submission failed: Socket timed out "
                                                    "on send/recv operation"))
    with pytest.raises(SubmitLater) as later:
        parse_sbatch(CommandResult("sbatch", 1, "", "sbatch: error: Batch job submission failed: Unable to "
                                                    "contact slurm controller (connect failure)"))
    assert later.value.limit == "the Slurm controller is not answering"


def test_a_maintenance_reservation_is_read_with_its_window_and_flags() -> None:
    [r] = parse_reservations(RESERVATION + "\n")
    assert (r.name, r.start, r.end, r.nodes, r.partition) == ("hlm-maint", 1800000000.0, 1800001200.0, "node1", "")
    assert r.maintenance and r.flags == ("MAINT", "SPEC_NODES")
    assert parse_reservations("No reservations in the system\n") == []


def test_the_time_limit_that_fits_ends_a_minute_before_the_reservation() -> None:
    r = Reservation("maint", start=10_000.0, end=12_000.0, nodes="ALL", flags=("MAINT",))
    now = 10_000.0 - 30 * 60  # 30 minutes before it starts
    assert crossing([r], 3600, "gpu", now) == [r] and crossing([r], 20 * 60, "gpu", now) == []
    assert fitting_minutes(r, now) == 29 and minutes_words(29) == "00:29:00" and minutes_words(1500) == "1-01:00:00"
    words = advice(r, 3600, now)
    assert words.startswith("time limit 01:00:00 crosses maintenance reservation maint from ")
    assert words.endswith("or start now with a time limit of at most 00:29:00 ([cluster].time_limit)")
    under_way = advice(r, 3600, 11_000.0)
    assert "is under way: jobs start after" in under_way
    other = Reservation("other", start=10_000.0, end=12_000.0, partition="cpu", flags=("MAINT",))
    assert crossing([other], 3600, "gpu", now) == []  # on another partition


def test_a_job_pending_for_maintenance_reads_as_waiting_until_it_ends() -> None:
    assert waiting_for_maintenance("ReqNodeNotAvail, Reserved for maintenance")
    assert not waiting_for_maintenance("Priority")
    now = time.time()
    r = Reservation("maint", start=now + 60, end=now + 3600, flags=("MAINT",))
    words = pending_words([r], None, now)
    assert words.startswith("maintenance until ") and words.endswith(" (maint)"), words
    assert pending_words([], None, now) == "maintenance"
