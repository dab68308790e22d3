# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inventory contract every sparkops.inference role relies on, and its validation.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from dataclasses import dataclass

HEAD_GROUP = "spark_head"
WORKER_GROUP = "spark_workers"
FABRIC_IP_VAR = "sparkops_fabric_ip"

# Cluster variables every role defaults its own <role>_ variables to.
CLUSTER_VARS: tuple[str, ...] = (
    "sparkops_model_repo",
    "sparkops_model_revision",
    "sparkops_served_model_name",
    "sparkops_tensor_parallel_size",
    "sparkops_pipeline_parallel_size",
    "sparkops_gpus_per_node",
    "sparkops_fabric_subnet",
    "sparkops_serve_port",
    "sparkops_gpu_memory_utilization",
)

_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_TOKEN = re.compile(r"\S+")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class ClusterPlan:
    """The validated cluster: who is head, who works, and where everyone sits on the fabric."""

    head: str
    workers: tuple[str, ...]
    fabric_ips: dict[str, str]
    fabric_subnet: str
    world_size: int

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "head": self.head,
            "workers": list(self.workers),
            "nodes": [self.head, *self.workers],
            "fabric_ips": dict(self.fabric_ips),
            "head_fabric_ip": self.fabric_ips[self.head],
            "fabric_subnet": self.fabric_subnet,
            "world_size": self.world_size,
        }


class ContractError(ValueError):
    """The inventory breaks the contract; ``problems`` lists every violation found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _positive_int(name: str, value: t.Any, problems: list[str]) -> int | None:
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and _DIGITS.fullmatch(value))):
        problems.append(f"{name} must be a positive integer, got {value!r}")
        return None
    number = int(value)
    if number < 1:
        problems.append(f"{name} must be a positive integer, got {value!r}")
        return None
    return number


def _check_scalars(cluster: dict[str, t.Any], problems: list[str]) -> None:
    repo = cluster["sparkops_model_repo"]
    if not isinstance(repo, str) or not _REPO_ID.fullmatch(repo):
        problems.append(f"sparkops_model_repo must be a Hugging Face repo id like 'Qwen/Qwen3.5-122B-A10B-FP8', got {repo!r}")
    for name in ("sparkops_model_revision", "sparkops_served_model_name"):
        if not isinstance(cluster[name], str) or not _TOKEN.fullmatch(cluster[name]):
            problems.append(f"{name} must be a non-empty string without whitespace, got {cluster[name]!r}")
    port = _positive_int("sparkops_serve_port", cluster["sparkops_serve_port"], problems)
    if port is not None and port > 65535:
        problems.append(f"sparkops_serve_port must be a TCP port (1-65535), got {port}")
    util = cluster["sparkops_gpu_memory_utilization"]
    try:
        fraction = float(util)
    except (TypeError, ValueError):
        fraction = -1.0
    if isinstance(util, bool) or not 0.0 < fraction <= 1.0:
        problems.append(f"sparkops_gpu_memory_utilization must be a fraction in (0, 1], got {util!r}")


def validate(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any], cluster: dict[str, t.Any]) -> ClusterPlan:
    """Check the inventory against the contract and return the plan, or raise ContractError listing every problem.

    ``groups`` maps group names to host names, ``fabric_ips`` maps each host in the two groups to its
    ``sparkops_fabric_ip`` (None when unset) and ``cluster`` holds the cluster variables (None when unset).
    """
    problems: list[str] = []
    heads = list(groups.get(HEAD_GROUP) or [])
    workers = [h for h in dict.fromkeys(groups.get(WORKER_GROUP) or []) if h not in heads]
    if len(heads) != 1:
        problems.append(f"group {HEAD_GROUP} must hold exactly one host, it holds {len(heads)}: {heads}")
    for host in groups.get(WORKER_GROUP) or []:
        if host in heads:
            problems.append(f"host {host} is in both {HEAD_GROUP} and {WORKER_GROUP}")
    if not workers:
        problems.append(f"group {WORKER_GROUP} must hold at least one host (sparkops.inference spans two or more Sparks)")

    missing = [name for name in CLUSTER_VARS if cluster.get(name) is None]
    problems += [f"cluster variable {name} is not set" for name in missing]
    if not missing:
        _check_scalars(cluster, problems)

    subnet: ipaddress.IPv4Network | None = None
    raw_subnet = cluster.get("sparkops_fabric_subnet")
    if raw_subnet is not None and "/" not in str(raw_subnet):
        problems.append(f"sparkops_fabric_subnet must be in CIDR form like 192.168.200.0/24, got {raw_subnet!r}")
    elif raw_subnet is not None:
        try:
            subnet = ipaddress.IPv4Network(str(raw_subnet), strict=True)
        except ValueError as exc:
            problems.append(f"sparkops_fabric_subnet must be an IPv4 network like 192.168.200.0/24, got {raw_subnet!r} ({exc})")

    ips: dict[str, str] = {}
    owners: dict[str, str] = {}
    for host in [*heads, *workers]:
        raw = fabric_ips.get(host)
        if raw is None:
            problems.append(f"host {host} has no {FABRIC_IP_VAR}")
            continue
        try:
            addr = ipaddress.IPv4Address(str(raw))
        except ValueError:
            problems.append(f"host {host}: {FABRIC_IP_VAR} must be an IPv4 address, got {raw!r}")
            continue
        if subnet is not None and (addr not in subnet or addr in (subnet.network_address, subnet.broadcast_address)):
            problems.append(f"host {host}: {FABRIC_IP_VAR} {addr} is not a host address in sparkops_fabric_subnet {subnet}")
        if str(addr) in owners:
            problems.append(f"host {host}: {FABRIC_IP_VAR} {addr} is also used by host {owners[str(addr)]}")
        owners[str(addr)] = host
        ips[host] = str(addr)

    world_size = 0
    if not missing:
        tp = _positive_int("sparkops_tensor_parallel_size", cluster["sparkops_tensor_parallel_size"], problems)
        pp = _positive_int("sparkops_pipeline_parallel_size", cluster["sparkops_pipeline_parallel_size"], problems)
        gpus = _positive_int("sparkops_gpus_per_node", cluster["sparkops_gpus_per_node"], problems)
        if tp and pp and gpus:
            world_size = tp * pp
            capacity = gpus * (len(heads) + len(workers))
            if world_size != capacity:
                problems.append(
                    f"sparkops_tensor_parallel_size ({tp}) x sparkops_pipeline_parallel_size ({pp}) = {world_size} GPUs, "
                    f"but the inventory has {len(heads) + len(workers)} nodes x sparkops_gpus_per_node ({gpus}) = {capacity} GPUs; "
                    "make them equal so every listed node serves"
                )

    if problems:
        raise ContractError(problems)
    return ClusterPlan(heads[0], tuple(workers), ips, str(subnet), world_size)
