# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wait for a served endpoint in steps, a progress line after each one that is not ready (the serve_wait action).

Each step asks the endpoint (the openai_endpoint module) for at most ``report_every`` seconds, or what is left of
``timeout``; when it is not ready, one line says where it and its unit stand (the unit's state as the probe read it
after its last attempt: the module's ``unit_state``). The wait ends when the
endpoint is ready, the unit failed for good (``ActiveState=failed``: its start limit hit, it will not answer), the
time is up, or the probe itself failed (its arguments refused: asking again would not help).

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time. It runs on the
controller only.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import dataclass, field

# One step of the probe: the seconds it may take, to the openai_endpoint module's result.
Probe = t.Callable[[int], t.Dict[str, t.Any]]  # noqa: UP006 (evaluated at run time)

READY = "ready"
UNIT_FAILED = "unit_failed"
TIMEOUT = "timeout"
PROBE_FAILED = "probe_failed"


@dataclass(frozen=True)
class WaitSettings:
    timeout: int  # seconds in all
    report_every: int  # seconds a step at most, then a progress line

    def __post_init__(self) -> None:
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int) or self.timeout < 0:
            raise ValueError(f"timeout must be a whole number of seconds, 0 or more, not {self.timeout!r}")
        if isinstance(self.report_every, bool) or not isinstance(self.report_every, int) or self.report_every < 1:
            raise ValueError(f"report_every must be a whole number of seconds, 1 or more, not {self.report_every!r}")


@dataclass
class WaitResult:
    endpoint: dict[str, t.Any]  # the last step's result
    ended_by: str  # READY, UNIT_FAILED, TIMEOUT or PROBE_FAILED
    waited: float
    unit_state: str = ""  # the last one read ("" when every step was ready or there is no unit)
    reports: list[str] = field(default_factory=list)


def step_seconds(settings: WaitSettings, elapsed: float) -> int:
    """A step's share of the wait: ``report_every``, or what is left of ``timeout`` (whole seconds up, at least 0)."""
    return min(settings.report_every, max(math.ceil(settings.timeout - elapsed), 0))


def progress_line(host: str, waited: float, unit_state: str, endpoint: t.Mapping[str, t.Any]) -> str:
    """``<host>: vLLM not ready after <n> s (<unit state>): <state>; health: ...; models: ...; completion: ...``."""
    properties = ", ".join(line for line in unit_state.splitlines() if line) or "unit state unknown"
    steps = endpoint.get("steps") or {}
    return (
        f"{host}: vLLM not ready after {round(waited)} s ({properties}): {endpoint.get('state', '?')}; "
        f"health: {steps.get('health', '?')}; models: {steps.get('models', '?')}; completion: {steps.get('completion', '?')}"
    )


def wait(settings: WaitSettings, probe: Probe, *, host: str, clock: t.Callable[[], float], say: t.Callable[[str], None]) -> WaitResult:
    """Ask until ready, the unit failed, the time is up or the probe failed; ``say`` each progress line. The unit's
    state is the step's ``unit_state`` (``systemctl show`` lines, one ``Name=value`` each; "" without a unit); whether
    it failed for good is the probe's own verdict (``gave_up``), not read again here."""
    start = clock()
    reports: list[str] = []
    state = ""
    while True:
        endpoint = probe(step_seconds(settings, clock() - start))
        if endpoint.get("failed"):
            return WaitResult(endpoint, PROBE_FAILED, clock() - start, state, reports)
        if endpoint.get("ready"):
            return WaitResult(endpoint, READY, clock() - start, state, reports)
        state = str(endpoint.get("unit_state") or "")
        waited = clock() - start
        line = progress_line(host, waited, state, endpoint)
        reports.append(line)
        say(line)
        if endpoint.get("gave_up"):
            return WaitResult(endpoint, UNIT_FAILED, waited, state, reports)
        if waited >= settings.timeout:
            return WaitResult(endpoint, TIMEOUT, waited, state, reports)
