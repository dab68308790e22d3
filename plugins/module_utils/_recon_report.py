# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reconnaissance report of a cluster: every node's node_recon result side by side, as JSON and Markdown.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`build_document` checks the nodes (inventory name -> role, fabric address, ``recon`` of
sparkops.inference.node_recon) and puts them with the drift and fit verdicts into the JSON document
(:data:`SCHEMA_VERSION`, described in docs/recon.md); :func:`render_json` and :func:`render_markdown` turn it into
the files' bytes. :func:`plan` keeps the old ``generated_at`` when nothing else changed, so that a second run with
the same facts writes nothing.
"""

from __future__ import annotations

import json
import typing as t

from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_report import NAME_PATTERN

# The files' logic (render_json, keep_timestamp, plan) is in _report_files, shared with status_report; the names stay
# importable from here (__all__).
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import Plan, keep_timestamp, render_json, utc_now
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import plan as plan_files
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS

__all__ = [
    "DRIFT_KEYS",
    "GIB",
    "MISSING",
    "ROLES",
    "SCHEMA_VERSION",
    "Plan",
    "ReconReportError",
    "build_document",
    "check_basename",
    "check_drift",
    "check_nodes",
    "gib",
    "keep_timestamp",
    "node_row",
    "ordered_hosts",
    "plan",
    "render_json",
    "render_markdown",
    "utc_now",
    "version_rows",
]

SCHEMA_VERSION = 1
ROLES = ("head", "worker")
DRIFT_KEYS = ("problems", "allowed", "unknown")
MISSING = "n/a"
GIB = 1024**3


class ReconReportError(ValueError):
    """Options that cannot be reported; the message names the option (and the host)."""


def check_basename(basename: str) -> None:
    if not NAME_PATTERN.match(basename):
        raise ReconReportError(f"basename {basename!r} must be a file base name: letters, digits, '.', '_' and '-', not starting with '.', '_' or '-'")


def _strings(value: t.Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ReconReportError(f"{where} must be a list of strings")
    return [str(item) for item in value]


def check_nodes(nodes: t.Mapping[str, t.Any]) -> dict[str, dict[str, t.Any]]:
    """The nodes, sorted by name (each: role, fabric_ip, recon); raises naming the host and key when one is malformed."""
    if not nodes:
        raise ReconReportError("nodes is empty: give every host's role, fabric_ip and recon")
    checked: dict[str, dict[str, t.Any]] = {}
    for host in sorted(nodes, key=str):
        node = nodes[host]
        if not isinstance(node, t.Mapping):
            raise ReconReportError(f"nodes.{host} must be a dictionary with role, fabric_ip and recon")
        role = node.get("role")
        if role not in ROLES:
            raise ReconReportError(f"nodes.{host}.role must be one of {', '.join(ROLES)}, not {role!r}")
        recon = node.get("recon")
        if recon is None:
            recon = {}
        if not isinstance(recon, t.Mapping):
            raise ReconReportError(f"nodes.{host}.recon must be the recon dictionary of sparkops.inference.node_recon")
        fabric_ip = node.get("fabric_ip")
        checked[str(host)] = {"role": role, "fabric_ip": None if fabric_ip is None else str(fabric_ip), "recon": dict(recon)}
    return checked


def check_drift(drift: t.Mapping[str, t.Any] | None) -> dict[str, list[str]] | None:
    """``drift`` with its three lists (missing ones empty); None stays None (not checked)."""
    if drift is None:
        return None
    unknown_keys = sorted(set(drift) - set(DRIFT_KEYS))
    if unknown_keys:
        raise ReconReportError(f"drift has unknown keys {', '.join(map(str, unknown_keys))}: it holds {', '.join(DRIFT_KEYS)}")
    return {key: _strings(drift.get(key), f"drift.{key}") for key in DRIFT_KEYS}


def build_document(
    nodes: t.Mapping[str, t.Any],
    drift: t.Mapping[str, t.Any] | None = None,
    fit: t.Mapping[str, t.Any] | None = None,
    generated_at: str | None = None,
) -> dict[str, t.Any]:
    """The JSON document (see docs/recon.md): schema_version, generated_at, nodes, drift, fit."""
    if fit is not None and not isinstance(fit, t.Mapping):
        raise ReconReportError("fit must be a dictionary")
    document = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at or utc_now(),
        "nodes": check_nodes(nodes),
        "drift": check_drift(drift),
        "fit": None if fit is None else dict(fit),
    }
    # What is written is JSON: compare and render the JSON form (tuples as lists, keys as strings).
    return t.cast("dict[str, t.Any]", json.loads(json.dumps(document, default=str)))


# ---------------------------------------------------------------------------------------------------------------
# Markdown


def _cell(value: t.Any) -> str:
    if value is None or value == "":
        return MISSING
    return str(value).replace("|", "\\|").replace("\n", " ")


def gib(value: t.Any) -> str:
    """Bytes as GiB with one decimal; :data:`MISSING` when not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return MISSING
    return f"{value / GIB:.1f}"


def _section(recon: t.Mapping[str, t.Any], key: str) -> t.Mapping[str, t.Any]:
    value = recon.get(key)
    return value if isinstance(value, t.Mapping) else {}


def _list(value: t.Any) -> list[t.Any]:
    return list(value) if isinstance(value, list) else []


def ordered_hosts(nodes: t.Mapping[str, t.Mapping[str, t.Any]]) -> list[str]:
    """The head(s) first, then the workers, each by name."""
    return sorted(nodes, key=lambda host: (nodes[host]["role"] != "head", host))


def _os(recon: t.Mapping[str, t.Any]) -> str:
    os_section = _section(recon, "os")
    if os_section.get("pretty_name"):
        return str(os_section["pretty_name"])
    parts = [str(os_section[key]) for key in ("id", "version_id") if os_section.get(key)]
    return " ".join(parts) or MISSING


def _rdma(fabric: t.Mapping[str, t.Any]) -> str:
    ports = [port for port in _list(fabric.get("rdma_devices")) if isinstance(port, t.Mapping)]
    return ", ".join(f"{port.get('name')} ({port.get('state') or '?'})" for port in ports) or "none"


def _speed(fabric: t.Mapping[str, t.Any]) -> str:
    speed = fabric.get("speed_mbps")
    if isinstance(speed, int) and not isinstance(speed, bool):
        return f"{speed // 1000} Gb/s" if speed >= 1000 and speed % 1000 == 0 else f"{speed} Mb/s"
    return MISSING


def _disk(disk: t.Mapping[str, t.Any]) -> str:
    if not disk:
        return MISSING
    text = f"{gib(disk.get('free_bytes'))} at `{disk.get('path')}`"
    if disk.get("measured_path") and disk.get("measured_path") != disk.get("path"):
        text += f" (measured `{disk['measured_path']}`)"
    return text


def node_row(host: str, node: t.Mapping[str, t.Any]) -> str:
    recon = node["recon"]
    gpu, fabric, memory = _section(recon, "gpu"), _section(recon, "fabric"), _section(recon, "memory")
    cells = [
        host,
        node["role"],
        recon.get("architecture"),
        _os(recon),
        recon.get("kernel"),
        f"{gpu.get('driver') or MISSING} / {gpu.get('cuda') or MISSING}",
        fabric.get("ip") or node.get("fabric_ip"),
        fabric.get("interface") or "none",
        fabric.get("state"),
        _speed(fabric),
        fabric.get("mtu"),
        _rdma(fabric),
        gib(memory.get("total_bytes")),
        gib(memory.get("available_bytes")),
        _disk(_section(recon, "disk")),
    ]
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def version_rows(nodes: t.Mapping[str, t.Mapping[str, t.Any]], hosts: list[str]) -> list[str]:
    """One row a component; a value that differs from the reference (the head's, else the first known) is marked."""
    lines = ["| Component | " + " | ".join(_cell(host) for host in hosts) + " | Same on all |", "|---|" + "---|" * len(hosts) + "---|"]
    for component in COMPONENTS:
        values = {host: _section(nodes[host]["recon"], "versions").get(component) for host in hosts}
        known = [values[host] for host in hosts if values[host] is not None]
        heads = [host for host in hosts if nodes[host]["role"] == "head" and values[host] is not None]
        reference = values[heads[0]] if heads else (known[0] if known else None)
        cells = []
        for host in hosts:
            value = values[host]
            if value is None:
                cells.append(MISSING)
            elif value != reference:
                cells.append(f"**{_cell(value)}** (differs)")
            else:
                cells.append(_cell(value))
        if len(set(map(str, known))) > 1:
            same = "**no**"
        elif len(known) < len(hosts):
            same = "unknown"
        else:
            same = "yes"
        lines.append(f"| {component} | " + " | ".join(cells) + f" | {same} |")
    return lines


def _inference_lines(recon: t.Mapping[str, t.Any]) -> list[str]:
    inference = _section(recon, "inference")
    units = [u for u in _list(inference.get("enabled_units")) if isinstance(u, t.Mapping)]
    containers = [c for c in _list(inference.get("containers")) if isinstance(c, t.Mapping)]
    lines = []
    if units:
        for unit in units:
            flags = ", ".join(flag for flag, on in (("enabled", unit.get("enabled")), ("active", unit.get("active"))) if on) or "neither"
            lines.append(f"- unit `{unit.get('unit')}` ({flags})")
    else:
        lines.append("- no matching systemd unit")
    if containers:
        for container in containers:
            mark = "" if container.get("inference") else ", not an inference stack by name"
            lines.append(f"- container `{container.get('name')}` ({container.get('image')}, {container.get('state')}{mark})")
    else:
        lines.append("- no container")
    return lines


def _memory_lines(recon: t.Mapping[str, t.Any]) -> list[str]:
    memory = _section(recon, "memory")
    lines = []
    for proc in _list(memory.get("top_processes")):
        if isinstance(proc, t.Mapping):
            unit = f" in `{proc['unit']}`" if proc.get("unit") else ""
            lines.append(f"- resident {gib(proc.get('rss_bytes'))} GiB: pid {proc.get('pid')} `{proc.get('name')}`{unit}")
    for proc in _list(memory.get("gpu_processes")):
        if isinstance(proc, t.Mapping):
            used = proc.get("used_mib")
            size = f"{used / 1024:.1f} GiB" if isinstance(used, int) and not isinstance(used, bool) else "unknown size"
            where = "".join(f" in `{proc[key]}`" for key in ("unit", "container_name") if proc.get(key))
            lines.append(f"- GPU {size}: pid {proc.get('pid')} `{proc.get('name')}`{where}")
    return lines or ["- nothing reported"]


def _drift_lines(drift: t.Mapping[str, t.Any] | None) -> list[str]:
    if drift is None:
        return ["Not checked."]
    items = [
        f"- {title}: {_cell(item)}" for key, title in (("problems", "Problem"), ("allowed", "Allowed"), ("unknown", "Not compared")) for item in drift[key]
    ]
    verdict = "Drift found:" if drift["problems"] else "No drift: every compared component matches the head's."
    return [verdict, "", *items] if items else [verdict]


def _number(value: t.Any) -> str:
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value, sort_keys=True) + "`"
    return _cell(value)


def _fit_lines(fit: t.Mapping[str, t.Any] | None) -> list[str]:
    if fit is None:
        return ["Not checked."]
    fits = fit.get("fits")
    lines = [f"Fits: {'yes' if fits is True else '**no**' if fits is False else MISSING}"]
    items = [f"- Problem: {_cell(item)}" for item in _list(fit.get("problems"))]
    items += [f"- Warning: {_cell(item)}" for item in _list(fit.get("warnings"))]
    if items:
        lines += ["", *items]
    numbers = fit.get("numbers")
    if isinstance(numbers, t.Mapping) and numbers:
        lines += ["", "| Figure | Value |", "|---|---|"]
        lines += [f"| {_cell(key)} | {_number(value)} |" for key, value in numbers.items()]
    return lines


def render_markdown(document: t.Mapping[str, t.Any]) -> str:
    """The human report: nodes, versions (mismatches marked), inference stacks, memory holders, drift, fit, notes."""
    nodes: t.Mapping[str, t.Mapping[str, t.Any]] = document["nodes"]
    hosts = ordered_hosts(nodes)
    heads = [host for host in hosts if nodes[host]["role"] == "head"]
    lines = [
        "# Reconnaissance",
        "",
        f"{len(hosts)} node(s), head {', '.join(heads) or 'none'}; generated {document['generated_at']}.",
        "",
        "## Nodes",
        "",
        "| Host | Role | Arch | OS | Kernel | Driver / CUDA | Fabric IP | Interface | State | Speed | MTU | RDMA devices "
        "| Memory total (GiB) | Memory available (GiB) | Disk free (GiB) |",
        "|---|---|---|---|---|---|---|---|---|---:|---:|---|---:|---:|---|",
    ]
    lines += [node_row(host, nodes[host]) for host in hosts]
    lines += ["", "## Versions", "", "A value that differs from the head's is marked **(differs)**.", ""]
    lines += version_rows(nodes, hosts)
    lines += ["", "## Inference stacks found", ""]
    for host in hosts:
        lines += [f"### {host}", "", *_inference_lines(nodes[host]["recon"]), ""]
    lines += ["## Top memory holders", ""]
    for host in hosts:
        lines += [f"### {host}", "", *_memory_lines(nodes[host]["recon"]), ""]
    lines += ["## Version drift", "", *_drift_lines(document.get("drift")), ""]
    lines += ["## Model fit", "", *_fit_lines(document.get("fit")), ""]
    lines += ["## Notes", ""]
    noted = False
    for host in hosts:
        for note in _list(nodes[host]["recon"].get("notes")):
            lines.append(f"- {host}: {_cell(note)}")
            noted = True
    if not nodes or not noted:
        lines.append("None.")
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# The files


def plan(document: dict[str, t.Any], json_path: str, markdown_path: str) -> Plan:
    """What to write at ``json_path`` and ``markdown_path``; only ``generated_at`` differing is no change."""
    return plan_files(document, json_path, markdown_path, render_markdown)
