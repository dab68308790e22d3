# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The unified-memory guard: stop vLLM cleanly before a DGX Spark runs out of memory, start it again once memory is back.

A DGX Spark (GB10) has ~128 GB that the CPU and the GPU share (``MemTotal`` ~119.7 GiB). When it runs out, the GPU
driver wedges *before* the kernel's OOM killer acts and the host stays frozen until power-cycled. So a small service
on every node reads, every ``interval_s`` seconds, ``MemAvailable`` from ``/proc/meminfo`` (on unified memory the
figure a CUDA allocation can get: NVIDIA's DGX Spark guidance; ``cudaMemGetInfo``'s free leaves out the page cache
the kernel would reclaim) and the memory pressure from ``/proc/pressure/memory`` (PSI, kernel
``Documentation/accounting/psi.rst``: a ``some`` and a ``full`` line, each ``avg10= avg60= avg300=`` in percent of
wall time over 10/60/300 s, and ``total=`` the stall time in microseconds; ``full`` is the share of time in which
*all* non-idle tasks stalled on memory at once: thrashing). Then:

* **stop** (``systemctl stop``, in the caller's order: the group, e.g. ``sparkops-vllm.service`` on a Ray head,
  ``sparkops-ray-worker.service`` on a Ray worker, each rank's ``sparkops-vllm.service`` in mp mode) every unit of
  the list that runs (``is-active``: active, activating, reloading) when ``MemAvailable`` < ``stop_available_mib``,
  or PSI ``full avg10`` >= ``stop_psi_full_pct`` for ``stop_psi_samples`` samples in a row. The guard records what it
  stopped; a unit that was not running (an operator stopped it) is left alone and never started by the guard;
* **start** (``systemctl start``, in reverse order) only the units it stopped, once ``MemAvailable`` >=
  ``resume_available_mib`` with PSI ``full avg10`` below ``stop_psi_full_pct`` for ``resume_hold_s`` seconds on end
  (a dip below restarts the count: no flapping). The vLLM unit's own ``ExecStartPre`` gates (:mod:`._serve_gate`)
  then wait for memory and the cluster before the engine loads;
* **give up**: the ``max_stops_per_hour``-th stop within an hour stops the units and leaves them stopped (the guard
  says so in the journal every ``report_every_s``): a workload that keeps eating memory does not flap the engine
  forever. Starting the units by hand (``systemctl start``) ends the give-up; the guard watches again.

A unit the guard stopped and someone else started again is no longer the guard's to start; while memory is still past
a stop level, though, the guard stops any unit of the list that runs (not counted as another stop). When none of the
units runs at a crossing, nothing is stopped or counted and the guard waits for memory to come back. To keep a unit the
guard holds stopped for good, stop the guard and remove its state file (else it starts the unit once memory is back,
restarted or not). A ``systemctl`` call that
fails is logged with its output and done again at the next interval (the same failure is logged again at most once a
minute), never a crash. Without PSI (``/proc/pressure/memory`` missing: a kernel without ``CONFIG_PSI`` or booted
with ``psi=0``; unreadable; garbled) the guard works on ``MemAvailable`` alone and says so once.

Default levels for a GB10 (each can be set; *guessed* marks what no measurement backs yet):

* ``stop_available_mib`` **2048** (2 GiB). A Spark user's earlyoom runs ``-M 524288,102400``: SIGTERM under 512 MiB
  available, SIGKILL under 100 MiB. That is an OOM killer's level, meant to act just before the kernel's; on GB10 the
  driver wedges before the kernel's OOM killer acts, so the guard must act well above it, and a clean stop of vLLM
  (SIGTERM, the engine and its workers exiting, CUDA giving memory back) itself takes seconds during which memory
  keeps going. 4x earlyoom's level leaves ~1.5 GiB more for those seconds (*guessed*: about 1.5 s of a runaway
  allocating 1 GiB/s). It stays far below a serving node: vLLM with ``gpu_memory_utilization`` 0.85 of ~119.7 GiB
  takes ~101.7 GiB and leaves ~18 GiB, which ``MemAvailable`` shows when the rest of the host is quiet (*composed*,
  not measured), so normal serving is ~16 GiB away from a stop. A model load's page cache (the weights
  read through mmap) is reclaimable and counts in ``MemAvailable``, so a load alone does not trip it.
* ``stop_psi_full_pct`` **40** for ``stop_psi_samples`` **3** samples. ``full`` 40 % over 10 s means that for 4 of
  the last 10 seconds nothing on the host made progress because of memory: the kernel is thrashing (reclaiming and
  refaulting the page cache, swapping), the state just before exhaustion where ``MemAvailable`` can still look
  above the stop level (it counts page cache that is being refaulted as fast as it is reclaimed). Three samples in a
  row (3 s at 1 s; the kernel updates the averages every 2 s, so at least one fresh average confirms it) keep a
  single burst (``drop_caches`` in the unit's ``ExecStartPre``, a model load's first reads) from stopping vLLM.
  systemd-oomd's defaults (60 % for 30 s) are meant for desktops whose OOM killer works; here 40 %/3 s is *guessed*.
  Null turns the PSI condition off.
* ``resume_available_mib`` **8192** (8 GiB) for ``resume_hold_s`` **30**. 6 GiB above the stop level, so memory that
  hovers around it cannot flap the engine; 30 s lets the stopped engine's memory come back (the serve gate's
  docstring: an engine that just stopped takes a while to give back unified memory) and three PSI ``avg10`` windows
  settle (*guessed*). It is the level at which the host is out of danger, not the level vLLM needs to start: the
  unit's memory gate waits for ``gpu_memory_utilization`` x ``MemTotal`` (~101.7 GiB at 0.85). A caller that knows
  that figure should pass it (or more) as ``resume_available_mib``, so the guard starts vLLM only when its gate
  will pass, instead of a start that fails in the gate and uses up the unit's start limit.
* ``max_stops_per_hour`` **3**: the vllm_serve unit's ``StartLimitBurst=3`` in ``StartLimitIntervalSec=3600``
  counts every start; the third stop leaves the units stopped, so the guard's restarts (two) plus the deploy's start
  stay within that limit. Three memory emergencies in an hour are no longer transient.
* ``interval_s`` **1**: reading two small /proc files costs well under a millisecond; at 1 s a runaway of ~1 GiB/s
  (*guessed*) is seen with ~1 GiB of the stop level's margin still left. At most 60 s (a slower guard guards nothing).

:func:`run` is the loop with everything injected; :func:`main` is the command (``sparkops-memory-guard
SETTINGS.json``), see its docstring for the settings and the exit codes. The state (what the guard stopped, when, its
stops of the last hour, the PSI samples in a row, whether it gave up) is a small JSON file the guard rewrites
(atomically) when it changes, so a restart of the guard keeps its memory.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import typing as t
from dataclasses import dataclass, field, replace

from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo

MIB = 1024 * 1024
HOUR = 3600.0
ACTIONS = ("none", "stop", "start", "give_up")
WATCHING, HOLDING, GAVE_UP = "watching", "holding", "gave_up"
PHASES = (WATCHING, HOLDING, GAVE_UP)
STATE_VERSION = 1
# ``systemctl is-active`` states in which a unit runs or is about to (the gates, an auto-restart): stop it.
RUNNING_STATES = ("active", "activating", "reloading", "refreshing")
IDLE_STATES = ("inactive", "failed", "deactivating", "maintenance")
REPEAT_LOG_S = 60.0  # the same systemctl failure is logged again at most this often
MAX_INTERVAL_S = 60.0
MAX_PROC_READ = 1 << 20
UNIT_NAME = re.compile(r"[A-Za-z0-9_.:@\\-]{1,256}")
ITERATIONS_ENV = "SPARKOPS_MEMORY_GUARD_ITERATIONS"

DEFAULT_STOP_AVAILABLE_MIB = 2048
DEFAULT_STOP_PSI_FULL_PCT = 40.0
DEFAULT_STOP_PSI_SAMPLES = 3
DEFAULT_RESUME_AVAILABLE_MIB = 8192
DEFAULT_RESUME_HOLD_S = 30.0
DEFAULT_INTERVAL_S = 1.0
DEFAULT_MAX_STOPS_PER_HOUR = 3
DEFAULT_REPORT_EVERY_S = 600.0
DEFAULT_SYSTEMCTL_TIMEOUT_S = 1800.0


class MemoryGuardError(ValueError):
    """A /proc text the guard cannot use, a level that makes no sense, a settings or state file it cannot read."""


# --- Samples -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Psi:
    """``/proc/pressure/memory``: percentages of wall time (``avg*``) and stall time in microseconds (``*_total``)."""

    some_avg10: float
    some_avg60: float
    some_avg300: float
    some_total: int
    full_avg10: float
    full_avg60: float
    full_avg300: float
    full_total: int


@dataclass(frozen=True)
class Sample:
    """One reading: memory in bytes (``/proc/meminfo`` in whole MiB, see :mod:`._meminfo`), PSI or None with why."""

    mem_total: int
    mem_available: int
    swap_free: int
    psi: Psi | None = None
    psi_problem: str = ""  # why psi is None

    @property
    def total_mib(self) -> int:
        return self.mem_total // MIB

    @property
    def available_mib(self) -> int:
        return self.mem_available // MIB


def parse_meminfo_sample(text: str) -> tuple[int, int, int]:
    """``(mem_total, mem_available, swap_free)`` in bytes from a ``/proc/meminfo`` text."""
    try:
        info = parse_meminfo(text)
    except MeminfoError as exc:
        raise MemoryGuardError(str(exc)) from exc
    except (ValueError, OverflowError) as exc:  # a digit int() refuses ('²'), a number over Python's digit limit
        raise MemoryGuardError(f"/proc/meminfo has a number that is not one: {exc}") from exc
    if info.total_mib <= 0:
        raise MemoryGuardError(f"/proc/meminfo gives MemTotal {info.total_mib} MiB: not a host's memory")
    if info.available_mib > info.total_mib:
        raise MemoryGuardError(f"/proc/meminfo gives MemAvailable {info.available_mib} MiB above MemTotal {info.total_mib} MiB")
    return info.total_mib * MIB, info.available_mib * MIB, info.swap_free_mib * MIB


def _psi_number(kind: str, key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise MemoryGuardError(f"/proc/pressure/memory: {kind} {key}={raw[:40]!r} is not a number") from None
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise MemoryGuardError(f"/proc/pressure/memory: {kind} {key}={raw[:40]} is not a percentage")
    return value


def parse_psi(text: str) -> Psi:
    """Parse ``/proc/pressure/memory``: ``some`` and ``full`` lines of ``avg10= avg60= avg300= total=``."""
    lines: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        kind = words[0]
        if kind not in ("some", "full"):
            raise MemoryGuardError(f"/proc/pressure/memory: unexpected line {line[:80]!r} (want 'some ...' and 'full ...')")
        if kind in lines:
            raise MemoryGuardError(f"/proc/pressure/memory: two '{kind}' lines")
        pairs: dict[str, str] = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or not key:
                raise MemoryGuardError(f"/proc/pressure/memory: {kind} has {word[:40]!r}, not key=value")
            pairs[key] = value
        lines[kind] = pairs
    values: dict[str, float] = {}
    totals: dict[str, int] = {}
    for kind in ("some", "full"):
        if kind not in lines:
            raise MemoryGuardError(f"/proc/pressure/memory has no '{kind}' line")
        pairs = lines[kind]
        missing = [key for key in ("avg10", "avg60", "avg300", "total") if key not in pairs]
        if missing:
            raise MemoryGuardError(f"/proc/pressure/memory: {kind} lacks {', '.join(missing)}")
        for key in ("avg10", "avg60", "avg300"):
            values[f"{kind}_{key}"] = _psi_number(kind, key, pairs[key])
        raw_total = pairs["total"]
        if not (raw_total.isascii() and raw_total.isdigit()) or len(raw_total) > 30:
            raise MemoryGuardError(f"/proc/pressure/memory: {kind} total={raw_total[:40]} is not a count of microseconds")
        totals[kind] = int(raw_total)
    return Psi(
        some_avg10=values["some_avg10"],
        some_avg60=values["some_avg60"],
        some_avg300=values["some_avg300"],
        some_total=totals["some"],
        full_avg10=values["full_avg10"],
        full_avg60=values["full_avg60"],
        full_avg300=values["full_avg300"],
        full_total=totals["full"],
    )


def _read_text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read(MAX_PROC_READ)


def read_sample(proc_root: str = "/proc") -> Sample:
    """Read ``meminfo`` and ``pressure/memory`` under ``proc_root``. A ``meminfo`` that cannot be read or used raises
    :class:`MemoryGuardError` (or OSError); PSI that cannot be read or parsed gives ``psi=None`` and ``psi_problem``."""
    meminfo_path = os.path.join(proc_root, "meminfo")
    try:
        total, available, swap_free = parse_meminfo_sample(_read_text(meminfo_path))
    except OSError as exc:
        raise MemoryGuardError(f"cannot read {meminfo_path}: {exc.strerror or exc}") from exc
    psi_path = os.path.join(proc_root, "pressure", "memory")
    try:
        return Sample(total, available, swap_free, psi=parse_psi(_read_text(psi_path)))
    except FileNotFoundError:
        problem = f"no {psi_path} (a kernel without CONFIG_PSI)"
    except OSError as exc:  # EOPNOTSUPP when booted with psi=0
        problem = f"cannot read {psi_path}: {exc.strerror or exc} (PSI off? boot with psi=1)"
    except MemoryGuardError as exc:
        problem = f"unusable {psi_path}: {exc}"
    return Sample(total, available, swap_free, psi=None, psi_problem=problem)


def describe(sample: Sample) -> str:
    """The numbers of a sample, for the journal."""
    memory = f"MemAvailable {sample.available_mib} MiB of {sample.total_mib} MiB, swap free {sample.swap_free // MIB} MiB"
    if sample.psi is None:
        return f"{memory}, PSI n/a"
    psi = sample.psi
    return f"{memory}, PSI memory full avg10 {psi.full_avg10:.2f}% some avg10 {psi.some_avg10:.2f}%"


# --- Levels ------------------------------------------------------------------------------------------------------

LEVEL_FIELDS = (
    "stop_available_mib",
    "stop_psi_full_pct",
    "stop_psi_samples",
    "resume_available_mib",
    "resume_hold_s",
    "interval_s",
    "max_stops_per_hour",
)
_INT_FIELDS = ("stop_available_mib", "stop_psi_samples", "resume_available_mib", "max_stops_per_hour")


@dataclass(frozen=True)
class Levels:
    """When the guard stops and starts; see the module docstring for the defaults and why. ``names`` maps a field to
    the variable the caller sets it with (``{"stop_available_mib": "vllm_serve_memory_guard_stop_available_mib"}``),
    for the refusals; a field without an entry is named as itself."""

    stop_available_mib: int = DEFAULT_STOP_AVAILABLE_MIB
    stop_psi_full_pct: float | None = DEFAULT_STOP_PSI_FULL_PCT  # None: PSI does not stop
    stop_psi_samples: int = DEFAULT_STOP_PSI_SAMPLES
    resume_available_mib: int = DEFAULT_RESUME_AVAILABLE_MIB
    resume_hold_s: float = DEFAULT_RESUME_HOLD_S
    interval_s: float = DEFAULT_INTERVAL_S
    max_stops_per_hour: int = DEFAULT_MAX_STOPS_PER_HOUR
    names: t.Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def name(self, key: str) -> str:
        return self.names.get(key, key)

    @classmethod
    def from_settings(cls, raw: t.Mapping[str, t.Any], names: t.Mapping[str, str] | None = None, mem_total_mib: int | None = None) -> Levels:
        """The levels in ``raw`` (other keys ignored; a missing or null one takes its default, except
        ``stop_psi_full_pct`` where null turns PSI off), type-checked and :meth:`check`-ed (against ``mem_total_mib``
        when given)."""
        names = dict(names or {})
        values: dict[str, t.Any] = {}
        for key in LEVEL_FIELDS:
            if key not in raw or (raw[key] is None and key != "stop_psi_full_pct"):
                continue
            value = raw[key]
            label = names.get(key, key)
            if value is None:
                values[key] = None
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise MemoryGuardError(f"{label} is {_show(value)}, not a number")
            elif not math.isfinite(value):
                raise MemoryGuardError(f"{label} is {value}, not a finite number")
            elif key in _INT_FIELDS:
                if value != int(value):
                    raise MemoryGuardError(f"{label} is {value}, not a whole number")
                values[key] = int(value)
            else:
                values[key] = float(value)
        return cls(names=names, **values).check(mem_total_mib)

    def problems(self, mem_total_mib: int | None = None) -> list[str]:
        """What makes no sense, each naming its variable; with ``mem_total_mib``, levels at or above this host's
        ``MemTotal`` too (``MemAvailable`` never reaches ``MemTotal``: the guard would always stop or never start)."""
        found: list[str] = []
        stop, resume = self.stop_available_mib, self.resume_available_mib
        if stop < 1:
            found.append(f"{self.name('stop_available_mib')} is {stop} MiB: it must be at least 1 (the guard would never stop on MemAvailable)")
        if resume <= stop:
            found.append(
                f"{self.name('resume_available_mib')} ({resume} MiB) must be above {self.name('stop_available_mib')} ({stop} MiB): "
                "the guard would start what it just stopped"
            )
        if mem_total_mib is not None:
            if stop >= mem_total_mib:
                found.append(
                    f"{self.name('stop_available_mib')} is {stop} MiB, not below this host's MemTotal of {mem_total_mib} MiB: the guard would always stop"
                )
            if resume >= mem_total_mib:
                found.append(
                    f"{self.name('resume_available_mib')} is {resume} MiB, not below this host's MemTotal of {mem_total_mib} MiB: "
                    "the guard would never start again"
                )
        pct = self.stop_psi_full_pct
        if pct is not None and not (math.isfinite(pct) and 0.0 < pct <= 100.0):
            found.append(f"{self.name('stop_psi_full_pct')} is {pct}: a percentage above 0 and at most 100 (or null: PSI off)")
        if self.stop_psi_samples < 1:
            found.append(f"{self.name('stop_psi_samples')} is {self.stop_psi_samples}: at least 1 sample")
        if not (math.isfinite(self.resume_hold_s) and self.resume_hold_s >= 0):
            found.append(f"{self.name('resume_hold_s')} is {self.resume_hold_s}: seconds, 0 or more")
        if not (math.isfinite(self.interval_s) and 0 < self.interval_s <= MAX_INTERVAL_S):
            found.append(f"{self.name('interval_s')} is {self.interval_s}: seconds above 0 and at most {MAX_INTERVAL_S:g} (a slower guard guards nothing)")
        if self.max_stops_per_hour < 1:
            found.append(f"{self.name('max_stops_per_hour')} is {self.max_stops_per_hour}: at least 1 (1: the first stop is the last)")
        return found

    def check(self, mem_total_mib: int | None = None) -> Levels:
        """These levels, or :class:`MemoryGuardError` listing every problem."""
        found = self.problems(mem_total_mib)
        if found:
            raise MemoryGuardError("; ".join(found))
        return self

    def summary(self) -> str:
        psi = "PSI off" if self.stop_psi_full_pct is None else f"or PSI full avg10 >= {self.stop_psi_full_pct:g}% for {self.stop_psi_samples} samples"
        return (
            f"stop at MemAvailable < {self.stop_available_mib} MiB {psi}; resume at >= {self.resume_available_mib} MiB for {self.resume_hold_s:g}s; "
            f"every {self.interval_s:g}s; at most {self.max_stops_per_hour} stop(s) an hour"
        )


def _show(value: t.Any) -> str:
    """A value for a refusal: JSON for a scalar (cut short), the type of anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a number of over 64 bits"
    if isinstance(value, (str, bool, int, float)) or value is None:
        return json.dumps(value)[:60]
    return type(value).__name__


def _unit_name(value: t.Any) -> bool:
    return isinstance(value, str) and bool(UNIT_NAME.fullmatch(value)) and not value.startswith(("-", "."))


# --- State -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GuardState:
    """What the guard remembers across iterations and restarts (times are the ``clock``'s: wall time in :func:`main`).

    ``phase``: watching (nothing held), holding (stopped, waiting for memory), gave_up; ``stopped``: the units the guard
    stopped and will start again, in stop order; ``stops``: its stops of the last hour; ``held_since``/``reason``: when
    and why it stopped; ``resume_since``: since when memory has been back; ``retry``: "stop" or "start" when that
    action failed partway and is done again at the next interval; ``stops_total``: every stop it counted since its state
    began (the textfile metric ``sparkops_memory_guard_stops_total``)."""

    phase: str = WATCHING
    stopped: tuple[str, ...] = ()
    stops: tuple[float, ...] = ()
    pressure_samples: int = 0
    resume_since: float | None = None
    held_since: float | None = None
    reason: str = ""
    retry: str = ""
    stops_total: int = 0

    def to_dict(self) -> dict[str, t.Any]:
        return {
            "version": STATE_VERSION,
            "phase": self.phase,
            "stopped": list(self.stopped),
            "stops": list(self.stops),
            "pressure_samples": self.pressure_samples,
            "resume_since": self.resume_since,
            "held_since": self.held_since,
            "reason": self.reason,
            "retry": self.retry,
            "stops_total": self.stops_total,
        }

    @classmethod
    def from_dict(cls, raw: t.Any) -> GuardState:
        if not isinstance(raw, dict):
            raise MemoryGuardError(f"guard state is {type(raw).__name__}, not an object")
        if raw.get("version") != STATE_VERSION:
            raise MemoryGuardError(f"guard state version {_show(raw.get('version'))}, expected {STATE_VERSION}")
        phase = raw.get("phase")
        if phase not in PHASES:
            raise MemoryGuardError(f"guard state phase {_show(phase)}, not one of {', '.join(PHASES)}")
        stopped = raw.get("stopped", [])
        if not isinstance(stopped, list) or not all(_unit_name(unit) for unit in stopped):
            raise MemoryGuardError("guard state 'stopped' is not a list of unit names")
        stops = raw.get("stops", [])
        if not isinstance(stops, list) or not all(_is_time(stamp) for stamp in stops):
            raise MemoryGuardError("guard state 'stops' is not a list of times")
        samples = raw.get("pressure_samples", 0)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 0:
            raise MemoryGuardError(f"guard state pressure_samples {_show(samples)}")
        for key in ("resume_since", "held_since"):
            if raw.get(key) is not None and not _is_time(raw[key]):
                raise MemoryGuardError(f"guard state {key} {_show(raw[key])} is not a time")
        total = raw.get("stops_total", 0)  # absent from a state an earlier guard wrote
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise MemoryGuardError(f"guard state stops_total {_show(total)}")
        reason = raw.get("reason", "")
        retry = raw.get("retry", "")
        if not isinstance(reason, str) or retry not in ("", "stop", "start"):
            raise MemoryGuardError("guard state reason/retry are not what the guard writes")
        return cls(
            phase=phase,
            stopped=tuple(stopped),
            stops=tuple(float(stamp) for stamp in stops[-1000:]),
            pressure_samples=samples,
            resume_since=None if raw.get("resume_since") is None else float(raw["resume_since"]),
            held_since=None if raw.get("held_since") is None else float(raw["held_since"]),
            reason=reason[:2000],
            retry=retry,
            stops_total=total,
        )


def _is_time(value: t.Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def load_state(path: str) -> GuardState:
    """The state in ``path``; a fresh one when there is no file. Unreadable or garbled: :class:`MemoryGuardError`."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_PROC_READ)
    except FileNotFoundError:
        return GuardState()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryGuardError(f"cannot read the guard state {path}: {exc}") from exc
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MemoryGuardError(f"the guard state {path} is not JSON: {exc}") from exc
    return GuardState.from_dict(raw)


def save_state(path: str, state: GuardState) -> None:
    """Write the state atomically (a file beside it, then rename): a guard killed mid-write leaves the old one."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state.to_dict(), handle, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


TEXTFILE_NAME = "sparkops_memory_guard.prom"


def metrics_text(state: GuardState) -> str:
    """The guard's figures in Prometheus' text format, for node exporter's textfile collector (docs/metrics.md's alerts)."""
    holding = 0 if state.phase == WATCHING else 1
    gave_up = 1 if state.phase == GAVE_UP else 0
    return (
        "# HELP sparkops_memory_guard_stops_total Stops of the vLLM units by the sparkops memory guard (unified memory ran low).\n"
        "# TYPE sparkops_memory_guard_stops_total counter\n"
        f"sparkops_memory_guard_stops_total {state.stops_total}\n"
        "# HELP sparkops_memory_guard_holding 1 while the memory guard holds the vLLM units stopped (waiting for memory, or gave up).\n"
        "# TYPE sparkops_memory_guard_holding gauge\n"
        f"sparkops_memory_guard_holding {holding}\n"
        "# HELP sparkops_memory_guard_gave_up 1 once the memory guard gave up (too many stops within an hour): started by hand only.\n"
        "# TYPE sparkops_memory_guard_gave_up gauge\n"
        f"sparkops_memory_guard_gave_up {gave_up}\n"
    )


def write_textfile(folder: str, state: GuardState) -> None:
    """:func:`metrics_text` into ``folder``/sparkops_memory_guard.prom, atomically (the collector reads ``*.prom`` only,
    so the file beside it is never read half-written). :class:`OSError` when the folder is missing or not writable."""
    path = os.path.join(folder, TEXTFILE_NAME)
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(metrics_text(state))
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


# --- The decision ------------------------------------------------------------------------------------------------


def decide(state: GuardState, sample: Sample, levels: Levels, now: float) -> tuple[GuardState, str, str]:
    """The next state, the action and a line for the journal with the numbers ("" when nothing is worth a line).

    Watching, memory past a stop level gives ``stop`` (holding) or, when it is the ``max_stops_per_hour``-th stop
    within an hour, ``give_up`` (stop and leave stopped); this counts it in ``stops``. Holding or given up, memory still
    past a stop level gives ``stop`` again, not counted: the caller stops what runs (a unit started by hand meanwhile),
    quietly when nothing does. Holding, memory back (``MemAvailable`` >= the resume level, PSI below the stop
    percentage) for ``resume_hold_s`` gives ``start`` (watching); a dip restarts the hold. Pure: the caller does the
    action and records in ``stopped`` what it stopped."""
    stops = tuple(stamp for stamp in state.stops if now - stamp < HOUR)
    figures = describe(sample)
    pct = levels.stop_psi_full_pct
    full = sample.psi.full_avg10 if sample.psi is not None else None
    psi_high = pct is not None and full is not None and full >= pct
    previous_pressure = state.pressure_samples
    pressure = previous_pressure + 1 if psi_high else 0
    low = sample.mem_available < levels.stop_available_mib * MIB
    pressured = psi_high and pressure >= levels.stop_psi_samples
    state = replace(state, stops=stops, pressure_samples=pressure)

    if state.phase == WATCHING:
        if low or pressured:
            reasons = []
            if low:
                reasons.append(f"MemAvailable {sample.available_mib} MiB < {levels.stop_available_mib} MiB ({levels.name('stop_available_mib')})")
            if pressured:
                reasons.append(f"PSI full avg10 {full:.2f}% >= {pct:g}% for {pressure} samples in a row ({levels.name('stop_psi_full_pct')})")
            reason = " and ".join(reasons)
            stops = stops + (now,)
            held = replace(state, stops=stops, stops_total=state.stops_total + 1, pressure_samples=0, resume_since=None, held_since=now, reason=reason)
            if len(stops) >= levels.max_stops_per_hour:
                message = (
                    f"give up: {reason}; stop {len(stops)} within an hour, the most {levels.name('max_stops_per_hour')} allows "
                    f"({levels.max_stops_per_hour}): stopping and leaving stopped; start the units by hand once the cause is gone ({figures})"
                )
                return replace(held, phase=GAVE_UP), "give_up", message
            return replace(held, phase=HOLDING), "stop", f"stop: {reason} ({figures})"
        if psi_high:
            return state, "none", f"pressure: PSI full avg10 {full:.2f}% >= {pct:g}%, sample {pressure} of {levels.stop_psi_samples} in a row ({figures})"
        if previous_pressure and sample.psi is not None:
            return state, "none", f"pressure passed after {previous_pressure} sample(s) in a row, fewer than {levels.stop_psi_samples}: no stop ({figures})"
        return state, "none", ""

    if state.phase == GAVE_UP:
        return state, "stop" if low or pressured else "none", ""

    # Holding: memory still past the stop level keeps the units stopped (a unit started by hand meanwhile is stopped
    # again: not counted, the same emergency); back above the resume level for the hold time starts them.
    crossed = "stop" if low or pressured else "none"
    back = sample.mem_available >= levels.resume_available_mib * MIB and not psi_high
    if not back:
        if state.resume_since is None:
            return state, crossed, ""
        message = f"memory fell back below the resume level: the {levels.resume_hold_s:g}s hold starts over ({figures})"
        return replace(state, resume_since=None), crossed, message
    since = state.resume_since
    if since is None or since > now:  # a clock stepped back counts from now
        since = now
    if now - since >= levels.resume_hold_s:
        held_for = now - state.held_since if state.held_since is not None else 0.0
        message = (
            f"start: MemAvailable >= {levels.resume_available_mib} MiB ({levels.name('resume_available_mib')}) for {now - since:.0f}s, "
            f"{held_for:.0f}s after the stop ({state.reason or 'no reason recorded'}) ({figures})"
        )
        return replace(state, phase=WATCHING, resume_since=None, held_since=None, reason="", pressure_samples=0), "start", message
    if state.resume_since is None:
        message = f"memory back: MemAvailable >= {levels.resume_available_mib} MiB; starting after {levels.resume_hold_s:g}s if it holds ({figures})"
        return replace(state, resume_since=since), "none", message
    return replace(state, resume_since=since), "none", ""


# --- The loop ----------------------------------------------------------------------------------------------------

Systemctl = t.Callable[[t.List[str]], t.Tuple[int, str]]  # noqa: UP006 (evaluated at run time on the nodes)


def _one_line(text: str, limit: int = 1000) -> str:
    line = " / ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= limit else line[:limit] + "..."


class _Guard:
    """The effects of one guard: systemctl calls, their failures, the state file."""

    def __init__(
        self,
        levels: Levels,
        units: t.Sequence[str],
        systemctl: Systemctl,
        clock: t.Callable[[], float],
        log: t.Callable[[str], t.Any],
        state_path: str,
        textfile_dir: str = "",
    ) -> None:
        self.levels = levels
        self.units = list(units)
        self.systemctl = systemctl
        self.clock = clock
        self.log = log
        self.state_path = state_path
        self.failures: dict[str, tuple[tuple[int, str], float, int]] = {}
        self.saved: dict[str, t.Any] | None = None
        self.textfile_dir = textfile_dir
        self.textfile_problem: str | None = None

    def call(self, args: list[str]) -> tuple[int, str]:
        """Run ``systemctl ARGS``: (rc, its output on one line)."""
        try:
            rc, output = self.systemctl(list(args))
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            rc, output = 127, f"cannot run systemctl: {exc}"
        return rc, _one_line(output)

    def failed(self, args: list[str], rc: int, output: str) -> None:
        """Log a failed call, the same failure of the same call at most once a minute."""
        key = " ".join(args)
        now = self.clock()
        previous = self.failures.get(key)
        if previous is not None and previous[0] == (rc, output) and now - previous[1] < REPEAT_LOG_S:
            self.failures[key] = (previous[0], previous[1], previous[2] + 1)
            return
        again = f" (the same failure {previous[2]} more time(s) since the last line)" if previous is not None and previous[2] else ""
        self.log(f"systemctl {key} failed (rc {rc}): {output or 'no output'}; trying again in {self.levels.interval_s:g}s{again}")
        self.failures[key] = ((rc, output), now, 0)

    def succeeded(self, args: list[str]) -> None:
        self.failures.pop(" ".join(args), None)

    def running(self, unit: str) -> bool | None:
        """Whether ``unit`` runs (or is starting: the gates, an auto-restart); None when systemctl cannot say (logged).
        ``is-active`` exits non-zero for a unit that does not run, so its answer counts, not its status."""
        args = ["is-active", unit]
        rc, output = self.call(args)
        word = output.split(" ", maxsplit=1)[0]
        if word in RUNNING_STATES or word in IDLE_STATES:
            self.succeeded(args)
            return word in RUNNING_STATES
        self.failed(args, rc, output)
        return None

    def act(self, verb: str, unit: str) -> bool:
        args = [verb, unit]
        rc, output = self.call(args)
        if rc == 0:
            self.succeeded(args)
            return True
        self.failed(args, rc, output)
        return False

    def order(self, units: t.Iterable[str]) -> tuple[str, ...]:
        """Units in the caller's order (units no longer in the list, from an older state, last)."""
        position = {unit: index for index, unit in enumerate(self.units)}
        return tuple(sorted(set(units), key=lambda unit: (position.get(unit, len(self.units)), unit)))

    def stop(self, state: GuardState, quiet: bool = False) -> GuardState:
        """Stop every running unit of the list in order and record those stopped; ``retry`` when one could not be.
        A unit that does not run is left alone (said unless ``quiet``)."""
        claimed = list(state.stopped)
        failed = False
        for unit in self.units:
            if unit in claimed:
                continue
            running = self.running(unit)
            if running is None:
                failed = True
            elif not running:
                if not quiet:
                    self.log(f"{unit} does not run: left alone (the guard starts only what it stopped)")
            elif self.act("stop", unit):
                claimed.append(unit)
                self.log(f"stopped {unit}")
            else:
                failed = True
        return replace(state, stopped=self.order(claimed), retry="stop" if failed else "")

    def start(self, state: GuardState) -> GuardState:
        """Start the units the guard stopped, in reverse order; the first that fails, and those after it, wait for the
        next interval."""
        remaining = list(self.order(state.stopped))
        while remaining:
            unit = remaining[-1]
            running = self.running(unit)
            if running is None:
                break
            if running:
                self.log(f"{unit} runs already (started by someone else): not started")
            elif self.act("start", unit):
                self.log(f"started {unit}")
            else:
                break
            remaining.pop()
        return replace(state, stopped=tuple(remaining), retry="start" if remaining else "")

    def release(self, state: GuardState) -> GuardState:
        """While holding or given up: a unit the guard stopped that runs again was started by someone else and is no
        longer the guard's to start. Given up, the first such start ends the give-up (the guard would not start the
        others anyway); holding, the others are still started once memory is back. Nothing left: watching again."""
        if state.phase == WATCHING or not state.stopped or state.retry == "stop":
            return state
        started = [unit for unit in state.stopped if self.running(unit)]
        if not started:
            return state
        for unit in started:
            self.log(f"{unit} runs again, started by someone else: no longer the guard's to start")
        kept = tuple(unit for unit in state.stopped if unit not in started)
        if state.phase == GAVE_UP:
            left = f"; {', '.join(kept)} stay(s) stopped unless started by hand" if kept else ""
            self.log(f"started by hand after the guard gave up: watching again ({len(state.stops)} stop(s) in the last hour){left}")
            kept = ()
        elif kept:
            return replace(state, stopped=kept)
        else:
            self.log("every unit the guard stopped runs again: watching again")
        return replace(state, phase=WATCHING, stopped=kept, resume_since=None, held_since=None, reason="", retry="")

    def metrics(self, state: GuardState) -> None:
        """The textfile metrics, when a folder is set; a failure is logged when it first happens or changes."""
        if not self.textfile_dir:
            return
        try:
            write_textfile(self.textfile_dir, state)
        except OSError as exc:
            problem = f"{type(exc).__name__}: {exc.strerror or exc}"
            if problem != self.textfile_problem:
                self.log(f"cannot write the metrics into {self.textfile_dir} ({problem}); node exporter's textfile folder missing? guarding goes on")
            self.textfile_problem = problem
            return
        if self.textfile_problem is not None:
            self.log(f"metrics written into {self.textfile_dir} again")
        self.textfile_problem = None

    def save(self, state: GuardState) -> None:
        document = state.to_dict()
        if document == self.saved:
            return
        self.metrics(state)
        try:
            save_state(self.state_path, state)
        except OSError as exc:
            self.log(f"cannot write the guard state {self.state_path}: {exc}; a restart of the guard would forget it")
            return
        self.saved = document


def run(
    levels: Levels,
    units: t.Sequence[str],
    *,
    read: t.Callable[[], Sample],
    systemctl: Systemctl,
    clock: t.Callable[[], float],
    sleep: t.Callable[[float], t.Any],
    log: t.Callable[[str], t.Any],
    state_path: str,
    iterations: int | None = None,
    stopping: t.Callable[[], bool] | None = None,
    report_every_s: float = DEFAULT_REPORT_EVERY_S,
    textfile_dir: str = "",
) -> GuardState:
    """Guard ``units`` (the group, in stop order) until ``iterations`` samples were taken (None: for ever) or
    ``stopping()`` says so; return the last state. ``read`` returns a :class:`Sample`; ``systemctl(args)`` runs
    ``systemctl ARGS`` (``["is-active", unit]``, ``["stop", unit]``, ``["start", unit]``) and returns (rc, output);
    ``log`` takes one line. The state is loaded from ``state_path`` and written back when it changes; with
    ``textfile_dir``, :func:`metrics_text` is written there at start and whenever the state changes."""
    guard = _Guard(levels, units, systemctl, clock, log, state_path, textfile_dir)
    try:
        state = load_state(state_path)
    except MemoryGuardError as exc:
        log(f"{exc}: starting afresh (a unit the guard had stopped before is not started by it)")
        state = GuardState()
    else:
        guard.saved = state.to_dict()
    held = f"; holding {', '.join(state.stopped) or 'nothing'} since a stop ({state.phase})" if state.phase != WATCHING else ""
    log(f"memory guard for {', '.join(units)}: {levels.summary()}{held}")
    guard.metrics(state)
    psi_problem: str | None = None
    last_report = clock()
    done = 0
    while iterations is None or done < iterations:
        if stopping is not None and stopping():
            break
        done += 1
        try:
            sample = read()
        except (OSError, MemoryGuardError) as exc:
            log(f"cannot read the memory figures: {exc}; trying again in {levels.interval_s:g}s")
            sample = None
        if sample is not None:
            if sample.psi is None and psi_problem != sample.psi_problem:
                log(f"no PSI memory pressure: {sample.psi_problem}; guarding on MemAvailable alone")
            elif sample.psi is not None and psi_problem:
                log("PSI memory pressure readable again")
            psi_problem = sample.psi_problem if sample.psi is None else ""
            state = _step(guard, state, sample, clock())
            now = clock()
            if now - last_report >= report_every_s:
                last_report = now
                log(_report(state, sample, now))
            guard.save(state)
        if iterations is None or done < iterations:
            sleep(levels.interval_s)
    return state


def _step(guard: _Guard, state: GuardState, sample: Sample, now: float) -> GuardState:
    """One iteration: a failed action again, a hand start noticed, the decision and its action."""
    stopped_already = state.retry == "stop" and state.phase != WATCHING
    if stopped_already:
        state = guard.stop(state, quiet=True)
    elif state.retry == "start" and state.phase == WATCHING:
        state = guard.start(state)
    state = guard.release(state)
    counted = state.phase == WATCHING
    state, action, message = decide(state, sample, guard.levels, now)
    if message:
        guard.log(message)
    if action in ("stop", "give_up") and not (stopped_already and not counted):
        before = set(state.stopped)
        state = guard.stop(state, quiet=not counted)
        if counted and set(state.stopped) == before and not state.retry:
            # Nothing ran (an operator had stopped it all): no stop to count, nothing to start; wait for memory.
            guard.log("none of the units runs: nothing stopped; waiting for memory to come back")
            state = replace(state, phase=HOLDING, stops=state.stops[:-1], stops_total=max(state.stops_total - 1, 0))
    elif action == "start":
        state = guard.start(state)
    return state


def _report(state: GuardState, sample: Sample, now: float) -> str:
    stops = f"{len(state.stops)} stop(s) in the last hour"
    if state.phase == WATCHING:
        return f"watching: {describe(sample)}; {stops}"
    held = f"{now - state.held_since:.0f}s" if state.held_since is not None else "a while"
    units = ", ".join(state.stopped) or "nothing"
    if state.phase == GAVE_UP:
        return f"gave up {held} ago ({state.reason}): {units} stay stopped until started by hand; {describe(sample)}; {stops}"
    return f"holding {units} for {held} ({state.reason}): {describe(sample)}; {stops}"


# --- The command -------------------------------------------------------------------------------------------------

SETTINGS_KEYS = LEVEL_FIELDS + (
    "units",
    "state_path",
    "names",
    "proc_root",
    "systemctl",
    "systemctl_timeout_s",
    "report_every_s",
    "iterations",
    "textfile_dir",
)


@dataclass(frozen=True)
class GuardSettings:
    levels: Levels
    units: tuple[str, ...]
    state_path: str
    proc_root: str = "/proc"
    systemctl: str = "systemctl"
    systemctl_timeout_s: float = DEFAULT_SYSTEMCTL_TIMEOUT_S
    report_every_s: float = DEFAULT_REPORT_EVERY_S
    iterations: int | None = None
    textfile_dir: str = ""

    @classmethod
    def from_dict(cls, raw: t.Any, mem_total_mib: int | None = None) -> GuardSettings:
        """The settings :func:`main` reads; see its docstring. With ``mem_total_mib``, the levels are checked against it too."""
        if not isinstance(raw, dict):
            raise MemoryGuardError(f"the settings are {type(raw).__name__}, not a JSON object")
        names = raw.get("names") or {}
        if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
            raise MemoryGuardError("names must map setting names to variable names (strings)")

        def name(key: str) -> str:
            return str(names.get(key, key))

        unknown = sorted(str(key) for key in raw if key not in SETTINGS_KEYS)
        if unknown:
            raise MemoryGuardError(f"unknown setting(s) {', '.join(unknown)[:200]}; known: {', '.join(SETTINGS_KEYS)}")
        units = raw.get("units")
        if not isinstance(units, list) or not units:
            raise MemoryGuardError(f"{name('units')} must be a non-empty list of systemd unit names")
        for unit in units:
            if not _unit_name(unit):
                raise MemoryGuardError(f"{name('units')} has {_show(unit)}: not a systemd unit name")
        if len(set(units)) != len(units):
            raise MemoryGuardError(f"{name('units')} names a unit twice")
        strings: dict[str, str] = {}
        for key, default in (("state_path", None), ("proc_root", "/proc"), ("systemctl", "systemctl")):
            text = raw.get(key, default)
            if not isinstance(text, str) or not text or "\0" in text:
                raise MemoryGuardError(f"{name(key)} must be a path, not {_show(text)}")
            strings[key] = text
        textfile_dir = raw.get("textfile_dir") or ""
        if not isinstance(textfile_dir, str) or "\0" in textfile_dir:
            raise MemoryGuardError(f"{name('textfile_dir')} must be a folder's path (or empty: no metrics file), not {_show(textfile_dir)}")
        numbers: dict[str, float] = {}
        for key, seconds in (("systemctl_timeout_s", DEFAULT_SYSTEMCTL_TIMEOUT_S), ("report_every_s", DEFAULT_REPORT_EVERY_S)):
            number = raw.get(key, seconds)
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) or number <= 0:
                raise MemoryGuardError(f"{name(key)} is {_show(number)}: seconds above 0")
            numbers[key] = float(number)
        iterations = _iterations(raw.get("iterations"), name("iterations"))
        return cls(
            levels=Levels.from_settings(raw, names, mem_total_mib),
            units=tuple(units),
            state_path=strings["state_path"],
            proc_root=strings["proc_root"],
            systemctl=strings["systemctl"],
            systemctl_timeout_s=numbers["systemctl_timeout_s"],
            report_every_s=numbers["report_every_s"],
            iterations=iterations,
            textfile_dir=textfile_dir,
        )


def _iterations(value: t.Any, label: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MemoryGuardError(f"{label} is {_show(value)}: a count of samples, 1 or more (or null: for ever)")
    return value


def systemctl_runner(command: str = "systemctl", timeout: float = DEFAULT_SYSTEMCTL_TIMEOUT_S, env: t.Mapping[str, str] | None = None) -> Systemctl:
    """``systemctl`` run without a shell: ``(rc, stdout and stderr)``; 124 on timeout, 127 when it cannot start."""

    def call(args: t.List[str]) -> t.Tuple[int, str]:  # noqa: UP006
        try:
            proc = subprocess.run(
                [command] + list(args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                env=None if env is None else dict(env),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return 124, f"no answer within {timeout:g}s"
        except OSError as exc:
            return 127, f"cannot run {command}: {exc}"
        return proc.returncode, proc.stdout.decode("utf-8", "replace")

    return call


def main(argv: t.Sequence[str], environ: t.Mapping[str, str], out: t.TextIO | None = None) -> int:
    """``sparkops-memory-guard SETTINGS.json`` (``argv`` without the program's name): guard until SIGTERM/SIGINT.

    The settings, a JSON object (unknown keys refused):

    * ``units`` (required): the unit names to stop, in stop order (started in reverse);
    * ``state_path`` (required): the guard's state file (its folder must exist; the file is written atomically);
    * the levels, each optional (see the module docstring): ``stop_available_mib``, ``stop_psi_full_pct`` (null: PSI
      off), ``stop_psi_samples``, ``resume_available_mib``, ``resume_hold_s``, ``interval_s``,
      ``max_stops_per_hour``;
    * ``names``: setting -> the variable that sets it, for the refusals (``{"stop_available_mib":
      "vllm_serve_memory_guard_stop_available_mib"}``);
    * ``proc_root`` (``/proc``), ``systemctl`` (``systemctl``, looked up in ``environ``'s PATH),
      ``systemctl_timeout_s`` (1800: a start waits for the unit's ExecStartPre gates), ``report_every_s`` (600: a
      status line), ``iterations`` (null: for ever; a count of samples, for tests), ``textfile_dir`` (empty: none; node
      exporter's textfile folder, where :func:`metrics_text` goes as ``sparkops_memory_guard.prom``). ``environ``'s
      ``SPARKOPS_MEMORY_GUARD_ITERATIONS`` overrides ``iterations``.

    One line per decision or action goes to ``out`` (stdout: systemd's journal). Exit codes: 0 after SIGTERM/SIGINT or
    the ``iterations``; 2 on a usage error or settings refused (unreadable, not JSON, a wrong type, a level that makes
    no sense or is not below this host's MemTotal: the line names the variable); 1 when ``/proc/meminfo`` cannot be
    read at start (nothing to check the levels against, nothing to guard with)."""
    stream = sys.stdout if out is None else out

    def log(line: str) -> None:
        stream.write(_one_line(line, limit=4000) + "\n")
        stream.flush()

    if len(argv) != 1 or argv[0].startswith("-"):
        log("usage: sparkops-memory-guard SETTINGS.json")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            raw = json.loads(handle.read(MAX_PROC_READ))
        settings = GuardSettings.from_dict(raw)
        env_iterations = environ.get(ITERATIONS_ENV)
        if env_iterations is not None:
            settings = replace(settings, iterations=_iterations(env_iterations, ITERATIONS_ENV))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # MemoryGuardError is a ValueError
        log(f"memory guard settings {argv[0]}: {exc}")
        return 2
    try:
        first = read_sample(settings.proc_root)
    except (OSError, MemoryGuardError) as exc:
        log(f"memory guard: {exc}")
        return 1
    try:
        settings.levels.check(first.total_mib)
    except MemoryGuardError as exc:
        log(f"memory guard settings {argv[0]}: {exc}")
        return 2

    stop_requested: list[int] = []

    def on_signal(signum: int, frame: t.Any) -> None:
        stop_requested.append(signum)

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        run(
            settings.levels,
            settings.units,
            read=lambda: read_sample(settings.proc_root),
            systemctl=systemctl_runner(settings.systemctl, settings.systemctl_timeout_s, environ),
            clock=time.time,
            sleep=time.sleep,
            log=log,
            state_path=settings.state_path,
            iterations=settings.iterations,
            stopping=lambda: bool(stop_requested),
            report_every_s=settings.report_every_s,
            textfile_dir=settings.textfile_dir,
        )
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stop_requested:
        log(f"memory guard ends on signal {stop_requested[0]}")
    return 0
