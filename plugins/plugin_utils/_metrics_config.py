# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus files for a Spark cluster: scrape targets (file_sd), the scrape jobs, and the alert rules.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

Two jobs: ``sparkops-vllm`` scrapes vLLM's ``/metrics`` on the head (the API server; in both of the collection's
modes only the head serves the API), ``sparkops-node`` a node exporter on every node (its textfile collector also
carries the memory guard's ``sparkops_memory_guard_*``). The alert rules name those jobs and the metric names of the
pinned vLLM (0.30.0: ``vllm/v1/metrics/loggers.py``); docs/metrics.md says why each threshold is what it is.

Every value is checked here, and a bad one refused naming the variable it came from (``names``).
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from collections.abc import Mapping

VLLM_JOB = "sparkops-vllm"
NODE_JOB = "sparkops-node"
RULES_GROUP = "sparkops-inference"

# Prometheus's duration (model.ParseDuration): units from the largest down, each at most once, e.g. 1h30m, 90s.
_DURATION = re.compile(r"(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?")
# A DNS name or a bare host name (underscores allowed: inventory names often have them).
_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?")
_SCHEMES = ("http", "https")


class MetricsConfigError(ValueError):
    """A value the Prometheus files cannot be built from; the message names its variable."""


def _port(value: t.Any, name: str) -> int:
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise MetricsConfigError(f"{name} must be a port number (1-65535), got {value!r}")
    return int(text)


def duration(value: t.Any, name: str) -> str:
    """A Prometheus duration (``5m``, ``1h30m``, ``90s``), as written."""
    text = value.strip() if isinstance(value, str) else ""
    if not text or _DURATION.fullmatch(text) is None:
        raise MetricsConfigError(f"{name} must be a Prometheus duration such as 5m, 1h30m or 90s, got {value!r}")
    return text


def address(host: str, value: t.Any, name: str) -> str:
    """How Prometheus reaches ``host``: an IP address (IPv6 in brackets, ready for ``:port``) or a DNS name; an empty
    value means the host's inventory name."""
    if value is None or value == "":
        value = host
    text = value.strip() if isinstance(value, str) else ""
    try:
        ip = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        if _HOST_NAME.fullmatch(text) is None or text.strip(".").replace(".", "").isdigit():
            raise MetricsConfigError(f"{name} of host {host} must be an IP address or a DNS name, got {value!r}") from None
        return text
    if ip.is_unspecified or ip.is_multicast:
        raise MetricsConfigError(f"{name} of host {host} must be an address Prometheus can reach the host at, got {text}")
    return f"[{ip}]" if ip.version == 6 else str(ip)


def file_sd(
    nodes: t.Any,
    head: t.Any,
    vllm_port: t.Any,
    node_exporter_port: t.Any,
    scrape_nodes: bool = True,
    names: Mapping[str, str] | None = None,
) -> dict[str, list[dict[str, t.Any]]]:
    """The file_sd target lists, by job: vLLM's API on the head, a node exporter on every node (when
    ``scrape_nodes``). ``nodes`` maps each node (head first, then the workers, as in the inventory) to its scrape
    address; each target is labelled with its inventory name (``sparkops_node``) and its part (``sparkops_role``)."""
    names = names or {}
    nodes_name = names.get("nodes", "nodes")
    if not isinstance(nodes, Mapping) or not nodes:
        raise MetricsConfigError(f"{nodes_name} must map each node to its scrape address, got {nodes!r}")
    if head not in nodes:
        raise MetricsConfigError(f"the head {head!r} is not one of the nodes {sorted(map(str, nodes))}")
    serve = _port(vllm_port, names.get("vllm_port", "vllm_port"))
    addresses = {str(host): address(str(host), value, nodes_name) for host, value in nodes.items()}

    def group(host: str, port: int) -> dict[str, t.Any]:
        role = "head" if host == head else "worker"
        return {"targets": [f"{addresses[host]}:{port}"], "labels": {"sparkops_node": host, "sparkops_role": role}}

    targets: dict[str, list[dict[str, t.Any]]] = {VLLM_JOB: [group(str(head), serve)]}
    if scrape_nodes:
        exporter_name = names.get("node_exporter_port", "node_exporter_port")
        exporter = _port(node_exporter_port, exporter_name)
        if exporter == serve:
            serve_name = names.get("vllm_port", "vllm_port")
            raise MetricsConfigError(f"{exporter_name} {exporter} is also vLLM's port on the head ({serve_name}): two servers cannot share it")
        targets[NODE_JOB] = [group(host, exporter) for host in addresses]
    return targets


def scrape_config(file_sd_dir: t.Any, scheme: t.Any = "http", scrape_nodes: bool = True, names: Mapping[str, str] | None = None) -> dict[str, t.Any]:
    """The scrape jobs, reading the target files of :func:`file_sd` from ``file_sd_dir`` (``<dir>/<job>.json``): a
    file Prometheus takes as ``scrape_config_files`` (2.43 and later) or whose jobs go into ``scrape_configs``."""
    names = names or {}
    folder = file_sd_dir.rstrip("/") if isinstance(file_sd_dir, str) else ""
    if not folder.startswith("/") or any(ch in folder for ch in "\n\r\0*?["):
        raise MetricsConfigError(f"{names.get('file_sd_dir', 'file_sd_dir')} must be an absolute folder, got {file_sd_dir!r}")
    if scheme not in _SCHEMES:
        raise MetricsConfigError(f"{names.get('scheme', 'scheme')} must be one of {', '.join(_SCHEMES)}, got {scheme!r}")
    jobs = [{"job_name": VLLM_JOB, "scheme": scheme, "metrics_path": "/metrics", "file_sd_configs": [{"files": [f"{folder}/{VLLM_JOB}.json"]}]}]
    if scrape_nodes:
        jobs.append({"job_name": NODE_JOB, "scheme": "http", "metrics_path": "/metrics", "file_sd_configs": [{"files": [f"{folder}/{NODE_JOB}.json"]}]})
    return {"scrape_configs": jobs}


def alert_rules(
    engine_down_for: t.Any = "10m",
    queue_waiting: t.Any = 5,
    queue_for: t.Any = "5m",
    kv_cache_usage: t.Any = 0.95,
    kv_cache_for: t.Any = "5m",
    memory_guard_window: t.Any = "15m",
    wedged_for: t.Any = "5m",
    names: Mapping[str, str] | None = None,
) -> dict[str, t.Any]:
    """The alert rules (one group): vLLM's engine down, wedged (requests running, no token generated or prompt
    processed), its request queue growing, its KV cache full, the memory guard fired (and still holding vLLM
    stopped)."""
    names = names or {}

    def name(key: str) -> str:
        return names.get(key, key)

    down_for = duration(engine_down_for, name("engine_down_for"))
    waiting_for = duration(queue_for, name("queue_for"))
    kv_for = duration(kv_cache_for, name("kv_cache_for"))
    window = duration(memory_guard_window, name("memory_guard_window"))
    wedged = duration(wedged_for, name("wedged_for"))
    if not any(ch.isdigit() and ch != "0" for ch in wedged):
        raise MetricsConfigError(f"{name('wedged_for')} must be longer than 0, got {wedged_for!r}")
    if not any(ch.isdigit() and ch != "0" for ch in window):
        raise MetricsConfigError(f"{name('memory_guard_window')} must be longer than 0, got {memory_guard_window!r}")
    if isinstance(queue_waiting, bool) or not isinstance(queue_waiting, (int, str)) or not str(queue_waiting).strip().isdigit():
        raise MetricsConfigError(f"{name('queue_waiting')} must be a whole number of requests (0 or more), got {queue_waiting!r}")
    waiting = int(str(queue_waiting).strip())
    try:
        usage = float(kv_cache_usage) if not isinstance(kv_cache_usage, bool) else -1.0
    except (TypeError, ValueError):
        usage = -1.0
    if not 0 < usage <= 1:  # also NaN
        raise MetricsConfigError(f"{name('kv_cache_usage')} must be a fraction in (0, 1] (1 is a full KV cache), got {kv_cache_usage!r}")

    vllm = f'job="{VLLM_JOB}"'
    rules: list[dict[str, t.Any]] = [
        {
            "alert": "SparkopsVllmEngineDown",
            "expr": f"up{{{vllm}}} == 0 or absent(up{{{vllm}}})",
            "for": down_for,
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "vLLM on {{ $labels.instance }} has not answered /metrics for " + down_for,
                "description": (
                    "Prometheus could not scrape vLLM's /metrics ({{ $labels.instance }}, node {{ $labels.sparkops_node }}) for "
                    + down_for
                    + ": the API server is down, still loading the model, or unreachable (firewall, address), or its target file"
                    " is gone. Check `systemctl status sparkops-vllm` on the head and playbooks/status.yml."
                ),
            },
        },
        {
            # vllm#37729: a wedged engine keeps its requests running while its counters stand still. vLLM counts a
            # prompt when its prefill ends (vllm/v1/metrics/loggers.py:1262): one prefill longer than the window with
            # nothing decoding beside it reads as a wedge too.
            "alert": "SparkopsVllmWedged",
            "expr": (
                f"sum by (instance, sparkops_node) (vllm:num_requests_running{{{vllm}}}) > 0"
                f" and sum by (instance, sparkops_node) (increase(vllm:generation_tokens_total{{{vllm}}}[{wedged}])) == 0"
                f" and sum by (instance, sparkops_node) (increase(vllm:prompt_tokens_total{{{vllm}}}[{wedged}])) == 0"
            ),
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "vLLM on {{ $labels.instance }} runs requests but has produced no token for " + wedged,
                "description": (
                    "vLLM ({{ $labels.instance }}, node {{ $labels.sparkops_node }}) has had requests running and has neither"
                    " generated a token nor processed a prompt for "
                    + wedged
                    + ": the engine is wedged (its GPU may still read busy). The liveness probe restarts it"
                    " (vllm_serve_liveness_wedge_after_s); `journalctl -u sparkops-vllm-liveness` says whether it did."
                ),
            },
        },
        {
            "alert": "SparkopsVllmQueueGrowing",
            "expr": f"vllm:num_requests_waiting{{{vllm}}} > {waiting}",
            "for": waiting_for,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $value }} requests waiting in vLLM's queue on {{ $labels.instance }} for " + waiting_for,
                "description": (
                    f"More than {waiting} requests have waited for {waiting_for} without being scheduled: requests arrive"
                    " faster than the engine admits them (KV cache or max_num_seqs full). Latency grows with the queue."
                ),
            },
        },
        {
            "alert": "SparkopsVllmKvCacheFull",
            "expr": f"vllm:kv_cache_usage_perc{{{vllm}}} >= {usage:g}",
            "for": kv_for,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "vLLM's KV cache on {{ $labels.instance }} is {{ $value | humanizePercentage }} full",
                "description": (
                    f"The KV cache has been at least {usage:.0%} full for {kv_for}: new requests wait and running ones are"
                    " preempted (vllm:num_preemptions_total rises). More memory for the cache, a shorter max model length or"
                    " fewer concurrent requests."
                ),
            },
        },
        {
            "alert": "SparkopsMemoryGuardFired",
            "expr": f'increase(sparkops_memory_guard_stops_total{{job="{NODE_JOB}"}}[{window}]) > 0',
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "The memory guard on {{ $labels.sparkops_node }} stopped vLLM",
                "description": (
                    "Unified memory on {{ $labels.sparkops_node }} crossed the memory guard's levels in the last "
                    + window
                    + " and the guard stopped vLLM before the host could wedge; its journal there has the numbers."
                ),
            },
        },
        {
            "alert": "SparkopsMemoryGuardHolding",
            "expr": f'sparkops_memory_guard_holding{{job="{NODE_JOB}"}} == 1',
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "The memory guard on {{ $labels.sparkops_node }} holds vLLM stopped",
                "description": (
                    "The memory guard on {{ $labels.sparkops_node }} keeps vLLM stopped until memory comes back (or for good"
                    " once it gave up: sparkops_memory_guard_gave_up 1): nothing is served. playbooks/recon.yml lists what"
                    " holds the memory."
                ),
            },
        },
    ]
    return {"groups": [{"name": RULES_GROUP, "rules": rules}]}
