# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The status report of a running cluster: nodes, units, Ray, the model, the endpoint, the liveness probe and the last
health events.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`build_document` checks what the status playbook gathered (each node's role, addresses, versions, unit_status
result and model check; the Ray cluster; the endpoint's probe; the liveness probe's settings and state files, as
slurp read them on the head) and puts it into the JSON document
(:data:`SCHEMA_VERSION`, described in docs/status.md); :func:`render_markdown` is the report a person reads. The
files are written as recon_report writes its own (_report_files: only when something but ``generated_at``
changed).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import typing as t
from dataclasses import fields
from datetime import datetime

from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_report import NAME_PATTERN
from ansible_collections.sparkops.inference.plugins.module_utils._recon_report import version_rows
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import Plan, utc_now
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import plan as plan_files
from ansible_collections.sparkops.inference.plugins.module_utils._unit_status import HealthEvent, UnitState, iso_utc
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS

SCHEMA_VERSION = 1
ROLES = ("head", "worker")
MISSING = "n/a"
SAMPLE_CHARS = 200
UNIT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(UnitState))
EVENT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(HealthEvent))
MODEL_NODE_KEYS = ("commit", "complete", "checked_at", "mode", "problems")
RAY_NODE_KEYS = ("ip", "hostname", "alive", "state", "is_head", "gpus")
ENDPOINT_KEYS = ("url", "model", "ready", "state", "latency_s", "sample", "sample_source", "finish_reason", "completion_tokens", "error")
SAMPLE_SOURCES = ("content", "reasoning")
# The vllm_serve role's liveness probe on the head (roles/vllm_serve/vars/main.yml, module_utils/_serve_liveness.py).
LIVENESS_KEYS = ("settings", "state", "settings_error", "state_error")
LIVENESS_TIMER = "sparkops-vllm-liveness.timer"
LIVENESS_SERVICE = "sparkops-vllm-liveness.service"
LIVENESS_UNIT_KEYS = ("unit", "active_state", "sub_state", "enabled", "result")
HOUR = 3600.0
PROBE_MESSAGE_CHARS = 300
JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}


class StatusReportError(ValueError):
    """Options that cannot be reported; the message names the option (and the host)."""


def check_basename(basename: str) -> None:
    if not NAME_PATTERN.match(basename):
        raise StatusReportError(f"basename {basename!r} must be a file base name: letters, digits, '.', '_' and '-', not starting with '.', '_' or '-'")


def _mapping(value: t.Any, where: str) -> t.Mapping[str, t.Any] | None:
    if value is None:
        return None
    if not isinstance(value, t.Mapping):
        raise StatusReportError(f"{where} must be a dictionary or null")
    return value


def _list(value: t.Any, where: str) -> list[t.Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise StatusReportError(f"{where} must be a list")
    return value


def _str(value: t.Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _bool(value: t.Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _number(value: t.Any) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _strings(value: t.Any, where: str) -> list[str]:
    return [str(item) for item in _list(value, where)]


# ---------------------------------------------------------------------------------------------------------------
# The document


def _units(value: t.Any, host: str) -> tuple[list[dict[str, t.Any]] | None, list[dict[str, t.Any]], list[str]]:
    """A node's unit_status result as (units or None when not read, its health events with the host, its notes)."""
    result = _mapping(value, f"nodes.{host}.units")
    if result is None:
        return None, [], []
    units = []
    for index, unit in enumerate(_list(result.get("units"), f"nodes.{host}.units.units")):
        if not isinstance(unit, t.Mapping) or not unit.get("unit"):
            raise StatusReportError(f"nodes.{host}.units.units[{index}] must be a unit of sparkops.inference.unit_status (a dictionary with unit)")
        units.append({key: unit.get(key) for key in UNIT_KEYS})
    events = []
    for index, event in enumerate(_list(result.get("health_events"), f"nodes.{host}.units.health_events")):
        if not isinstance(event, t.Mapping):
            raise StatusReportError(f"nodes.{host}.units.health_events[{index}] must be a dictionary")
        events.append({"host": host, **{key: event.get(key) for key in EVENT_KEYS}})
    return sorted(units, key=lambda unit: str(unit["unit"])), events, _strings(result.get("notes"), f"nodes.{host}.units.notes")


def _model(value: t.Any, host: str) -> dict[str, t.Any] | None:
    model = _mapping(value, f"nodes.{host}.model")
    if model is None:
        return None
    return {
        "commit": _str(model.get("commit")),
        "complete": _bool(model.get("complete")),
        "checked_at": _str(model.get("checked_at")),
        "mode": _str(model.get("mode")),
        "problems": _strings(model.get("problems"), f"nodes.{host}.model.problems"),
    }


def _versions(value: t.Any, host: str) -> dict[str, str | None] | None:
    versions = _mapping(value, f"nodes.{host}.versions")
    if versions is None:
        return None
    return {component: _str(versions.get(component)) for component in COMPONENTS}


def _workaround_rows(value: t.Any) -> list[dict[str, t.Any]]:
    rows = []
    for row in value if isinstance(value, list) else []:
        if isinstance(row, t.Mapping):
            raw_env = row.get("env")
            env: t.Mapping[t.Any, t.Any] = raw_env if isinstance(raw_env, t.Mapping) else {}
            rows.append(
                {
                    "name": _str(row.get("name")),
                    "env": {str(name): str(val) for name, val in env.items()},
                    "why": _str(row.get("why")),
                    "sources": [str(source) for source in row.get("sources") or [] if isinstance(source, str)],
                    "because": _str(row.get("because")),
                }
            )
    return rows


def _kernel_workarounds(value: t.Any, host: str) -> tuple[dict[str, t.Any] | None, list[str]]:
    """The vllm_serve role's record of the GB10 workarounds (its file's content, base64 as slurp returns it, or null
    when absent) as (what was applied and skipped, and why; None when absent or unreadable), with a note when unreadable."""
    record, problem = _file_json(value, f"nodes.{host}.kernel_workarounds")
    if problem is not None:
        return None, [f"the GB10 workarounds record could not be read: {problem}"]
    if record is None:
        return None, []
    if not isinstance(record, t.Mapping):
        return None, [f"the GB10 workarounds record is not a JSON object but {_json_type(record)}"]
    return {
        "model": _str(record.get("model")),
        "note": _str(record.get("note")),
        "applied": _workaround_rows(record.get("applied")),
        "skipped": _workaround_rows(record.get("skipped")),
    }, []


def check_nodes(nodes: t.Mapping[str, t.Any]) -> tuple[dict[str, dict[str, t.Any]], list[dict[str, t.Any]]]:
    """The nodes, sorted by name, and every node's health events; raises naming the host and key when one is malformed."""
    if not nodes:
        raise StatusReportError("nodes is empty: give every host's role, addresses, versions, units and model")
    checked: dict[str, dict[str, t.Any]] = {}
    events: list[dict[str, t.Any]] = []
    for host in sorted(nodes, key=str):
        name = str(host)
        node = _mapping(nodes[host], f"nodes.{name}") or {}
        role = node.get("role")
        if role is not None and role not in ROLES:
            raise StatusReportError(f"nodes.{name}.role must be one of {', '.join(ROLES)} (or null when unknown), not {role!r}")
        units, node_events, unit_notes = _units(node.get("units"), name)
        workarounds, workaround_notes = _kernel_workarounds(node.get("kernel_workarounds"), name)
        events += node_events
        checked[name] = {
            "role": role,
            "fabric_ip": _str(node.get("fabric_ip")),
            "management_address": _str(node.get("management_address")),
            "versions": _versions(node.get("versions"), name),
            "units": units,
            "model": _model(node.get("model"), name),
            "kernel_workarounds": workarounds,
            "notes": unit_notes + workaround_notes + _strings(node.get("errors"), f"nodes.{name}.errors"),
        }
    return checked, events


def sorted_events(events: t.Iterable[dict[str, t.Any]]) -> list[dict[str, t.Any]]:
    """Newest first; entries of the same time by host, unit and message, so that the order is always the same."""
    ordered = sorted(events, key=lambda event: (str(event.get("host")), str(event.get("unit")), str(event.get("message"))))
    return sorted(ordered, key=lambda event: -(_number(event.get("time_epoch")) or 0))


def check_ray(ray: t.Mapping[str, t.Any] | None) -> dict[str, t.Any] | None:
    """The Ray cluster: what ray_cluster_info said (or why it could not), nodes head first then by IP; None: not asked."""
    if ray is None:
        return None
    ray = _mapping(ray, "ray") or {}
    nodes = []
    for index, node in enumerate(_list(ray.get("nodes"), "ray.nodes")):
        if not isinstance(node, t.Mapping):
            raise StatusReportError(f"ray.nodes[{index}] must be a node of sparkops.inference.ray_cluster_info (a dictionary)")
        nodes.append({key: node.get(key) for key in RAY_NODE_KEYS})
    nodes.sort(key=lambda node: (node["is_head"] is not True, node["alive"] is not True, str(node["ip"])))
    return {
        "address": _str(ray.get("address")),
        "ready": _bool(ray.get("ready")),
        "ray_version": _str(ray.get("ray_version")),
        "alive_nodes": _number(ray.get("alive_nodes")),
        "total_gpus": _number(ray.get("total_gpus")),
        "nodes": nodes,
        "missing": _strings(ray.get("missing"), "ray.missing"),
        "error": _str(ray.get("error")),
    }


def check_endpoint(endpoint: t.Mapping[str, t.Any] | None) -> dict[str, t.Any] | None:
    """The endpoint's probe, its sample cut to SAMPLE_CHARS; None: not asked."""
    if endpoint is None:
        return None
    endpoint = _mapping(endpoint, "endpoint") or {}
    unknown = sorted(set(map(str, endpoint)) - set(ENDPOINT_KEYS))
    if unknown:
        raise StatusReportError(f"endpoint has unknown keys {', '.join(unknown)}: it holds {', '.join(ENDPOINT_KEYS)}")
    sample = _str(endpoint.get("sample"))
    source = _str(endpoint.get("sample_source"))
    if source is not None and source not in SAMPLE_SOURCES:
        raise StatusReportError(f"endpoint.sample_source must be one of {', '.join(SAMPLE_SOURCES)} or null, not {source!r}")
    latency = _number(endpoint.get("latency_s"))
    return {
        "url": _str(endpoint.get("url")),
        "model": _str(endpoint.get("model")),
        "ready": endpoint.get("ready") is True,
        "state": _str(endpoint.get("state")),
        "latency_s": None if latency is None else round(float(latency), 3),
        "sample": None if sample is None else sample[:SAMPLE_CHARS],
        "sample_source": source,
        "finish_reason": _str(endpoint.get("finish_reason")),
        "completion_tokens": _number(endpoint.get("completion_tokens")),
        "error": _str(endpoint.get("error")),
    }


def _json_type(value: t.Any) -> str:
    return JSON_TYPES.get(type(value), "something else")


def _finite(value: t.Any) -> float | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def _whole(value: t.Any, minimum: int) -> int | None:
    number = _finite(value)
    return int(number) if number is not None and number.is_integer() and number >= minimum else None


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    try:
        return iso_utc(epoch)
    except (OverflowError, OSError, ValueError):  # not a time datetime can hold
        return None


def _file_json(value: t.Any, where: str) -> tuple[t.Any, str | None]:
    """A file's content as slurp returns it (base64) parsed as JSON: (the value, None); (None, None) when the file is
    absent (null); (None, why) when it cannot be read as JSON. Raises when the option is not a string or null."""
    if value is None:
        return None, None
    if not isinstance(value, str):
        raise StatusReportError(f"{where} must be the file's content in base64 (as ansible.builtin.slurp returns it) or null, not {_json_type(value)}")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None, "not base64 (the file's content as ansible.builtin.slurp returns it)"
    if not raw.strip():
        return None, "empty"
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except RecursionError:
        return None, "not JSON (nested too deep)"
    except ValueError as exc:
        return None, f"not JSON ({exc})"


def _liveness_unit(nodes: t.Mapping[str, t.Mapping[str, t.Any]], name: str) -> tuple[dict[str, t.Any] | None, bool]:
    """The head's unit ``name`` (None when not there) and whether the head's units were read."""
    heads = [host for host in sorted(nodes) if nodes[host]["role"] == "head"]
    units = nodes[heads[0]]["units"] if heads else None
    if units is None:
        return None, False
    for unit in units:
        if unit.get("unit") == name and unit.get("load_state") != "not-found":
            return {key: unit.get(key) for key in LIVENESS_UNIT_KEYS}, True
    return None, True


def _liveness_settings(raw: t.Any) -> tuple[dict[str, t.Any] | None, str | None]:
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        return None, f"not a JSON object but {_json_type(raw)}"
    interval, wedge = _finite(raw.get("interval_s")), _finite(raw.get("wedge_after_s"))
    return {
        "interval_s": interval if interval is not None and interval > 0 else None,
        "failures": _whole(raw.get("failures"), 1),
        "max_restarts_per_hour": _whole(raw.get("max_restarts_per_hour"), 1),
        "wedge_after_s": wedge if wedge is not None and wedge > 0 else None,
    }, None


def _last_probe(raw: t.Any) -> dict[str, t.Any] | None:
    """None: no probe yet (an empty or missing last_probe); every key null when it is not an object."""
    if raw is None or raw == {}:
        return None
    probe = raw if isinstance(raw, dict) else {}
    at = _finite(probe.get("at"))
    time = _iso(at)
    message = _str(probe.get("message")) if isinstance(probe.get("message"), str) else None
    if message is not None and len(message) > PROBE_MESSAGE_CHARS:
        message = message[: PROBE_MESSAGE_CHARS - 1] + "…"
    return {
        "at": at if time else None,
        "time": time,
        "ok": _bool(probe.get("ok")),
        "state": _str(probe.get("state")) if isinstance(probe.get("state"), str) else None,
        "message": message,
    }


def _liveness_state(raw: t.Any, now: float | None) -> tuple[dict[str, t.Any] | None, str | None]:
    """The state file (_serve_liveness.State.as_dict): a key of the wrong type is null (unknown); the restarts are
    those of the hour before ``now`` (all of them when ``now`` is unknown), oldest first."""
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        return None, f"not a JSON object but {_json_type(raw)}"
    listed = raw.get("restarts")
    if listed is None:
        listed = []
    times = [_finite(at) for at in listed] if isinstance(listed, list) else [None]
    restarts: list[dict[str, t.Any]] | None = None
    if None not in times and all(_iso(at) for at in times):
        # The hour before now; one later than an hour after now (the head's clock ahead of this one's) is garbage.
        recent = sorted(at for at in times if at is not None and (now is None or -HOUR < now - at < HOUR))
        restarts = [{"at": at, "time": _iso(at)} for at in recent]
    gave_up = raw.get("gave_up_invocation")
    failures = raw.get("failures")
    progress_at = _finite(raw.get("progress_at"))
    return {
        "failures": _whole(0 if failures is None else failures, 0),
        "restarts": restarts,
        "gave_up": bool(gave_up) if gave_up is None or isinstance(gave_up, str) else None,
        "last_probe": _last_probe(raw.get("last_probe")),
        # When vLLM's token counters last moved with requests running (the probe's wedge clock); null: none running.
        "progress_at": progress_at if _iso(progress_at) else None,
    }, None


def _liveness_file(
    liveness: t.Mapping[str, t.Any], name: str, parse: t.Callable[[t.Any], tuple[dict[str, t.Any] | None, str | None]]
) -> tuple[dict[str, t.Any] | None, str | None]:
    """The file ``name`` (settings or state) checked: (what it holds, None), (None, None) when absent, (None, why) when
    the playbook could not read it (``<name>_error``) or it is not JSON of the right shape."""
    raw, why = _file_json(liveness.get(name), f"liveness.{name}")
    error = liveness.get(f"{name}_error")
    if error is not None and not isinstance(error, str):
        raise StatusReportError(f"liveness.{name}_error must be a string (why the file could not be read) or null")
    if error:
        return None, error
    if why is not None:
        return None, why
    return parse(raw)


def check_liveness(liveness: t.Mapping[str, t.Any] | None, nodes: t.Mapping[str, t.Mapping[str, t.Any]], now: float | None) -> dict[str, t.Any] | None:
    """The head's liveness probe: installed or not, its timer (from the head's units), its settings and its state;
    a file that cannot be read is unreadable (why), a key of the wrong type unknown (null). None: not asked."""
    if liveness is None:
        return None
    liveness = _mapping(liveness, "liveness") or {}
    unknown = sorted(set(map(str, liveness)) - set(LIVENESS_KEYS))
    if unknown:
        raise StatusReportError(f"liveness has unknown keys {', '.join(unknown)}: it holds {', '.join(LIVENESS_KEYS)}")
    settings, settings_error = _liveness_file(liveness, "settings", _liveness_settings)
    state, state_error = _liveness_file(liveness, "state", lambda raw: _liveness_state(raw, now))
    timer, units_read = _liveness_unit(nodes, LIVENESS_TIMER)
    service, _read = _liveness_unit(nodes, LIVENESS_SERVICE)
    installed = settings is not None or settings_error is not None or timer is not None
    return {
        "installed": installed,
        "timer": timer,
        "timer_active": (timer is not None and timer["active_state"] == "active") if units_read else None,
        "service": service,
        "settings": settings,
        "settings_error": settings_error,
        "state": state,
        "state_error": state_error,
    }


def model_summary(model: t.Mapping[str, t.Any] | None, nodes: t.Mapping[str, t.Mapping[str, t.Any]]) -> dict[str, t.Any]:
    """repo, revision, the head's commit, and whether every node has that commit and a complete snapshot."""
    model = _mapping(model, "model") or {}
    unknown = sorted(set(map(str, model)) - {"repo", "revision"})
    if unknown:
        raise StatusReportError(f"model has unknown keys {', '.join(unknown)}: it holds repo and revision")
    checks = {host: node["model"] for host, node in nodes.items()}
    commits = {host: (check or {}).get("commit") for host, check in checks.items()}
    heads = [host for host in sorted(nodes) if nodes[host]["role"] == "head"]
    commit = commits[heads[0]] if heads else None
    return {
        "repo": _str(model.get("repo")),
        "revision": _str(model.get("revision")),
        "commit": commit,
        "same_on_every_node": commit is not None and all(value == commit for value in commits.values()),
        "complete_on_every_node": all(check is not None and check.get("complete") is True for check in checks.values()),
    }


BACKENDS = ("mp", "ray")


def check_backend(backend: t.Any) -> str | None:
    """The cluster's vLLM backend (the cluster plan's): mp, ray, or None (not given)."""
    if backend is not None and backend not in BACKENDS:
        raise StatusReportError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return t.cast("str | None", backend)


def build_document(
    nodes: t.Mapping[str, t.Any],
    ray: t.Mapping[str, t.Any] | None = None,
    endpoint: t.Mapping[str, t.Any] | None = None,
    model: t.Mapping[str, t.Any] | None = None,
    generated_at: str | None = None,
    liveness: t.Mapping[str, t.Any] | None = None,
    backend: str | None = None,
) -> dict[str, t.Any]:
    """The JSON document (see docs/status.md): schema_version, generated_at, backend, nodes, ray, endpoint, liveness,
    model, health_events. With the mp backend there is no Ray cluster: ray is null whatever was given."""
    backend = check_backend(backend)
    checked, events = check_nodes(nodes)
    generated_at = generated_at or utc_now()
    document = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at,
        "backend": backend,
        "nodes": checked,
        "ray": None if backend == "mp" else check_ray(ray),
        "endpoint": check_endpoint(endpoint),
        "liveness": check_liveness(liveness, checked, _epoch(generated_at)),
        "model": model_summary(model, checked),
        "health_events": sorted_events(events),
    }
    # What is written is JSON: compare and render the JSON form (tuples as lists, keys as strings).
    return t.cast("dict[str, t.Any]", json.loads(json.dumps(document, default=str)))


# ---------------------------------------------------------------------------------------------------------------
# Markdown


def _cell(value: t.Any) -> str:
    if value is None or value == "":
        return MISSING
    return str(value).replace("|", "\\|").replace("\n", " ")


def ordered_hosts(nodes: t.Mapping[str, t.Mapping[str, t.Any]]) -> list[str]:
    """The head(s) first, then the workers, then nodes of unknown role, each by name."""
    rank = {"head": 0, "worker": 1}
    return sorted(nodes, key=lambda host: (rank.get(str(nodes[host]["role"]), 2), host))


def _epoch(iso: t.Any) -> float | None:
    if not isinstance(iso, str):
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def duration(seconds: float) -> str:
    """``3d 4h``, ``4h 12m``, ``12m 5s`` or ``5s``."""
    total = max(int(seconds), 0)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def _since(unit: t.Mapping[str, t.Any], now: float | None) -> str:
    since = unit.get("since")
    if not since:
        return MISSING
    epoch = _number(unit.get("since_epoch"))
    if now is None or epoch is None:
        return str(since)
    return f"{since} ({duration(now - epoch)})"


def between_timer_runs(unit: t.Mapping[str, t.Any], units: t.Sequence[t.Mapping[str, t.Any]]) -> bool:
    """A service its timer runs (the liveness probe's), between two runs: inactive, its last run a success, and the
    timer of its name active on the node. Not down."""
    name = str(unit.get("unit") or "")
    if not name.endswith(".service") or unit.get("active_state") != "inactive" or unit.get("result") != "success":
        return False
    timer = name.removesuffix(".service") + ".timer"
    return any(other.get("unit") == timer and other.get("active_state") == "active" for other in units)


def _state(unit: t.Mapping[str, t.Any], units: t.Sequence[t.Mapping[str, t.Any]] = ()) -> str:
    active, sub = unit.get("active_state"), unit.get("sub_state")
    text = f"{active or MISSING} ({sub})" if sub else str(active or MISSING)
    return text if active in ("active", "reloading") or between_timer_runs(unit, units) else f"**{text}**"


def _unit_tally(units: t.Sequence[t.Mapping[str, t.Any]], active: int, idle: int) -> str:
    """``4 of 4 active``, ``, 1 run by its timer`` added for services between their timer's runs (not counted)."""
    return f"{active} of {len(units) - idle} active" + (f", {idle} run by {'its timer' if idle == 1 else 'their timers'}" if idle else "")


def _short(commit: t.Any) -> str:
    return f"`{str(commit)[:12]}`" if commit else MISSING


def _count(node: t.Mapping[str, t.Any]) -> str:
    units = node["units"]
    if units is None:
        return "not read"
    if not units:
        return "none found" + (" (see the notes)" if node["notes"] else "")
    active = sum(1 for unit in units if unit.get("active_state") == "active")
    return _unit_tally(units, active, sum(1 for unit in units if between_timer_runs(unit, units)))


def _yes_no(value: t.Any, yes: str, no: str, unknown: str = MISSING) -> str:
    """``yes`` for True, ``no`` for False, ``unknown`` for anything else (null)."""
    return yes if value is True else no if value is False else unknown


def _model_cell(check: t.Mapping[str, t.Any] | None) -> str:
    if check is None:
        return "not checked"
    state = _yes_no(check.get("complete"), "complete", "**incomplete**")
    return f"{_short(check.get('commit'))}, {state}"


def node_lines(nodes: t.Mapping[str, t.Mapping[str, t.Any]], hosts: list[str]) -> list[str]:
    lines = ["| Host | Role | Management address | Fabric IP | Units | Model snapshot |", "|---|---|---|---|---|---|"]
    for host in hosts:
        node = nodes[host]
        cells = [host, node["role"] or "unknown", node["management_address"], node["fabric_ip"], _count(node)]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + f" | {_model_cell(node['model'])} |")
    return lines


def unit_lines(node: t.Mapping[str, t.Any], now: float | None) -> list[str]:
    units = node["units"]
    if units is None:
        return ["Not read."]
    if not units:
        return ["No unit found; some could not be read (see the notes)."] if node["notes"] else ["No unit found."]
    lines = ["| Unit | State | Enabled | Since (for) | Restarts | Main PID | Result |", "|---|---|---|---|---:|---:|---|"]
    for unit in units:
        cells = [f"`{unit['unit']}`", _state(unit, units), _cell(unit.get("enabled")), _cell(_since(unit, now))]
        cells += [_cell(unit.get("restarts")), _cell(unit.get("main_pid")), _cell(unit.get("result"))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _gpus(value: t.Any) -> str:
    number = _number(value)
    if number is None:
        return MISSING
    return str(int(number)) if float(number).is_integer() else str(number)


# What the report says of Ray with the mp backend.
NO_RAY_CLUSTER = "not asked: the backend is mp (vllm_serve_backend), which runs no Ray cluster"


def ray_lines(ray: t.Mapping[str, t.Any] | None, backend: str | None = None) -> list[str]:
    if backend == "mp":
        return [NO_RAY_CLUSTER[:1].upper() + NO_RAY_CLUSTER[1:] + "."]
    if ray is None:
        return ["Not asked."]
    paragraphs: list[list[str]] = []
    if ray["nodes"] or ray["alive_nodes"] is not None:
        ready = _yes_no(ray["ready"], "Ready", "**Not ready**", "Readiness unknown")
        paragraphs.append(
            [
                f"{ready}: {_cell(ray['alive_nodes'])} node(s) alive, {_gpus(ray['total_gpus'])} GPU(s), "
                f"Ray {_cell(ray['ray_version'])} at {_cell(ray['address'])}."
            ]
        )
    if ray["missing"]:
        paragraphs.append(["Missing (not alive, or too few GPUs): " + ", ".join(_cell(host) for host in ray["missing"]) + "."])
    if ray["error"]:
        paragraphs.append([f"**Error**: {_cell(ray['error'])}"])
    if ray["nodes"]:
        table = ["| IP | Host name | Head | State | GPUs |", "|---|---|---|---|---:|"]
        for node in ray["nodes"]:
            cells = [node["ip"], node["hostname"], "yes" if node["is_head"] else "no", node["state"] or ("ALIVE" if node["alive"] else None)]
            table.append("| " + " | ".join(_cell(cell) for cell in cells) + f" | {_gpus(node['gpus'])} |")
        paragraphs.append(table)
    if not paragraphs:
        return ["No answer."]
    lines = paragraphs[0]
    for paragraph in paragraphs[1:]:
        lines = [*lines, "", *paragraph]
    return lines


def _verification(check: t.Mapping[str, t.Any]) -> str:
    mode = check.get("mode") or "quick"
    when = check.get("checked_at")
    return f"verified now ({mode} check, {when})" if when else f"verified now ({mode} check)"


def model_lines(document: t.Mapping[str, t.Any], hosts: list[str]) -> list[str]:
    model = document["model"]
    nodes = document["nodes"]
    where = f"`{model['repo']}` at revision `{model['revision'] or 'main'}`" if model["repo"] else "The model"
    found = f"commit `{model['commit']}` on the head" if model["commit"] else "**no commit found on the head**"
    lines = [f"{where}: {found}."]
    same = "yes" if model["same_on_every_node"] else "**no**"
    complete = "yes" if model["complete_on_every_node"] else "**no**"
    lines += ["", f"Same commit on every node: {same}. Complete on every node: {complete}.", ""]
    lines += ["| Host | Commit | Complete | Verification | Problems |", "|---|---|---|---|---|"]
    for host in hosts:
        check = nodes[host]["model"]
        if check is None:
            lines.append(f"| {_cell(host)} | {MISSING} | {MISSING} | not checked | {MISSING} |")
            continue
        complete_cell = _yes_no(check["complete"], "yes", "**no**")
        problems = check["problems"]
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        cells = [_cell(host), _short(check["commit"]), complete_cell, _cell(_verification(check)), _cell(shown or "none")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def endpoint_lines(endpoint: t.Mapping[str, t.Any] | None) -> list[str]:
    if endpoint is None:
        return ["Not asked."]
    latency = endpoint["latency_s"]
    timing = f" in {latency:.2f} s" if isinstance(latency, (int, float)) else ""
    if endpoint["ready"]:
        lines = [f"**Ready**: `{_cell(endpoint['url'])}` serves `{_cell(endpoint['model'])}`; the sample completion answered{timing}."]
    else:
        lines = [f"**Not ready** (`{_cell(endpoint['state'])}`): `{_cell(endpoint['url'])}`, model `{_cell(endpoint['model'])}`{timing}."]
        if endpoint["error"]:
            lines += ["", f"Why: {_cell(endpoint['error'])}"]
    details = ""
    if endpoint["finish_reason"] or endpoint["completion_tokens"] is not None:
        details = f" (finish_reason {_cell(endpoint['finish_reason'])}, {_cell(endpoint['completion_tokens'])} completion token(s))"
    if endpoint["sample"]:
        lines += ["", f"Sample{details}:", ""]
        lines += ["> " + line if line else ">" for line in endpoint["sample"].splitlines()]
        if endpoint["sample_source"] == "reasoning":
            lines += [
                "",
                "The text is the model's reasoning: its content was empty, as a reasoning model's is when the tokens run out while it thinks. That is healthy.",
            ]
    elif details:
        lines += ["", f"No sample text{details}."]
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def gave_up_text(liveness: t.Mapping[str, t.Any]) -> str:
    """The loud line when the probe stopped acting (its max restarts in an hour reached)."""
    settings, state = liveness["settings"] or {}, liveness["state"] or {}
    most = settings.get("max_restarts_per_hour")
    if most is None and state.get("restarts"):
        most = len(state["restarts"])
    done = _plural(most, "restart") if isinstance(most, int) else "its max restarts"
    return f"stopped acting after {done} in an hour: restart vLLM or rerun --tags serve"


def _ago(epoch: t.Any, now: float | None) -> str:
    """``2026-01-31T13:59:48Z (12s ago)``; the time alone when ``now`` is unknown."""
    at = _finite(epoch)
    when = _iso(at) or MISSING
    return f"{when} ({duration(now - at)} ago)" if at is not None and now is not None else when


def _unit_text(unit: t.Mapping[str, t.Any]) -> str:
    active, sub = unit.get("active_state") or "unknown", unit.get("sub_state")
    return f"{active} ({sub})" if sub else str(active)


def _stalled(state: t.Mapping[str, t.Any] | None) -> str | None:
    """``stalled`` or ``wedged`` when the last probe read vLLM's counters frozen with requests running, else None."""
    probe = None if state is None else state["last_probe"]
    if probe is None or probe["state"] not in ("stalled", "wedged") or state is None or state.get("progress_at") is None:
        return None
    return str(probe["state"])


def _probe_text(probe: t.Mapping[str, t.Any] | None, now: float | None) -> str:
    if probe is None:
        return "none yet (vLLM not active since the probe was installed, or its first run is to come)"
    if probe["at"] is None and probe["ok"] is None:
        return "unknown (its record is garbled)"
    verdict = _yes_no(probe["ok"], "ok", "**failed**", "unknown")
    state = f" (`{_cell(probe['state'])}`)" if probe["state"] else ""
    message = f": {_cell(probe['message'])}" if probe["message"] else ""
    return f"{_ago(probe['at'], now)}, {verdict}{state}{message}"


def liveness_lines(liveness: t.Mapping[str, t.Any] | None, now: float | None) -> list[str]:
    """The liveness probe: installed, its timer, the last probe, failed probes in a row, restarts in the last hour."""
    if liveness is None:
        return ["Not asked."]
    if not liveness["installed"]:
        return [
            "**Not installed** on the head (no settings file, no timer): nothing restarts vLLM when its engine stops answering. "
            "The vllm_serve role installs it (`vllm_serve_liveness`, true by default)."
        ]
    settings, state = liveness["settings"], liveness["state"]
    lines: list[str] = []
    if state is not None and state["gave_up"]:
        loud = gave_up_text(liveness)
        lines += [f"**{loud[0].upper()}{loud[1:]}.**", ""]
    timer = liveness["timer"]
    if timer is None:
        where = "not among the head's units" if liveness["timer_active"] is not None else "unknown (the head's units were not read)"
        timer_text = f"`{LIVENESS_TIMER}` {where}"
    else:
        shown = _unit_text(timer)
        timer_text = f"`{timer['unit']}` " + (shown if timer["active_state"] == "active" else f"**{shown}**: no probe runs")
        timer_text += f", {timer['enabled']}" if timer.get("enabled") else ""
    interval = (settings or {}).get("interval_s")
    lines.append(f"- Timer: {timer_text}" + (f"; a probe every {interval:g} s." if interval is not None else "."))
    service = liveness["service"]
    if service is not None and service.get("result") not in (None, "success"):
        lines.append(f"- Its last run **failed** (`{_cell(service['result'])}`): see `journalctl -u {LIVENESS_SERVICE}`.")
    if liveness["settings_error"]:
        lines.append(f"- Settings: **unreadable** ({_cell(liveness['settings_error'])}).")
    if liveness["state_error"]:
        lines.append(f"- State: **unreadable** ({_cell(liveness['state_error'])}).")
        return lines
    if state is None:
        lines.append("- State: none yet (the probe has not run).")
        return lines
    lines.append(f"- Last probe: {_probe_text(state['last_probe'], now)}.")
    stalled = _stalled(state)
    if stalled:
        wedge = (settings or {}).get("wedge_after_s")
        lines.append(
            f"- Generation: **{stalled}**: vLLM's token counters have not moved since {_ago(state['progress_at'], now)} with "
            "requests running" + (f"; a wedge after {wedge:g} s (`vllm_serve_liveness_wedge_after_s`), then the group restarts." if wedge else ".")
        )
    failures = "unknown" if state["failures"] is None else str(state["failures"])
    limit = (settings or {}).get("failures")
    lines.append(f"- Failed probes in a row: {failures}" + (f" of {limit} (then it restarts vLLM)." if limit is not None else "."))
    most = (settings or {}).get("max_restarts_per_hour")
    restarts = state["restarts"]
    count = "unknown" if restarts is None else str(len(restarts))
    text = f"- Restarts in the last hour: {count}" + (f" of at most {most}" if most is not None else "")
    if restarts:
        text += ": " + ", ".join(_ago(restart["at"], now) for restart in restarts)
    lines.append(text + ".")
    return lines


def liveness_headline(liveness: t.Mapping[str, t.Any] | None, now: float | None) -> str:
    if liveness is None:
        return "not asked"
    if not liveness["installed"]:
        return "**not installed**"
    state = liveness["state"]
    if liveness["state_error"]:
        return "**state unreadable**"
    if state is not None and state["gave_up"]:
        return f"**{gave_up_text(liveness)}**"
    parts = ["**timer not active**"] if liveness["timer_active"] is False else []
    probe = None if state is None else state["last_probe"]
    if probe is None:
        parts.append("no probe yet")
    else:
        at = _finite(probe["at"])
        age = f" {duration(now - at)} ago" if at is not None and now is not None else ""
        if probe["ok"] is True:
            parts.append(f"last probe ok{age}" + (", **generation stalled**" if _stalled(state) else ""))
        else:
            failed = "**last probe failed**" if probe["ok"] is False else "last probe unknown"
            parts.append(f"{failed}{age}" + (f" ({_cell(probe['state'])})" if probe["state"] else ""))
            limit = (liveness["settings"] or {}).get("failures")
            if state["failures"] is not None:
                parts.append(f"{state['failures']}" + (f" of {limit}" if limit is not None else "") + " in a row")
    restarts = None if state is None else state["restarts"]
    if restarts:
        parts.append(f"{len(restarts)} restart(s) in the last hour")
    return ", ".join(parts)


def event_lines(events: list[t.Mapping[str, t.Any]]) -> list[str]:
    if not events:
        return ["None (no journal entry at priority warning or worse)."]
    lines = ["| Time | Host | Unit | Priority | Message |", "|---|---|---|---|---|"]
    for event in events:
        cells = [event.get("time"), event.get("host"), event.get("unit"), event.get("priority"), event.get("message")]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


def headline(document: t.Mapping[str, t.Any]) -> list[str]:
    """The summary at the top: the endpoint, the liveness probe, the units, the model, Ray."""
    nodes = document["nodes"]
    endpoint = document["endpoint"]
    if endpoint is None:
        serving = "not asked"
    elif endpoint["ready"]:
        serving = "**ready**" + (f" ({endpoint['latency_s']:.2f} s)" if isinstance(endpoint["latency_s"], (int, float)) else "")
    else:
        serving = f"**not ready** ({_cell(endpoint['state'])})"
    units = [unit for node in nodes.values() for unit in node["units"] or []]
    idle = [unit for node in nodes.values() for unit in node["units"] or [] if between_timer_runs(unit, node["units"])]
    down = [unit for unit in units if unit.get("active_state") not in ("active", "reloading")]
    unread = [host for host, node in sorted(nodes.items()) if node["units"] is None]
    unit_text = _unit_tally(units, len(units) - len(down), len(idle))
    if unread:
        unit_text += f", not read on {', '.join(unread)}"
    model = document["model"]
    if model["commit"] is None:
        model_text = "**no commit found on the head**"
    else:
        model_text = f"{_short(model['commit'])}, " + ("same on every node" if model["same_on_every_node"] else "**not the same on every node**")
    if not model["complete_on_every_node"]:
        model_text += ", **not complete on every node**"
    ray = document["ray"]
    if document.get("backend") == "mp":
        ray_text = NO_RAY_CLUSTER
    elif ray is None:
        ray_text = "not asked"
    elif ray["error"] and not ray["nodes"]:
        error = ray["error"]
        ray_text = _cell(error) if error.startswith("not asked") else f"**no answer**: {_cell(error[:120])}" + ("…" if len(error) > 120 else "")
    else:
        ray_text = f"{_cell(ray['alive_nodes'])} node(s) alive, {_gpus(ray['total_gpus'])} GPU(s)" + ("" if ray["ready"] else ", **not ready**")
    liveness = liveness_headline(document.get("liveness"), _epoch(document["generated_at"]))
    return [f"- Endpoint: {serving}", f"- Liveness: {liveness}", f"- Units: {unit_text}", f"- Model: {model_text}", f"- Ray: {ray_text}"]


def _workaround_text(row: t.Mapping[str, t.Any]) -> str:
    env = ", ".join(f"`{name}={value}`" for name, value in row["env"].items()) or MISSING
    sources = f" ({', '.join(row['sources'])})" if row["sources"] else ""
    return f"{_cell(row['name'])}: {env}: {_cell(row['why'])}{sources}"


def workaround_lines(nodes: t.Mapping[str, t.Mapping[str, t.Any]], hosts: list[str]) -> list[str]:
    """Each node's GB10 workarounds (the vllm_serve role's record): applied and skipped, and why."""
    lines: list[str] = []
    for host in hosts:
        record = nodes[host].get("kernel_workarounds")
        if record is None:
            continue
        lines.append(f"- {host}: {_cell(record['note'])}")
        lines += [f"  - applied {_workaround_text(row)}" for row in record["applied"]]
        lines += [f"  - skipped ({_cell(row['because'])}) {_workaround_text(row)}" for row in record["skipped"]]
    return lines or ["No record (vLLM not deployed by this collection's vllm_serve role, or before it kept one)."]


def render_markdown(document: t.Mapping[str, t.Any]) -> str:
    """The human report: summary, nodes, versions, units, Ray, model, engine workarounds, endpoint, liveness probe, health
    events, notes."""
    nodes: t.Mapping[str, t.Mapping[str, t.Any]] = document["nodes"]
    hosts = ordered_hosts(nodes)
    heads = [host for host in hosts if nodes[host]["role"] == "head"]
    now = _epoch(document["generated_at"])
    lines = [
        "# Cluster status",
        "",
        f"{len(hosts)} node(s), head {', '.join(heads) or 'unknown'}; generated {document['generated_at']}.",
        "",
        *headline(document),
        "",
        "## Nodes",
        "",
        *node_lines(nodes, hosts),
        "",
        "## Versions",
        "",
    ]
    if any(nodes[host]["versions"] is not None for host in hosts):
        shaped = {host: {"role": nodes[host]["role"], "recon": {"versions": nodes[host]["versions"] or {}}} for host in hosts}
        lines += ["A value that differs from the head's is marked **(differs)**.", "", *version_rows(shaped, hosts)]
    else:
        lines.append("Not read.")
    lines += ["", "## Units", ""]
    for host in hosts:
        lines += [f"### {host}", "", *unit_lines(nodes[host], now), ""]
    lines += ["## Ray cluster", "", *ray_lines(document["ray"], document.get("backend")), ""]
    lines += ["## Model", "", *model_lines(document, hosts), ""]
    lines += ["## Engine workarounds (GB10)", "", *workaround_lines(nodes, hosts), ""]
    lines += ["## Endpoint", "", *endpoint_lines(document["endpoint"]), ""]
    lines += ["## Liveness probe", "", *liveness_lines(document.get("liveness"), now), ""]
    lines += ["## Last health events", "", "Newest first.", "", *event_lines(document["health_events"]), ""]
    lines += ["## Notes", ""]
    notes = [f"- {host}: {_cell(note)}" for host in hosts for note in nodes[host]["notes"]]
    lines += notes or ["None."]
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# The files


def plan(document: dict[str, t.Any], json_path: str, markdown_path: str) -> Plan:
    """What to write at ``json_path`` and ``markdown_path``; only ``generated_at`` differing is no change."""
    return plan_files(document, json_path, markdown_path, render_markdown)
