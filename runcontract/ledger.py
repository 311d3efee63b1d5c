"""Every second of T charged to exactly one part: the clock arithmetic all three ways in share.

A step runs from the end of the previous step (for the first step: its first event, such as the first batch
asked for) to the call that ends it. Inside a step the innermost open part is charged; time in no part is
`other`. So the five parts of every step add up to its wall time, and the steps' walls to
T = end of the last step - start of the first. Time after the last step's end (evaluation, saving, tear-down)
is outside T. A step may also end at an earlier instant of it, marked then (`mark()`, `end_step(at=)`), once
it is known to have ended there; what was charged after the mark is the next step's. Standard library only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runcontract.contract import BREAKDOWN_PARTS

TIMED_PARTS = BREAKDOWN_PARTS[:-1]  # the four a script or a hook opens; `other` is what is left


def zero_parts() -> dict[str, float]:
    return dict.fromkeys(BREAKDOWN_PARTS, 0.0)


@dataclass
class StepRecord:
    """One finished step: its wall time and its five parts (adding up to the wall)."""

    wall_s: float
    parts: dict[str, float]


@dataclass(frozen=True)
class Mark:
    """An instant inside a step and the parts charged up to it: where a step is ended later, once it is known
    that the step ended there (`Ledger.end_step(at=mark)`)."""

    at: float
    parts: dict[str, float]


@dataclass
class Spread:
    """A running standard deviation (Welford's count, mean and sum of squared deviations): one step's wall less its
    comm over the steps after the first (it holds the loader's start), result.json timing.step_time_sd_s, which
    the prediction prices the wait for the slower rank from (cockpit.forecast.straggler)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def sd(self) -> float | None:
        """The sample standard deviation (None under two values)."""
        return math.sqrt(self.m2 / (self.n - 1)) if self.n >= 2 else None


@dataclass
class Ledger:
    """The open parts (a stack) and the seconds charged so far; `clock` is perf_counter unless a test's own."""

    clock: Callable[[], float] = time.perf_counter
    stack: list[str] = field(default_factory=list)
    started: bool = False
    first_start: float = 0.0
    last_end: float | None = None
    steps: int = 0
    step_parts: dict[str, float] = field(default_factory=zero_parts)
    totals: dict[str, float] = field(default_factory=zero_parts)
    first_step_s: float | None = None
    spread: Spread = field(default_factory=Spread)  # each step's wall less its comm, after the first
    opened: set[str] = field(default_factory=set)  # the parts ever opened
    _last: float = 0.0
    _step_start: float = 0.0

    def now(self) -> float:
        return self.clock()

    def begin(self, now: float | None = None) -> None:
        """Start the first step (idempotent): T counts from here."""
        if not self.started:
            self.started = True
            self.first_start = self._last = self._step_start = self.now() if now is None else now

    def _charge(self, now: float) -> None:
        if self.started and now > self._last:
            part = self.stack[-1] if self.stack else "other"
            self.step_parts[part] += now - self._last
            self._last = now

    def enter(self, part: str, now: float | None = None) -> None:
        """Open `part` (one of data_wait, compute, comm, optimizer); starts the first step if none has."""
        if part not in TIMED_PARTS:
            raise ValueError(f"{part!r} is not a part a step opens ({', '.join(TIMED_PARTS)}; `other` is the rest)")
        now = self.now() if now is None else now
        self.begin(now)
        self._charge(now)
        self.stack.append(part)
        self.opened.add(part)

    def leave(self, part: str, now: float | None = None, *, tail: tuple[str, float] | None = None) -> None:
        """Close the innermost `part`. `tail` = (other_part, since): the seconds from `since` on go to
        `other_part` instead (how the exposed communication wait is cut off the end of a backward pass)."""
        now = self.now() if now is None else now
        if tail is not None:
            other_part, since = tail
            since = min(max(since, self._last), now)
            self._charge(since)
            if self.started and now > self._last:
                self.step_parts[other_part] += now - self._last
                self._last = now
        self._charge(now)
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] == part:
                del self.stack[i]
                return
        raise ValueError(f"part {part!r} closed but not open (open: {', '.join(self.stack) or 'none'})")

    def mark(self, now: float | None = None) -> Mark:
        """The present instant and the step's parts up to it, for `end_step(at=...)`."""
        now = self.now() if now is None else now
        self.begin(now)
        self._charge(now)
        return Mark(now, dict(self.step_parts))

    def end_step(self, now: float | None = None, *, at: Mark | None = None) -> StepRecord:
        """End the current step here (starting the first one too if nothing did), or at the earlier `at`, a mark
        taken in this step: what was charged after it becomes the next step's."""
        if at is not None:
            if not self.started or at.at < self._step_start:
                raise ValueError("the mark is not inside the current step")
            carried = {part: self.step_parts[part] - at.parts[part] for part in BREAKDOWN_PARTS}
            self.step_parts = dict(at.parts)
            record = self._close(at.at)
            self.step_parts = carried
            return record
        now = self.now() if now is None else now
        self.begin(now)
        self._charge(now)
        return self._close(now)

    def _close(self, now: float) -> StepRecord:
        record = StepRecord(now - self._step_start, self.step_parts)
        for part, seconds in record.parts.items():
            self.totals[part] += seconds
        self.steps += 1
        if self.first_step_s is None:
            self.first_step_s = record.wall_s
        else:
            self.spread.add(record.wall_s - record.parts["comm"])
        self.step_parts = zero_parts()
        self.last_end = self._step_start = now
        return record

    @property
    def train_time_s(self) -> float:
        """T: the first step's start to the last step's end (0 before a step ended)."""
        return 0.0 if self.last_end is None else self.last_end - self.first_start

    def breakdown(self) -> dict[str, float]:
        """The five parts over the finished steps; `other` is T minus the four, so they add up to T exactly."""
        out = {part: self.totals[part] for part in TIMED_PARTS}
        out["other"] = max(0.0, self.train_time_s - sum(out.values()))
        return out
