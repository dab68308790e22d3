# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gates the vLLM unit passes before it starts (its ``ExecStartPre``), after a reboot as after an Ansible run:

1. ``cluster`` (Ray mode): the Ray cluster has every expected node alive with its GPUs (up to ``cluster_timeout``:
   after a reboot the workers join after the head);
2. ``snapshot``: the model's snapshot passes the quick check (:mod:`._hf_snapshot`), read from the cache vLLM
   reads it from with ``HF_HUB_OFFLINE=1``;
3. ``memory``: ``MemAvailable`` reaches ``min_available_mib`` (up to ``memory_timeout``: an engine that just
   stopped takes a while to give back unified memory).

Each gate prints one line (``gate <name>: ok|FAILED ...``) and the first failure ends the run with status 1, so
systemd fails the start with the reason in the unit's journal. The role installs this file and the module utils
it imports on each node (``/opt/sparkops/lib``) with a thin ``sparkops-vllm-gate`` script; the settings come from
a JSON file the role writes.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import json
import math
import sys
import time
import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import check_snapshot
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import Probe, build_argv, parse_output, wait_for_cluster
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command

GATES = ("cluster", "snapshot", "memory")


class GateConfigError(ValueError):
    """The settings file is unreadable or lacks a field."""


@dataclass(frozen=True)
class GateSettings:
    """What the gates check; see the module docstring."""

    gates: tuple[str, ...]
    repo_id: str
    revision: str
    cache_dir: str
    ray_python: str = ""
    ray_address: str = ""
    expected_nodes: dict[str, str] = field(default_factory=dict)  # inventory host -> fabric IP
    gpus_per_node: float = 1.0
    cluster_timeout: float = 600.0
    min_available_mib: int = 0  # 0: min_available_fraction of MemTotal
    min_available_fraction: float = 0.0
    memory_timeout: float = 120.0
    interval: float = 2.0
    meminfo_path: str = "/proc/meminfo"

    @classmethod
    def from_dict(cls, raw: t.Mapping[str, t.Any]) -> GateSettings:
        try:
            gates = tuple(raw["gates"])
            unknown = [gate for gate in gates if gate not in GATES]
            if unknown:
                raise GateConfigError(f"unknown gate(s) {', '.join(unknown)}; known: {', '.join(GATES)}")
            return cls(
                gates=gates,
                repo_id=str(raw["repo_id"]),
                revision=str(raw.get("revision") or "main"),
                cache_dir=str(raw["cache_dir"]),
                ray_python=str(raw.get("ray_python") or ""),
                ray_address=str(raw.get("ray_address") or ""),
                expected_nodes={str(k): str(v) for k, v in dict(raw.get("expected_nodes") or {}).items()},
                gpus_per_node=float(raw.get("gpus_per_node", 1.0)),
                cluster_timeout=float(raw.get("cluster_timeout", 600.0)),
                min_available_mib=int(raw.get("min_available_mib") or 0),
                min_available_fraction=float(raw.get("min_available_fraction", 0.0)),
                memory_timeout=float(raw.get("memory_timeout", 120.0)),
                interval=float(raw.get("interval", 2.0)),
                meminfo_path=str(raw.get("meminfo_path") or "/proc/meminfo"),
            )
        except KeyError as exc:
            raise GateConfigError(f"the gate settings lack {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            if isinstance(exc, GateConfigError):
                raise
            raise GateConfigError(f"bad gate settings: {exc}") from exc


@dataclass(frozen=True)
class GateResult:
    name: str
    ok: bool
    message: str
    seconds: float

    def line(self) -> str:
        return f"gate {self.name}: {'ok' if self.ok else 'FAILED'} after {self.seconds:.1f}s: {self.message}"


def cluster_gate(settings: GateSettings, runner: Runner, clock: t.Callable[[], float], sleep: t.Callable[[float], t.Any]) -> GateResult:
    """Every expected node alive in the Ray cluster with ``gpus_per_node`` GPUs, within ``cluster_timeout``."""
    start = clock()
    address = settings.ray_address or "auto"

    def probe() -> Probe:
        rc, out, err = runner(build_argv(settings.ray_python, settings.ray_address or None))
        return parse_output(rc, out, err, settings.ray_python)

    outcome = wait_for_cluster(
        probe,
        address,
        settings.expected_nodes,
        settings.gpus_per_node,
        timeout=settings.cluster_timeout,
        poll_interval=settings.interval,
        runner=settings.ray_python,
        clock=clock,
        sleep=sleep,
    )
    seconds = clock() - start
    if outcome.failure is not None:
        return GateResult("cluster", False, outcome.failure, seconds)
    evaluation = outcome.evaluation
    gpus = evaluation.total_gpus if evaluation is not None else 0.0
    nodes = evaluation.alive_nodes if evaluation is not None else 0
    return GateResult("cluster", True, f"{nodes} node(s) alive with {gpus:g} GPU(s), every expected node joined", seconds)


def snapshot_gate(settings: GateSettings, clock: t.Callable[[], float]) -> GateResult:
    """The snapshot passes the quick check (no waiting: a snapshot does not complete itself)."""
    start = clock()
    report = check_snapshot(settings.repo_id, settings.revision, cache_dir=settings.cache_dir)
    if report.complete:
        message = f"{settings.repo_id} at {report.commit} complete in {settings.cache_dir} ({report.shards} shard(s))"
        return GateResult("snapshot", True, message, clock() - start)
    return GateResult("snapshot", False, report.message(), clock() - start)


def memory_gate(settings: GateSettings, read: t.Callable[[str], str], clock: t.Callable[[], float], sleep: t.Callable[[float], t.Any]) -> GateResult:
    """``MemAvailable`` >= ``min_available_mib`` (or, when that is 0, ``min_available_fraction`` of ``MemTotal``: the
    memory vLLM will take) within ``memory_timeout`` (unified memory: the GPU's is the system's)."""
    start = clock()
    deadline = start + settings.memory_timeout
    while True:
        try:
            info = parse_meminfo(read(settings.meminfo_path))
        except (OSError, MeminfoError) as exc:
            return GateResult("memory", False, f"cannot read {settings.meminfo_path}: {exc}", clock() - start)
        need = settings.min_available_mib or math.ceil(info.total_mib * settings.min_available_fraction)
        if info.available_mib >= need:
            return GateResult("memory", True, f"{info.available_mib} MiB available of {info.total_mib} (need {need})", clock() - start)
        now = clock()
        if now >= deadline:
            return GateResult(
                "memory",
                False,
                f"only {info.available_mib} MiB available of {info.total_mib} after {settings.memory_timeout:g}s, need {need} MiB "
                f"(page cache {info.page_cache_mib} MiB): something else holds memory (see sparkops.inference.gpu_info, or the gpu_reclaim role)",
                now - start,
            )
        sleep(max(0.0, min(settings.interval, deadline - now)))


def _read_text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def run_gates(
    settings: GateSettings,
    runner: Runner = run_command,
    read: t.Callable[[str], str] = _read_text,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], t.Any] = time.sleep,
) -> list[GateResult]:
    """Pass the configured gates in order; stop at the first that fails."""
    results: list[GateResult] = []
    for gate in settings.gates:
        if gate == "cluster":
            result = cluster_gate(settings, runner, clock, sleep)
        elif gate == "snapshot":
            result = snapshot_gate(settings, clock)
        else:
            result = memory_gate(settings, read, clock, sleep)
        results.append(result)
        if not result.ok:
            break
    return results


def main(argv: t.Sequence[str], out: t.TextIO = sys.stdout) -> int:
    """``sparkops-vllm-gate SETTINGS.json``: pass the gates, print a line each; 0 when all pass, 1 otherwise, 2 on
    bad settings."""
    if len(argv) != 1:
        out.write("usage: sparkops-vllm-gate SETTINGS.json\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            settings = GateSettings.from_dict(json.load(f))
    except (OSError, ValueError) as exc:
        out.write(f"gate settings {argv[0]}: {exc}\n")
        return 2
    results = run_gates(settings)
    for result in results:
        out.write(result.line() + "\n")
        out.flush()
    return 0 if results and all(result.ok for result in results) else 1
