"""The clock arithmetic of every way in: the parts of each step add up to its wall time, the steps' walls to T."""

from __future__ import annotations

import pytest

from runcontract.ledger import Ledger


class Ticks:
    """A clock the test sets: readings are exact, so the sums are checked to the last bit that matters."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_parts_add_up_to_the_step_and_steps_to_t():
    clock = Ticks()
    ledger = Ledger(clock=clock)
    clock.t = 100.0
    ledger.enter("data_wait")
    clock.t = 100.5
    ledger.leave("data_wait")
    clock.t = 100.7  # 0.2 s in no part: other
    ledger.enter("compute")
    clock.t = 102.0
    ledger.leave("compute")
    ledger.enter("optimizer")
    clock.t = 102.25
    ledger.leave("optimizer")
    clock.t = 102.5
    first = ledger.end_step()
    assert first.wall_s == pytest.approx(2.5)
    assert first.parts == pytest.approx({"data_wait": 0.5, "compute": 1.3, "comm": 0.0, "optimizer": 0.25,
                                         "other": 0.45})
    clock.t = 104.0  # the second step starts where the first ended: 1.5 s, all other
    ledger.end_step()
    assert ledger.train_time_s == pytest.approx(4.0)
    parts = ledger.breakdown()
    assert sum(parts.values()) == pytest.approx(4.0, abs=1e-12)
    assert parts["other"] == pytest.approx(1.95)


def test_nested_parts_charge_the_inner_one_and_a_tail_goes_to_comm():
    clock = Ticks()
    ledger = Ledger(clock=clock)
    ledger.enter("compute")  # a forward
    clock.t = 101.0
    ledger.enter("data_wait")  # a batch fetched inside it
    clock.t = 101.5
    ledger.leave("data_wait")
    clock.t = 103.0
    ledger.leave("compute", tail=("comm", 102.0))  # the last gradient bucket was handed over at 102.0
    ledger.end_step()
    assert ledger.breakdown() == pytest.approx({"data_wait": 0.5, "compute": 1.5, "comm": 1.0, "optimizer": 0.0,
                                                "other": 0.0})


def test_time_before_the_first_step_and_after_the_last_is_outside_t():
    clock = Ticks()
    ledger = Ledger(clock=clock)
    clock.t = 110.0
    ledger.enter("compute")
    clock.t = 111.0
    ledger.leave("compute")
    ledger.end_step()
    clock.t = 150.0  # evaluation after the last step: never charged
    ledger.enter("compute")
    clock.t = 160.0
    ledger.leave("compute")
    assert ledger.train_time_s == pytest.approx(1.0)
    assert sum(ledger.breakdown().values()) == pytest.approx(1.0)


def test_unknown_part_and_unbalanced_close_are_refused():
    ledger = Ledger()
    with pytest.raises(ValueError, match="'other' is not a part a step opens"):
        ledger.enter("other")
    with pytest.raises(ValueError, match="part 'compute' closed but not open"):
        ledger.leave("compute")


def test_a_step_ended_at_an_earlier_mark_hands_what_came_after_to_the_next():
    """Two optimizers: the first one's step ends at 101.0, and only when it steps again (at 103.0) is it known
    that the second one's end, at 102.0, ended the step."""
    clock = Ticks()
    ledger = Ledger(clock=clock)
    ledger.enter("optimizer")
    clock.t = 101.0
    ledger.leave("optimizer")
    ledger.mark()  # a step's end, perhaps; it was not
    ledger.enter("optimizer")
    clock.t = 102.0
    ledger.leave("optimizer")
    mark = ledger.mark()
    clock.t = 102.25
    ledger.enter("data_wait")  # the next iteration's batch
    clock.t = 102.75
    ledger.leave("data_wait")
    ledger.enter("compute")
    clock.t = 103.0
    ledger.leave("compute")
    record = ledger.end_step(at=mark)
    assert record.wall_s == pytest.approx(2.0)
    assert record.parts == pytest.approx({"data_wait": 0.0, "compute": 0.0, "comm": 0.0, "optimizer": 2.0,
                                          "other": 0.0})
    assert ledger.steps == 1 and ledger.train_time_s == pytest.approx(2.0)
    clock.t = 104.0
    ledger.end_step()  # the second step: from 102.0, with the batch and the forward charged after the mark
    assert ledger.breakdown() == pytest.approx({"data_wait": 0.5, "compute": 0.25, "comm": 0.0, "optimizer": 2.0,
                                                "other": 1.25})
    assert ledger.train_time_s == pytest.approx(4.0)
    with pytest.raises(ValueError, match="not inside the current step"):
        ledger.end_step(at=mark)


def test_the_per_step_spread_leaves_out_the_first_step_and_each_steps_comm():
    """timing.step_time_sd_s of a script's run: the sample sd of each step's wall less its comm, the first step
    (the loader's start) left out, as the HLM trainer records it."""
    import statistics

    clock = Ticks()
    ledger = Ledger(clock=clock)
    walls, comms = [5.0, 1.0, 1.4, 0.8, 1.3], [0.0, 0.2, 0.5, 0.1, 0.3]
    for wall, comm in zip(walls, comms, strict=True):
        start = clock.t
        ledger.enter("compute")
        clock.t = start + wall - comm
        ledger.leave("compute")
        ledger.enter("comm")
        clock.t = start + wall
        ledger.leave("comm")
        ledger.end_step()
    assert ledger.first_step_s == pytest.approx(5.0)
    expected = statistics.stdev(w - c for w, c in zip(walls[1:], comms[1:], strict=True))
    assert ledger.spread.sd() == pytest.approx(expected)
    assert Ledger(clock=clock).spread.sd() is None
