"""Time, not steps: a trainer with a time limit stops before its next step would pass the limit, and
its learning rate anneals over the time it has, so a run its limit cuts has still finished its schedule.

Steps planned from an assumed speed were the weak point of a GPU window: a run planned for 595 steps
got 23 at the real speed, its cosine barely begun; and a limit checked only after a step is passed
by that step (a compile warm-up, tens of seconds, cannot be cut). So the limit is an end time, set
before setup where the caller knows it (`end_at`, seconds since the epoch: the same clock in every
process of the machine), and the loop asks `time_to_stop()` before each step: now + the predicted step
(the slowest of the last few; before the first, the caller's warm-up estimate) past the end means stop.
The schedule's progress is the larger of steps done / steps planned and time used / time given.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Callable


class RunClock:
    """The end time of one training run and the durations of its steps (`clock` injectable for tests)."""

    def __init__(self, max_seconds: float = 0.0, end_at: float = 0.0, first_step_guess: float = 0.0,
                 window: int = 5, clock: Callable[[], float] | None = None):
        self.clock = clock or time.time
        self.start = self.clock()
        ends = [end for end in (end_at, self.start + max_seconds if max_seconds else 0.0) if end]
        self.end = min(ends) if ends else math.inf  #: the absolute end time (inf: no limit)
        self.first_step_guess = float(first_step_guess)  #: the first step's seconds, before one is timed
        self.recent: deque[float] = deque(maxlen=window)  #: the last steps' seconds (the first left out)
        self.first_step_seconds: float | None = None
        self.steps = 0
        self.last = self.start
        self.stopped = False  #: the end time stopped the run

    @property
    def limited(self) -> bool:
        return math.isfinite(self.end)

    def step_done(self, seconds: float | None = None) -> None:
        """Record one finished step: `seconds`, or the time since the previous step (or the start), which
        counts whatever ran between steps (a loop that evaluates between steps passes the step's own)."""
        now = self.clock()
        seconds, self.last = (now - self.last) if seconds is None else seconds, now
        if self.first_step_seconds is None:
            self.first_step_seconds = seconds  # a compiled model compiles in it: not a prediction of the next
        else:
            self.recent.append(seconds)
        self.steps += 1

    def predicted_step(self) -> float:
        """The next step's seconds: the slowest recent step; the first step's (or the guess) until one follows it."""
        if self.recent:
            return max(self.recent)
        return self.first_step_seconds if self.first_step_seconds is not None else self.first_step_guess

    def time_to_stop(self) -> bool:
        """True when the next step would end past the end time; it stays true (the run stops once)."""
        if self.limited and self.clock() + self.predicted_step() > self.end:
            self.stopped = True
        return self.stopped

    def fraction(self) -> float:
        """The share of the run's time used, in [0, 1] (0 without a limit)."""
        if not self.limited:
            return 0.0
        return min(1.0, max(0.0, (self.clock() - self.start) / max(self.end - self.start, 1e-9)))

    def record(self) -> dict[str, float | int | bool | None]:
        """What a run card keeps of the clock."""
        return {"end_at": self.end if self.limited else None, "stopped_by_end_time": self.stopped,
                "steps_timed": self.steps, "first_step_seconds": self.first_step_seconds,
                "predicted_step_seconds": self.predicted_step() if self.steps else None,
                "time_fraction_at_end": round(self.fraction(), 4)}


def warmup_cosine(warmup: int, steps: int, progress: Callable[[], float] | None = None) -> Callable[[int], float]:
    """The learning-rate factor at step s: linear warmup over `warmup` steps, then cosine to 0 as the run's
    progress goes to 1, where progress is the larger of s / `steps` and `progress()` (the time fraction of a
    limited run, `RunClock.fraction`). A Python float: numpy scalars in a scheduler's state would not load
    with weights_only=True."""
    warmup = max(1, int(warmup))

    def factor(s: int) -> float:
        done = max(s / steps, progress() if progress is not None else 0.0)
        return float(min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, done))))

    return factor
