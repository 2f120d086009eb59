"""Time, not steps: a limited run stops before a step would pass its end and has annealed when it stops."""

from __future__ import annotations

import math

import pytest

from rlvr_envs.core.run_clock import RunClock, warmup_cosine


class FakeClock:
    """Seconds that move only when the test moves them."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_clock_stops_before_the_step_that_would_pass_the_end():
    fake = FakeClock()
    clock = RunClock(end_at=fake.now + 100, first_step_guess=30.0, clock=fake)
    assert clock.limited and clock.predicted_step() == 30.0
    fake.now += 40  # the first step (a compile warm-up) is not the next step's prediction once others follow
    clock.step_done()
    assert clock.predicted_step() == 40.0 and not clock.time_to_stop()
    for seconds in (5, 9, 6):
        fake.now += seconds
        clock.step_done()
    assert clock.predicted_step() == 9.0  # the slowest recent step, the first left out
    fake.now = clock.end - 9.5
    assert not clock.time_to_stop()
    fake.now = clock.end - 8.5
    assert clock.time_to_stop() and clock.stopped
    fake.now -= 100  # once stopped, stopped
    assert clock.time_to_stop()
    record = clock.record()
    assert record["stopped_by_end_time"] and record["steps_timed"] == 4 and record["first_step_seconds"] == 40.0


def test_no_limit_never_stops_and_the_nearer_of_two_limits_is_the_end():
    fake = FakeClock()
    assert not RunClock(clock=fake).time_to_stop() and RunClock(clock=fake).fraction() == 0.0
    assert RunClock(max_seconds=50, end_at=fake.now + 80, clock=fake).end == fake.now + 50
    assert RunClock(max_seconds=50, end_at=fake.now + 20, clock=fake).end == fake.now + 20


def test_the_schedule_follows_the_larger_of_step_and_time_progress():
    progress = [0.0]
    factor = warmup_cosine(warmup=10, steps=1000, progress=lambda: progress[0])
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0, abs=1e-3)
    progress[0] = 0.5
    assert factor(100) == pytest.approx(0.5)  # half the time used: half way down the cosine
    progress[0] = 1.0
    assert factor(100) == 0.0
    progress[0] = 0.0
    assert factor(500) == pytest.approx(0.5) and factor(1000) == pytest.approx(0.0, abs=1e-12)
    assert warmup_cosine(10, 1000)(500) == pytest.approx(0.5)  # without a clock: steps alone


def test_a_from_scratch_sft_cut_by_its_end_time_has_annealed(tmp_path, monkeypatch):
    """Through the GPU check's own SFT arguments, with far more steps planned than the time allows: the run
    stops on its own before the end time, and its last learning rate is near 0 (the schedule followed time)."""
    from benchmarks import gpu_check
    from rlvr_envs.core import run_clock
    from trainers import sft

    fake = FakeClock()

    class Time:  # every reading of the run's clock moves it by a second
        @staticmethod
        def time() -> float:
            fake.now += 1.0
            return fake.now

    monkeypatch.setattr(run_clock, "time", Time)
    args = gpu_check.text_sft_args(gpu_check.MEMORISE, steps=10**6, seconds=0.0, out=tmp_path / "sft",
                                   device="cpu", threads=1, compiled=False)
    args.end_at = fake.now + 90.0  # about 30 steps at three readings a step
    result = sft.main(args)
    clock = result["clock"]
    assert result["stopped_by_time"] and clock["stopped_by_end_time"]
    assert args.warmup_steps < result["steps"] < 10**6
    assert clock["time_fraction_at_end"] > 0.9
    assert result["final_learning_rate"] < 0.05 * args.lr, result["final_learning_rate"]
    assert math.isfinite(result["train_loss"])
