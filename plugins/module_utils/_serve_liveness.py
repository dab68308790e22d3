# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vLLM liveness probe: a real completion every few seconds, and the serving group restarted when the engine no
longer answers while its process lives.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

vLLM's API server can answer ``/health`` 200 while generation is dead (an engine hung in a collective, a wedged
GPU); systemd restarts a unit only when its process ends. A systemd timer on the head runs ``sparkops-vllm-liveness``
(:func:`main`) every ``interval_s``; each run is one probe and one decision (:func:`decide`), written to the journal
as one line, its state kept in a JSON file between runs (:class:`State`):

- the vLLM unit not active (stopped by someone, starting through its gates, failed): nothing probed, nothing counted;
- a probe is the readiness check of the ``openai_endpoint`` module (``/health``, ``/v1/models``, a chat completion
  of a few tokens, :func:`check_once`) with the head's API key, each request limited to ``timeout_s``;
- a failed probe while the engine loads (no answer yet since the unit last started, within ``startup_grace_s``) is
  not counted; nor is a timed-out probe while vLLM's own counter of generated tokens (``/metrics``) still grows: the
  engine is busy, not dead;
- first, vLLM's own counters (``GET /metrics``, :func:`read_engine`): while requests run, tokens generated or
  prompt tokens processed since the last run mean it works (no completion of its own is sent); requests running
  with neither counter moving for ``wedge_after_s`` is a wedge (an engine stuck mid-generation can keep its GPU
  busy while producing nothing, vllm#37729), acted on at once as ``failures`` failed probes would be. The counters
  count a prefill when it ends (vLLM 0.32 vllm/v1/metrics/loggers.py:1262, stats.py:453-457): one prefill longer
  than ``wedge_after_s`` with no other request decoding reads as a wedge. With no request running, or no
  ``/metrics``, the timed completion decides;
- after ``failures`` failed probes in a row, the serving group is restarted (``systemctl restart --no-block``): in
  Ray mode the vLLM unit, or the Ray head unit when the cluster lost a node (vLLM requires it, so it restarts with
  it, and the workers' Ray units rejoin on their own); in mp mode the head's rank, whose restart the other ranks'
  supervisors follow (the group restarts as one);
- at most ``max_restarts_per_hour`` restarts in any hour: then it stops acting and says so at every run, until the
  unit is started again by someone else (an operator, a rerun of the role), which the unit's invocation id shows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import typing as t
from dataclasses import asdict, dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils._openai_endpoint import (
    FAIL_TIMEOUT,
    EndpointConfig,
    HttpRequest,
    Opener,
    check_once,
    normalise_url,
    stdlib_opener,
)
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import run_command
from ansible_collections.sparkops.inference.plugins.module_utils._serve_gate import GateSettings, cluster_gate
from ansible_collections.sparkops.inference.plugins.module_utils._vllm_metrics import GENERATION_TOKENS, PROMPT_TOKENS, REQUESTS_RUNNING, counter_totals

HOUR = 3600.0

SystemctlRunner = t.Callable[[t.Sequence[str]], tuple[int, str]]


class LivenessError(ValueError):
    """Settings the probe cannot run with; the message names the setting (and the role variable it comes from)."""


# The role's variable for each setting, named in refusals.
VARIABLES = {
    "interval_s": "vllm_serve_liveness_interval_s",
    "failures": "vllm_serve_liveness_failures",
    "max_restarts_per_hour": "vllm_serve_liveness_max_restarts_per_hour",
    "timeout_s": "vllm_serve_liveness_timeout_s",
    "startup_grace_s": "vllm_serve_liveness_startup_grace_s",
    "wedge_after_s": "vllm_serve_liveness_wedge_after_s",
}


def _positive(raw: t.Mapping[str, t.Any], key: str, integer: bool = False) -> float:
    value = raw.get(key)
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0 and (number.is_integer() or not integer)):
        kind = "a whole number of at least 1" if integer else "a number of seconds above 0"
        raise LivenessError(f"{VARIABLES.get(key, key)} must be {kind}, got {value!r}")
    return number


@dataclass(frozen=True)
class Settings:
    url: str
    model: str
    unit: str
    restart_units: tuple[str, ...]  # what a restart restarts, in order (the vLLM unit; mp: the head's rank)
    ray_head_unit: str = ""  # Ray mode: restarted instead when the cluster lost a node
    gate_settings: str = ""  # Ray mode: the start gates' settings (the cluster check)
    api_key_file: str = ""
    state_file: str = "/var/lib/sparkops/vllm-liveness.json"
    interval_s: float = 30.0
    failures: int = 3
    max_restarts_per_hour: int = 3
    timeout_s: float = 60.0
    startup_grace_s: float = 1800.0
    wedge_after_s: float = 120.0
    max_tokens: int = 4

    @classmethod
    def from_dict(cls, raw: t.Any) -> Settings:
        if not isinstance(raw, dict):
            raise LivenessError(f"the liveness settings must be a JSON object, got {type(raw).__name__}")
        try:
            url = normalise_url(str(raw["url"]))
            restart_units = tuple(str(unit) for unit in raw.get("restart_units") or [raw["unit"]])
            return cls(
                url=url,
                model=str(raw["model"]),
                unit=str(raw["unit"]),
                restart_units=restart_units,
                ray_head_unit=str(raw.get("ray_head_unit") or ""),
                gate_settings=str(raw.get("gate_settings") or ""),
                api_key_file=str(raw.get("api_key_file") or ""),
                state_file=str(raw.get("state_file") or cls.state_file),
                interval_s=_positive(raw, "interval_s"),
                failures=int(_positive(raw, "failures", integer=True)),
                max_restarts_per_hour=int(_positive(raw, "max_restarts_per_hour", integer=True)),
                timeout_s=_positive(raw, "timeout_s"),
                startup_grace_s=_positive(raw, "startup_grace_s"),
                wedge_after_s=_positive({"wedge_after_s": raw.get("wedge_after_s", cls.wedge_after_s)}, "wedge_after_s"),
                max_tokens=int(_positive({"max_tokens": raw.get("max_tokens", 4)}, "max_tokens", integer=True)),
            )
        except KeyError as exc:
            raise LivenessError(f"the liveness settings lack {exc.args[0]!r}") from None
        except LivenessError:
            raise
        except (TypeError, ValueError) as exc:
            raise LivenessError(f"bad liveness settings: {exc}") from None


@dataclass
class State:
    """What the probe remembers between runs (the timer starts a new process each time)."""

    failures: int = 0
    restarts: list[float] = field(default_factory=list)  # wall-clock times of its restarts, the last hour's
    ready_invocation: str = ""  # the unit's invocation in which the endpoint answered
    gave_up_invocation: str = ""  # the invocation it stopped acting on (max restarts reached)
    generation_tokens: float | None = None  # vLLM's counter at the last probe
    progress_tokens: float | None = None  # generated + prompt tokens when they last moved (or no request ran)
    progress_at: float | None = None  # then (wall clock)
    last_probe: dict[str, t.Any] = field(default_factory=dict)  # at, ok, state, message

    @classmethod
    def from_dict(cls, raw: t.Any) -> State:
        if not isinstance(raw, dict):
            return cls()
        try:
            tokens = raw.get("generation_tokens")
            progress = raw.get("progress_tokens")
            progress_at = raw.get("progress_at")
            return cls(
                failures=max(0, int(raw.get("failures") or 0)),
                restarts=[float(at) for at in raw.get("restarts") or [] if math.isfinite(float(at))],
                ready_invocation=str(raw.get("ready_invocation") or ""),
                gave_up_invocation=str(raw.get("gave_up_invocation") or ""),
                generation_tokens=float(tokens) if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) else None,
                progress_tokens=float(progress) if isinstance(progress, (int, float)) and not isinstance(progress, bool) else None,
                progress_at=float(progress_at) if isinstance(progress_at, (int, float)) and not isinstance(progress_at, bool) else None,
                last_probe=dict(raw.get("last_probe") or {}),
            )
        except (TypeError, ValueError):
            return cls()  # a damaged state file: start afresh, as after a first install

    def as_dict(self) -> dict[str, t.Any]:
        return asdict(self)


@dataclass(frozen=True)
class UnitStatus:
    active_state: str  # active, activating, inactive, failed, ...
    invocation: str  # systemd's InvocationID of the unit's current (or last) start
    active_since: float | None  # seconds of CLOCK_MONOTONIC when it became active, None when not active


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    state: str  # the openai_endpoint probe state: ready, timeout, refused, completion_failed, ...
    message: str
    timed_out: bool = False
    generation_tokens: float | None = None


@dataclass(frozen=True)
class EngineCounters:
    """vLLM's own view (its /metrics), summed over its engines: requests running, and tokens generated or prompt tokens
    processed in all."""

    running: float
    tokens: float


@dataclass(frozen=True)
class Decision:
    action: str  # "none", "restart", "restart_ray", "give_up"
    message: str


def stalled_for(state: State, engine: EngineCounters | None, now: float) -> float | None:
    """Seconds the engine has run requests with neither counter moving (from ``engine``, this run's reading, and
    ``state``'s last progress, which it updates); None while it makes progress, runs none or cannot be read."""
    if engine is None:
        state.progress_tokens = state.progress_at = None
        return None
    if engine.running <= 0 or state.progress_tokens is None or state.progress_at is None or engine.tokens != state.progress_tokens:
        state.progress_tokens, state.progress_at = engine.tokens, now
        return None
    return max(0.0, now - state.progress_at)


def decide(
    state: State,
    status: UnitStatus,
    probe: ProbeResult | None,
    settings: Settings,
    now: float,
    monotonic_now: float,
    cluster_complete: t.Callable[[], bool | None] | None = None,
    engine: EngineCounters | None = None,
) -> Decision:
    """One run's decision; updates ``state``. ``engine`` is vLLM's counters read this run (None: not read); while it
    runs requests they decide and ``probe`` (the timed completion) is None; otherwise ``probe`` is the completion,
    None when the unit was not active (nothing probed). ``cluster_complete`` (Ray mode) is asked only when a restart
    is due: False means the cluster lost a node."""
    state.restarts = [at for at in state.restarts if now - at < HOUR]
    working = engine is not None and engine.running > 0
    if status.active_state != "active" or (probe is None and not working):
        state.failures = 0
        state.generation_tokens = state.progress_tokens = state.progress_at = None
        return Decision("none", f"{settings.unit} is {status.active_state}: not probed")
    stalled = stalled_for(state, engine, now)
    if working and engine is not None:
        wedged = stalled is not None and stalled >= settings.wedge_after_s
        said = (
            f"{engine.running:g} request(s) running, tokens moving (vLLM's counters)"
            if stalled is None
            else f"{engine.running:g} request(s) running and no token generated or prompt processed for {stalled:.0f} s "
            f"(vLLM's counters; {VARIABLES['wedge_after_s']} {settings.wedge_after_s:g} s)"
        )
        state.last_probe = {"at": now, "ok": not wedged, "state": "wedged" if wedged else "generating" if stalled is None else "stalled", "message": said}
    else:
        probe = t.cast("ProbeResult", probe)  # not None: an active unit with no request running was probed
        previous_tokens, state.generation_tokens = state.generation_tokens, probe.generation_tokens
        said = probe.message
        state.last_probe = {"at": now, "ok": probe.ok, "state": probe.state, "message": probe.message}
    if state.gave_up_invocation:
        if state.gave_up_invocation == status.invocation:
            return Decision(
                "none",
                f"stopped acting: {len(state.restarts)} restart(s) in the last hour reached "
                f"{VARIABLES['max_restarts_per_hour']} ({settings.max_restarts_per_hour}); {settings.unit} left as it is "
                f"({said}); restart it, or rerun the role (--tags serve), to resume",
            )
        state.gave_up_invocation = ""  # started again by someone else: resume
    if working:
        if state.last_probe["ok"]:
            if stalled is None:
                state.failures = 0
                state.ready_invocation = status.invocation
            return Decision("none", ("serving: " if stalled is None else "") + said + ("" if stalled is None else ": not yet a wedge"))
        return _act(state, status, settings, now, cluster_complete, f"wedged: {said}")
    probe = t.cast("ProbeResult", probe)  # as above
    if probe.ok:
        recovered = state.failures
        state.failures = 0
        state.ready_invocation = status.invocation
        return Decision("none", f"serving: {probe.message}" + (f" (after {recovered} failed probe(s))" if recovered else ""))
    if state.ready_invocation != status.invocation:
        started = monotonic_now - status.active_since if status.active_since is not None else 0.0
        if started < settings.startup_grace_s:
            return Decision(
                "none",
                f"not answering yet, {started:.0f} s after {settings.unit} started (loading; "
                f"{VARIABLES['startup_grace_s']} {settings.startup_grace_s:g} s): {probe.message}; not counted",
            )
    if probe.timed_out and previous_tokens is not None and probe.generation_tokens is not None and probe.generation_tokens > previous_tokens:
        return Decision(
            "none",
            f"the probe timed out but the engine generated {probe.generation_tokens - previous_tokens:g} token(s) since the last "
            f"probe: busy, not counted ({probe.message})",
        )
    state.failures += 1
    if state.failures < settings.failures:
        return Decision("none", f"probe failed ({state.failures} of {settings.failures} in a row): {probe.message}")
    return _act(state, status, settings, now, cluster_complete, f"probe failed {state.failures} times in a row ({probe.message})")


def _act(state: State, status: UnitStatus, settings: Settings, now: float, cluster_complete: t.Callable[[], bool | None] | None, why: str) -> Decision:
    """A restart is due (``why``): the serving group's, Ray's head when the cluster lost a node; or, with the hour's
    restarts used up, none, and the probe stops acting on this invocation of the unit."""
    if len(state.restarts) >= settings.max_restarts_per_hour:
        state.gave_up_invocation = status.invocation
        return Decision(
            "give_up",
            f"{why}, but {len(state.restarts)} restart(s) in the last hour reached {VARIABLES['max_restarts_per_hour']} "
            f"({settings.max_restarts_per_hour}): stopped acting; {settings.unit} left as it is; look at "
            f"`journalctl -u {settings.unit}`, then restart it or rerun the role",
        )
    state.failures = 0
    state.restarts.append(now)
    state.ready_invocation = ""
    state.progress_tokens = state.progress_at = None
    if settings.ray_head_unit and cluster_complete is not None and cluster_complete() is False:
        return Decision("restart_ray", f"{why} and the Ray cluster lost a node: restarting {settings.ray_head_unit} (and {settings.unit} with it)")
    return Decision("restart", f"{why}: restarting {', '.join(settings.restart_units)}")


# -- The run: systemd, the endpoint, the state file ---------------------------------------------------------------------
def systemctl(argv: t.Sequence[str]) -> tuple[int, str]:
    proc = subprocess.run(["systemctl", *argv], capture_output=True, text=True, check=False)  # noqa: S603, S607
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def unit_status(unit: str, run: SystemctlRunner) -> UnitStatus:
    rc, out = run(["show", "--property=ActiveState,InvocationID,ActiveEnterTimestampMonotonic", unit])
    fields = dict(line.split("=", 1) for line in out.splitlines() if "=" in line) if rc == 0 else {}
    state = fields.get("ActiveState", "unknown")
    entered = fields.get("ActiveEnterTimestampMonotonic", "0")
    since = int(entered) / 1e6 if entered.isdigit() and int(entered) > 0 and state == "active" else None
    return UnitStatus(state, fields.get("InvocationID", ""), since)


def engine_totals(settings: Settings, opener: Opener) -> dict[str, float] | None:
    """vLLM's counters the probe reads (``/metrics``, no API key: not guarded), summed over its engines; None when it
    does not answer 200."""
    response = opener(HttpRequest("GET", f"{settings.url}/metrics", {}, None, min(settings.timeout_s, 10.0)))
    if response.status != 200:
        return None
    return counter_totals(response.body.decode("utf-8", "replace"), [GENERATION_TOKENS, PROMPT_TOKENS, REQUESTS_RUNNING])


def read_engine(settings: Settings, opener: Opener) -> EngineCounters | None:
    """Requests running and tokens processed, by vLLM's counters; None without them."""
    totals = engine_totals(settings, opener)
    if totals is None or REQUESTS_RUNNING not in totals or GENERATION_TOKENS not in totals:
        return None
    return EngineCounters(running=totals[REQUESTS_RUNNING], tokens=totals[GENERATION_TOKENS] + totals.get(PROMPT_TOKENS, 0.0))


def generation_tokens(settings: Settings, opener: Opener) -> float | None:
    totals = engine_totals(settings, opener)
    return None if totals is None else totals.get(GENERATION_TOKENS)


def probe_endpoint(settings: Settings, api_key: str | None, opener: Opener) -> ProbeResult:
    config = EndpointConfig(url=settings.url, model=settings.model, api_key=api_key, max_tokens=settings.max_tokens, request_timeout=settings.timeout_s)
    probe = check_once(config, opener)
    steps = "; ".join(f"{step}: {detail}" for step, detail in probe.steps.items())
    message = config.redact(steps)
    timed_out = any(detail.startswith("timed out") for detail in probe.steps.values()) or probe.state == FAIL_TIMEOUT
    return ProbeResult(probe.ready, probe.state, message, timed_out, generation_tokens(settings, opener))


def read_key(path: str) -> str | None:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def load_state(path: str) -> State:
    try:
        with open(path, encoding="utf-8") as handle:
            return State.from_dict(json.load(handle))
    except (OSError, ValueError):
        return State()


def save_state(path: str, state: State) -> None:
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o755, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".vllm-liveness.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state.as_dict(), handle, sort_keys=True)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def cluster_complete(settings: Settings) -> bool | None:
    """Ray mode: every expected node alive with its GPUs (the start gates' cluster check, one look); None otherwise."""
    if not settings.ray_head_unit or not settings.gate_settings:
        return None
    try:
        with open(settings.gate_settings, encoding="utf-8") as handle:
            raw = json.load(handle)
        gate = GateSettings.from_dict({**raw, "cluster_timeout": min(settings.timeout_s, 30.0)})
    except (OSError, ValueError):
        return None
    return cluster_gate(gate, run_command, time.monotonic, time.sleep).ok


def say(line: str) -> None:
    """One decision, one line on stdout: systemd's journal (SyslogIdentifier sparkops-vllm-liveness) takes it."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_once(
    settings: Settings,
    *,
    run: SystemctlRunner = systemctl,
    opener: Opener | None = None,
    clock: t.Callable[[], float] = time.time,
    monotonic: t.Callable[[], float] = time.monotonic,
    cluster: t.Callable[[Settings], bool | None] = cluster_complete,
    log: t.Callable[[str], t.Any] = say,
) -> Decision:
    """One probe and one decision (what the timer's service runs), the state file read and written."""
    state = load_state(settings.state_file)
    status = unit_status(settings.unit, run)
    probe = engine = None
    now = clock()
    if status.active_state == "active":
        opener = opener or stdlib_opener()
        engine = read_engine(settings, opener)
        if engine is None or engine.running <= 0:  # vLLM's counters decide while it runs requests
            probe = probe_endpoint(settings, read_key(settings.api_key_file), opener)
    decision = decide(state, status, probe, settings, now, monotonic(), lambda: cluster(settings), engine)
    log(decision.message)
    if decision.action in ("restart", "restart_ray"):
        units = [settings.ray_head_unit] if decision.action == "restart_ray" else list(settings.restart_units)
        for unit in units:
            rc, out = run(["restart", "--no-block", unit])
            if rc != 0:
                log(f"systemctl restart {unit} failed (rc {rc}): {out}")
    save_state(settings.state_file, state)
    return decision


def main(argv: t.Sequence[str], err: t.TextIO = sys.stderr) -> int:
    """``sparkops-vllm-liveness SETTINGS.json``: one probe and one decision. Exit 0 after any decision (the journal
    line says it), 2 on settings it cannot use."""
    if len(argv) != 1:
        err.write("usage: sparkops-vllm-liveness SETTINGS.json\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            settings = Settings.from_dict(json.load(handle))
    except (OSError, ValueError) as exc:
        err.write(f"sparkops-vllm-liveness: {exc}\n")
        return 2
    run_once(settings)
    return 0
