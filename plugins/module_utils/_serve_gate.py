# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gates the vLLM unit passes before it starts (its ``ExecStartPre``), after a reboot as after an Ansible run:

1. ``cluster`` (Ray mode): the Ray cluster has every expected node alive with its GPUs (up to ``cluster_timeout``:
   after a reboot the workers join after the head);
2. ``snapshot``: the model's snapshot passes the quick check (:mod:`._hf_snapshot`), read from the cache vLLM
   reads it from with ``HF_HUB_OFFLINE=1``;
3. ``memory``: ``MemAvailable`` reaches ``min_available_mib`` (up to ``memory_timeout``: an engine that just
   stopped takes a while to give back unified memory);
4. ``nodes`` (Ray mode, ``check_nodes``, after the others): the snapshot and memory gates on every other node of the
   Ray cluster. The engine runs on the head only, but replaces the repo id with the head's absolute snapshot path and
   ships it to the Ray workers, and vLLM checks ``MemAvailable`` on every worker; so each other alive node (with a GPU,
   or in ``expected_nodes``) runs :func:`._node_checks.check_node` as one Ray task pinned to it
   (``_ray_cluster.NODE_TASK_SCRIPT``, the code sent along with it): the snapshot at the head's path and commit
   passes the quick check (no waiting), and its ``MemAvailable`` reaches the same threshold within what is left of
   ``memory_timeout`` (one deadline for the head and the other nodes), plus ``nodes_timeout`` for Ray to run the
   tasks. A failure names each node (inventory host and fabric IP) and what is wrong there.

Each gate prints one line (``gate <name>: ok|FAILED ...``) and the first failure ends the run with status 1, so
systemd fails the start with the reason in the unit's journal. The role installs this file and the module utils
it imports on each node (``/opt/sparkops/lib``) with a thin ``sparkops-vllm-gate`` script; the settings come from
a JSON file the role writes.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils import _node_checks
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import SnapshotReport, check_snapshot
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._node_checks import describe, memory_problem, snapshot_problem
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import (
    Probe,
    RayClusterError,
    build_argv,
    build_node_task_argv,
    node_task_args,
    parse_node_task_output,
    parse_output,
    wait_for_cluster,
)
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command

GATES = ("cluster", "snapshot", "memory")
# The node checks' code, sent from the head's copy of the module utils along with each task.
NODE_CHECKS_DIR = os.path.dirname(os.path.abspath(_node_checks.__file__))
NODE_CHECKS_PACKAGE = _node_checks.__name__.rpartition(".")[0]
# On top of the tasks' time: connecting to the cluster and shutting down (the node task script's watchdog).
NODES_CONNECT_ALLOWANCE = 30.0


class GateConfigError(ValueError):
    """The settings file is unreadable or lacks a field."""


def _finite(raw: t.Mapping[str, t.Any], key: str, default: float) -> float:
    """A number of the settings: infinity or NaN (which JSON allows) would wait forever or fail ``sleep``."""
    value = float(raw.get(key, default))
    if not math.isfinite(value):
        raise GateConfigError(f"bad gate settings: {key} is {value}, not a finite number")
    return value


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
    check_nodes: bool = False  # Ray mode: the snapshot and memory gates on every other node too
    nodes_timeout: float = 60.0  # for Ray to start the node checks, on top of the memory wait
    draft_repo_id: str = ""  # the draft model of the speculative configuration ("": none), checked as the model is
    draft_revision: str = "main"

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
                gpus_per_node=_finite(raw, "gpus_per_node", 1.0),
                cluster_timeout=_finite(raw, "cluster_timeout", 600.0),
                min_available_mib=int(raw.get("min_available_mib") or 0),
                min_available_fraction=_finite(raw, "min_available_fraction", 0.0),
                memory_timeout=_finite(raw, "memory_timeout", 120.0),
                interval=_finite(raw, "interval", 2.0),
                meminfo_path=str(raw.get("meminfo_path") or "/proc/meminfo"),
                check_nodes=bool(raw.get("check_nodes", False)),
                nodes_timeout=_finite(raw, "nodes_timeout", 60.0),
                draft_repo_id=str(raw.get("draft_repo_id") or ""),
                draft_revision=str(raw.get("draft_revision") or "main"),
            )
        except KeyError as exc:
            raise GateConfigError(f"the gate settings lack {exc.args[0]!r}") from exc
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:  # OverflowError: int(1e400); RecursionError: str() of a deep list
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
    return _snapshot_gate(settings, clock)[0]


def _snapshot_gate(settings: GateSettings, clock: t.Callable[[], float]) -> tuple[GateResult, SnapshotReport]:
    """The model's snapshot, then the draft model's (when the speculative configuration names one): both complete."""
    start = clock()
    report = check_snapshot(settings.repo_id, settings.revision, cache_dir=settings.cache_dir)
    if not report.complete:
        return GateResult("snapshot", False, report.message(), clock() - start), report
    message = f"{settings.repo_id} at {report.commit} complete in {settings.cache_dir} ({report.shards} shard(s))"
    if settings.draft_repo_id:
        draft = check_snapshot(settings.draft_repo_id, settings.draft_revision, cache_dir=settings.cache_dir)
        if not draft.complete:
            return GateResult("snapshot", False, f"the draft model (vllm_serve_speculative): {draft.message()}", clock() - start), report
        message += f"; the draft model {settings.draft_repo_id} at {draft.commit} complete ({draft.shards} shard(s))"
    return GateResult("snapshot", True, message, clock() - start), report


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


def nodes_spec(settings: GateSettings, snapshot: SnapshotReport | None, memory_timeout: float | None) -> dict[str, t.Any]:
    """What each other node checks: the head's snapshot (``snapshot``: its commit and path; None: not checked) and
    memory (within ``memory_timeout`` seconds; None: not checked)."""
    spec: dict[str, t.Any] = {}
    if snapshot is not None:
        spec["snapshot"] = {
            "repo_id": settings.repo_id,
            "revision": settings.revision,
            "commit": snapshot.commit,
            "path": snapshot.snapshot_path,
            "cache_dir": settings.cache_dir,
        }
    if memory_timeout is not None:
        spec["memory"] = {
            "min_available_mib": settings.min_available_mib,
            "min_available_fraction": settings.min_available_fraction,
            "timeout": memory_timeout,
            "interval": settings.interval,
            "meminfo_path": settings.meminfo_path,
        }
    return spec


def nodes_gate(
    settings: GateSettings,
    runner: Runner,
    clock: t.Callable[[], float],
    snapshot: SnapshotReport | None,
    memory_timeout: float | None,
) -> GateResult:
    """Every other node of the Ray cluster passes the snapshot check (at the head's path and commit) and the memory
    check (within ``memory_timeout``), each as one Ray task pinned to it; see the module docstring."""
    start = clock()
    spec = nodes_spec(settings, snapshot, memory_timeout)
    address = settings.ray_address or "auto"
    task_timeout = (memory_timeout or 0.0) + settings.nodes_timeout
    arguments = node_task_args(
        settings.ray_address or None,
        NODE_CHECKS_DIR,
        NODE_CHECKS_PACKAGE,
        _node_checks.SHIPPED_MODULES,
        _node_checks.ENTRY,
        spec,
        timeout=task_timeout,
        deadline=task_timeout + NODES_CONNECT_ALLOWANCE,
        include_ips=settings.expected_nodes.values(),
        skip_head=True,
    )
    rc, out, err = runner(build_node_task_argv(settings.ray_python, arguments))
    try:
        run = parse_node_task_output(rc, out, err, settings.ray_python)
    except RayClusterError as exc:
        return GateResult("nodes", False, f"cannot check the other nodes: {exc}", clock() - start)
    if run.failure is not None:
        return GateResult("nodes", False, f"cannot check the other nodes through the Ray cluster at {address}: {run.failure}", clock() - start)
    hosts = {ip: host for host, ip in settings.expected_nodes.items()}
    problems: list[str] = []
    passed: list[str] = []
    for result in run.results:
        label = f"{hosts[result.ip]} ({result.ip})" if result.ip in hosts else f"{result.hostname or '?'} ({result.ip}, not in the inventory)"
        value = result.value if isinstance(result.value, dict) else None
        if result.state == "timeout":
            problems.append(f"{label}: no answer from its check within {task_timeout:g}s (Ray could not start a task there?)")
            continue
        if result.state != "done" or value is None:
            problems.append(f"{label}: its check failed: {result.error or 'no result'}")
            continue
        found = []
        if "snapshot" in spec:
            found.append(snapshot_problem(value["snapshot"], spec["snapshot"]))
        if "memory" in spec:
            found.append(memory_problem(value["memory"]))
        wrong = [problem for problem in found if problem]
        if wrong:
            problems.append(f"{label}: {'; '.join(wrong)}")
        else:
            passed.append(f"{label}: {describe(value)}")
    checked = {result.ip for result in run.results} | set(run.head_ips)
    absent = [f"{host} ({ip}): not alive in the Ray cluster at {address}, not checked" for host, ip in settings.expected_nodes.items() if ip not in checked]
    problems.extend(absent)
    seconds = clock() - start
    if problems:
        return GateResult("nodes", False, " | ".join(problems), seconds)
    return GateResult("nodes", True, " | ".join(passed) or "no other node in the Ray cluster", seconds)


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
    """Pass the configured gates in order, then (``check_nodes``) the other nodes'; stop at the first that fails."""
    results: list[GateResult] = []
    snapshot: SnapshotReport | None = None
    memory_started: float | None = None
    for gate in settings.gates:
        if gate == "cluster":
            result = cluster_gate(settings, runner, clock, sleep)
        elif gate == "snapshot":
            result, snapshot = _snapshot_gate(settings, clock)
        else:
            memory_started = clock()
            result = memory_gate(settings, read, clock, sleep)
        results.append(result)
        if not result.ok:
            return results
    if settings.check_nodes and (snapshot is not None or memory_started is not None):
        # One memory deadline for the head and the other nodes: they gave memory back while the head waited.
        memory_left = None if memory_started is None else max(0.0, settings.memory_timeout - (clock() - memory_started))
        results.append(nodes_gate(settings, runner, clock, snapshot, memory_left))
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
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deeply for the parser
        out.write(f"gate settings {argv[0]}: {exc}\n")
        return 2
    results = run_gates(settings)
    for result in results:
        out.write(result.line() + "\n")
        out.flush()
    return 0 if results and all(result.ok for result in results) else 1
