"""A monotonic clock for wait loops under test: time moves only when slept on (or when a test moves it)."""

from __future__ import annotations


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        # Not zero, so code that assumes the clock starts at 0 fails.
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
