# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inventory contract every sparkops.inference role relies on, and its validation.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.plugin_utils import _deployments
from ansible_collections.sparkops.inference.plugins.plugin_utils._inventory_values import DIGITS, REPO_ID, TOKEN, whole_number

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

# Paths and ports more than one role uses (and the preflight, status and benchmark playbooks): optional cluster
# variables, each with its default, written here only. The plan carries each under its name without the prefix
# (sparkops_ray_venv as ray_venv), and the roles' own variables default to the plan's value.
SHARED_VARS: dict[str, str | int] = {
    # Written by nccl_env; read by ray_cluster's and vllm_serve's units (and the preflight's reconnaissance).
    "sparkops_fabric_env_file": "/etc/sparkops/fabric.env",
    # The venv ray_cluster installs Ray into and vllm_serve installs vLLM into (nccl_env's check runs its Python).
    "sparkops_ray_venv": "/opt/sparkops/ray",
    # Ray's GCS on the head: ray_cluster starts it there, vLLM's driver and the other nodes connect to it.
    "sparkops_ray_port": 6379,
    # HF_HOME: model_sync downloads and distributes the model under it, vllm_serve reads it from there.
    "sparkops_hf_home": "/var/lib/sparkops/huggingface",
}
_SHARED_PREFIX = "sparkops_"
# The Ray units' names (ray_cluster writes them; vllm_serve's unit requires the head's; the status playbook reads them):
# in the plan as ray_units, not variables.
RAY_UNITS = {"head": "sparkops-ray-head.service", "worker": "sparkops-ray-worker.service"}
# How the nodes run vLLM across them, the same on every host (the plan's ``backend``): mp (vLLM's own multi-node mode,
# the default: no Ray cluster is deployed) or ray (the ray_cluster role forms a Ray cluster that vLLM's Ray executor
# drives). vllm_serve reads it as its own variable; ray_cluster deploys its units only with ray and removes them
# otherwise, so both roles follow the one value.
BACKEND_VAR = "vllm_serve_backend"
BACKENDS = ("mp", "ray")
DEFAULT_BACKEND = "mp"


def plan_key(name: str) -> str:
    """The plan's key for a shared variable: its name without ``sparkops_`` (``sparkops_ray_venv``: ``ray_venv``)."""
    return name[len(_SHARED_PREFIX) :]


def shared_values(given: t.Callable[[str], t.Any]) -> dict[str, t.Any]:
    """Each shared variable as the plan has it (plan_key to value): ``given(name)``, else (None) its default;
    ``ray_units``, the Ray units' names (RAY_UNITS); and ``backend``: ``given(BACKEND_VAR)``, else DEFAULT_BACKEND."""
    values = {name: given(name) for name in SHARED_VARS}
    backend = given(BACKEND_VAR)
    return {
        **{plan_key(name): SHARED_VARS[name] if value is None else value for name, value in values.items()},
        "ray_units": dict(RAY_UNITS),
        "backend": DEFAULT_BACKEND if backend is None else backend,
    }


def _check_shared(values: dict[str, t.Any], problems: list[str]) -> tuple[dict[str, t.Any], dict[str, int | None]]:
    """Refuse a shared path that is not an absolute path, or a shared port that is not a port. Returns the values with
    each port a number (one given as digits becomes one) and the ports by variable name (None: refused)."""
    checked = dict(values)
    ports: dict[str, int | None] = {}
    for name, default in SHARED_VARS.items():
        value = values[plan_key(name)]
        if isinstance(default, int):
            ports[name] = _port(name, value, problems)
            if ports[name] is not None:
                checked[plan_key(name)] = ports[name]
        elif not isinstance(value, str) or not value.startswith("/") or value.rstrip("/") == "" or any(c in value for c in "\n\r\t"):
            problems.append(f"{name} must be an absolute path below / on one line, got {value!r}")
    if values["backend"] not in BACKENDS:
        problems.append(f"{BACKEND_VAR} must be one of {', '.join(BACKENDS)}, got {values['backend']!r}")
    return checked, ports


# Where the roles' daemons listen besides the API (sparkops_serve_port): each role variable with the role's default
# (tests check they match roles/*/defaults/main.yml) and what listens there. A role variable that defaults to a
# cluster variable (None here) is named in ROLE_PORT_DEFAULTS_TO. Every port is checked whatever the backend and
# ray_cluster_dashboard are, so that switching either later cannot make two services meet on one port.
ROLE_PORT_DEFAULTS_TO = {"vllm_serve_port": "sparkops_serve_port", "ray_cluster_port": "sparkops_ray_port"}
ROLE_PORT_VARS: dict[str, int | None] = {
    "ray_cluster_port": None,
    "ray_cluster_dashboard_port": 8265,
    "vllm_serve_port": None,
    "vllm_serve_master_port": 29501,
    "vllm_serve_group_port": 29560,
}
RAY_EXTRA_ARGS_VAR = "ray_cluster_extra_args"
# What listens on each (the service, how the flag goes).
_SERVICES = {
    "sparkops_serve_port": ("vLLM's API", ""),
    "sparkops_ray_port": ("Ray's GCS", "ray start --port"),
    "vllm_serve_port": ("vLLM's API", ""),
    "ray_cluster_port": ("Ray's GCS", "ray start --port"),
    "ray_cluster_dashboard_port": ("Ray's dashboard", "--dashboard-port"),
    "vllm_serve_master_port": ("vLLM's mp rendezvous", "--master-port"),
    "vllm_serve_group_port": ("the vLLM rank supervisors", "their group port"),
}
SSH_PORT = 22
# Ports ray start takes unless told otherwise (ray_cluster_extra_args can move them): the client server (head), the
# dashboard agent (every node), and the range its workers bind (every node). Other Ray ports are picked free at start.
_RAY_FLAG_SERVICES = {
    "port": "Ray's GCS",
    "dashboard-port": "Ray's dashboard",
    "ray-client-server-port": "Ray's client server",
    "dashboard-agent-listen-port": "Ray's dashboard agent",
}
_RAY_FLAG_DEFAULTS = {"ray-client-server-port": 10001, "dashboard-agent-listen-port": 52365}
_RAY_WORKER_PORTS = (10002, 19999)
_RAY_PORT_FLAG = re.compile(r"--((?:[a-z0-9]+-)*port|worker-port-list)(?:=(.*))?", re.DOTALL)

# The fabric subnet: a fabric of Sparks is a point-to-point link or one switch's small subnet, where the nodes' fabric
# addresses are (the ray_cluster units accept connections from those addresses only, ray_cluster_restrict_to_fabric;
# the model-sync keys from the subnet). A prefix shorter than /8 spans more than the widest private block
# (10.0.0.0/8), and 0.0.0.0/0 would let everyone in.
MIN_FABRIC_PREFIX = 8
# Blocks no interface can carry a fabric on. Link-local (169.254.0.0/16) stays allowed: a back-to-back cable may
# carry only link-local addresses.
_UNUSABLE_NETWORKS = (
    (ipaddress.IPv4Network("0.0.0.0/8"), "unspecified ('this network', 0.0.0.0/8): no host can be addressed there"),
    (ipaddress.IPv4Network("127.0.0.0/8"), "loopback (127.0.0.0/8): it never leaves the host"),
    (ipaddress.IPv4Network("224.0.0.0/4"), "multicast (224.0.0.0/4): not host addresses"),
    (ipaddress.IPv4Network("240.0.0.0/4"), "reserved (240.0.0.0/4, with the broadcast address 255.255.255.255)"),
)


@dataclass(frozen=True)
class ClusterPlan:
    """The validated cluster: who is head, who works, and where everyone sits on the fabric."""

    head: str
    workers: tuple[str, ...]
    fabric_ips: dict[str, str]
    fabric_subnet: str
    world_size: int
    shared: dict[str, t.Any]  # shared_values(): the shared paths and ports
    deployments: list[dict[str, t.Any]] = field(default_factory=list)  # _deployments.plan()

    def as_dict(self) -> dict[str, t.Any]:
        topology = _topology_dict(self.head, self.workers, self.fabric_ips, self.shared, self.deployments)
        return {**topology, "fabric_subnet": self.fabric_subnet, "world_size": self.world_size}


def _topology_dict(
    head: str, workers: t.Sequence[str], fabric_ips: t.Mapping[str, str] | None, shared: t.Mapping[str, t.Any], deployments: t.Sequence[dict[str, t.Any]]
) -> dict[str, t.Any]:
    """The plan's head, workers, nodes (head first), shared paths and ports, deployments and, with ``fabric_ips``, the
    fabric addresses and the head's."""
    topology: dict[str, t.Any] = {"head": head, "workers": list(workers), "nodes": [head, *workers]}
    if fabric_ips is not None:
        topology.update(fabric_ips=dict(fabric_ips), head_fabric_ip=fabric_ips[head])
    return {**topology, **shared, "deployments": list(deployments)}


class ContractError(ValueError):
    """The inventory breaks the contract; ``problems`` lists every violation found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class TopologyError(ValueError):
    """The groups, or a node's fabric address, give no cluster: one problem, naming the group or the host."""


def members(groups: t.Mapping[str, t.Any]) -> tuple[list[str], list[str]]:
    """The hosts of HEAD_GROUP, and those of WORKER_GROUP that are not also there (inventory order, repeats dropped)."""
    heads = list(groups.get(HEAD_GROUP) or [])
    workers = [h for h in dict.fromkeys(groups.get(WORKER_GROUP) or []) if h not in heads]
    return heads, workers


def _head_count_problem(heads: list[str]) -> str | None:
    return None if len(heads) == 1 else f"group {HEAD_GROUP} must hold exactly one host, it holds {len(heads)}: {heads}"


def _both_groups_problems(groups: t.Mapping[str, t.Any], heads: list[str]) -> list[str]:
    return [f"host {host} is in both {HEAD_GROUP} and {WORKER_GROUP}" for host in groups.get(WORKER_GROUP) or [] if host in heads]


def _no_address_problem(host: str) -> str:
    return f"host {host} has no {FABRIC_IP_VAR}"


def topology(
    groups: t.Mapping[str, t.Any], fabric_ip: t.Callable[[str], t.Any] | None, host_var: t.Callable[[str, str], t.Any] | None = None
) -> dict[str, t.Any]:
    """The plan's head, workers, nodes, shared paths and ports, fabric_ips and head_fabric_ip (as ClusterPlan.as_dict
    has them) from the inventory alone, for a role run without the preflight's plan; raise TopologyError on the first
    problem.

    ``groups`` maps group names to host names and ``fabric_ip(host)`` gives a host's ``sparkops_fabric_ip`` (None when
    unset); it is asked for the nodes only, once each. ``host_var(host, name)`` gives a host's variable (None when
    unset): the shared ones are read from the head's (None: their defaults). The values are taken as given: validate()
    is what checks them. With ``fabric_ip`` None the addresses are neither read nor returned (a role that needs only the
    hosts).
    """
    heads, workers = members(groups)
    problem = _head_count_problem(heads)
    both = _both_groups_problems(groups, heads)
    if problem is None and both:
        problem = both[0]
    fabric_ips = None if fabric_ip is None or problem is not None else {host: fabric_ip(host) for host in [*heads, *workers]}
    if fabric_ips is not None:
        missing = [host for host, address in fabric_ips.items() if address is None]
        problem = _no_address_problem(missing[0]) if missing else None
    if problem is not None:
        raise TopologyError(problem)
    head_var: t.Callable[[str], t.Any] = (lambda name: host_var(heads[0], name)) if host_var is not None else (lambda name: None)
    shared = shared_values(head_var)
    cluster = {name: head_var(name) for name in CLUSTER_VARS}
    deployments = _deployments.plan(head_var(_deployments.DEPLOYMENTS_VAR), cluster, [heads[0], *workers], whole_number(cluster["sparkops_gpus_per_node"]))[0]
    if fabric_ips is None:
        return _topology_dict(heads[0], workers, None, shared, deployments)
    return _topology_dict(heads[0], workers, {host: str(address) for host, address in fabric_ips.items()}, shared, deployments)


def _positive_int(name: str, value: t.Any, problems: list[str]) -> int | None:
    number = whole_number(value)
    if number is None or number < 1:
        problems.append(f"{name} must be a positive integer, got {value!r}")
        return None
    return number


def _port(name: str, value: t.Any, problems: list[str]) -> int | None:
    port = _positive_int(name, value, problems)
    if port is not None and port > 65535:
        problems.append(f"{name} must be a TCP port (1-65535), got {port}")
        return None
    return port


def _check_scalars(cluster: dict[str, t.Any], problems: list[str]) -> int | None:
    """Check the scalar cluster variables; return the serve port when it is one."""
    repo = cluster["sparkops_model_repo"]
    if not isinstance(repo, str) or not REPO_ID.fullmatch(repo):
        problems.append(f"sparkops_model_repo must be a Hugging Face repo id like 'Qwen/Qwen3.5-122B-A10B-FP8', got {repo!r}")
    for name in ("sparkops_model_revision", "sparkops_served_model_name"):
        if not isinstance(cluster[name], str) or not TOKEN.fullmatch(cluster[name]):
            problems.append(f"{name} must be a non-empty string without whitespace, got {cluster[name]!r}")
    port = _port("sparkops_serve_port", cluster["sparkops_serve_port"], problems)
    util = cluster["sparkops_gpu_memory_utilization"]
    try:
        fraction = float(util)
    except (TypeError, ValueError):
        fraction = -1.0
    if isinstance(util, bool) or not 0.0 < fraction <= 1.0:
        problems.append(f"sparkops_gpu_memory_utilization must be a fraction in (0, 1], got {util!r}")
    return port


def _check_subnet(subnet: ipaddress.IPv4Network, problems: list[str]) -> bool:
    """Refuse a fabric subnet no fabric can use (one problem, the first that applies); return whether it is usable."""
    if subnet.prefixlen < MIN_FABRIC_PREFIX:
        problems.append(
            f"sparkops_fabric_subnet {subnet} is too wide (/{subnet.prefixlen}, the widest accepted is /{MIN_FABRIC_PREFIX}): a fabric of Sparks is a "
            "point-to-point link or one switch's small subnet, and every address in it is trusted (Ray's units accept "
            "connections from all of it); give the fabric's own subnet, such as 192.168.200.0/24"
        )
        return False
    for network, what in _UNUSABLE_NETWORKS:
        if subnet.overlaps(network):
            problems.append(f"sparkops_fabric_subnet {subnet} is {what}; give the fabric's own subnet, such as 192.168.200.0/24")
            return False
    return True


def _check_management(hosts: list[str], management: dict[str, t.Any], subnet: ipaddress.IPv4Network, ips: dict[str, str], problems: list[str]) -> None:
    """Refuse a management address (ansible_host, when an IPv4 address) inside the fabric subnet, unless it is the
    host's own fabric address (a worker reached over the fabric through the head)."""
    for host in hosts:
        try:
            addr = ipaddress.IPv4Address(str(management.get(host)))
        except ValueError:
            continue  # unset, a name or IPv6: nothing to compare without resolving it
        if addr not in subnet or str(addr) == ips.get(host):
            continue
        own = f" and is not its {FABRIC_IP_VAR} {ips[host]}" if host in ips else ""
        problems.append(
            f"host {host}: its management address ansible_host {addr} is inside sparkops_fabric_subnet {subnet}{own}: keep "
            "the management network out of the fabric subnet (Ray's units trust every address in it); only a host "
            f"reached over the fabric at its own {FABRIC_IP_VAR} may have one there"
        )


@dataclass(frozen=True)
class _Claim:
    """Ports ``low``..``high`` taken by ``service`` (two claims of one service do not clash), named by ``label``."""

    low: int
    high: int
    service: str
    label: str
    note: str = ""

    def describe(self) -> str:
        return f"{self.label} ({self.service}, {self.note})" if self.note else f"{self.label} ({self.service})"


def _ray_port_flags(args: t.Any) -> list[tuple[str, str]]:
    """The port flags (name without the dashes, value) in one host's ray_cluster_extra_args."""
    if isinstance(args, str):
        tokens = args.split()
    elif isinstance(args, (list, tuple)):
        tokens = [str(arg) for arg in args]
    else:
        return []
    flags: list[tuple[str, str]] = []
    index = 0
    while index < len(tokens):
        match = _RAY_PORT_FLAG.fullmatch(tokens[index])
        if match:
            value = match.group(2)
            if value is None:
                index += 1
                value = tokens[index] if index < len(tokens) else ""
            flags.append((match.group(1), value))
        index += 1
    return flags


def _ray_claims(extra_args: dict[str, t.Any]) -> list[_Claim]:
    """The ports ray start takes: those ray_cluster_extra_args sets (on any host) and the defaults it does not move."""
    claims: list[_Claim] = []
    moved: dict[str, str] = {}
    worker_ports = list(_RAY_WORKER_PORTS)
    worker_label = ""
    worker_list: list[int] = []
    seen: set[str] = set()
    for args in extra_args.values():
        for flag, value in _ray_port_flags(args):
            label = f"{RAY_EXTRA_ARGS_VAR} --{flag} {value}"
            if label in seen:
                continue  # the same flag on several hosts
            seen.add(label)
            if flag == "worker-port-list":
                worker_list += [int(part) for part in value.split(",") if DIGITS.fullmatch(part.strip())]
                moved[flag] = label
                continue
            if not DIGITS.fullmatch(value) or not 0 < int(value) <= 65535:
                continue  # 0 (a free port) or not a number: Ray's to judge
            if flag in ("min-worker-port", "max-worker-port"):
                worker_ports[1 if flag == "max-worker-port" else 0] = int(value)
                worker_label += f" --{flag} {value}"
                continue
            moved[flag] = label
            service = _RAY_FLAG_SERVICES.get(flag, f"Ray's --{flag}")
            claims.append(_Claim(int(value), int(value), service, label))
    for flag, port in _RAY_FLAG_DEFAULTS.items():
        if flag not in moved:
            claims.append(_Claim(port, port, _RAY_FLAG_SERVICES[flag], f"port {port}", f"ray start's default --{flag}"))
    if "worker-port-list" in moved:
        claims += [_Claim(port, port, "Ray's workers", f"Ray's worker port {port}", moved["worker-port-list"]) for port in dict.fromkeys(worker_list)]
    elif worker_ports[0] <= worker_ports[1]:
        source = f"{RAY_EXTRA_ARGS_VAR}{worker_label}" if worker_label else "ray start's default --min-worker-port/--max-worker-port"
        claims.append(_Claim(worker_ports[0], worker_ports[1], "Ray's workers", f"Ray's worker ports {worker_ports[0]}-{worker_ports[1]}", source))
    return claims


def _check_ports(
    cluster_ports: dict[str, int | None], api_claims: list[tuple[str, str, int]], ports: dict[str, t.Any], extra_args: dict[str, t.Any], problems: list[str]
) -> None:
    """Refuse two services on one port: the deployments' APIs, SSH, Ray's and vLLM's (as the inventory sets them,
    else the defaults).

    ``cluster_ports`` holds the cluster variables' ports (sparkops_serve_port, sparkops_ray_port; None: not a port;
    sparkops_serve_port is only compared with vllm_serve_port: ``api_claims``, _deployments.port_claims(), claim the
    APIs' ports)."""
    claims: list[_Claim] = [_Claim(port, port, service, label) for label, service, port in api_claims]
    for name, port in cluster_ports.items():
        if name == "sparkops_serve_port":
            continue
        if port is not None:
            claims.append(_Claim(port, port, _SERVICES[name][0], f"{name} {port}", _SERVICES[name][1]))
    for name, default in ROLE_PORT_VARS.items():
        value = ports.get(name)
        if value is None and default is None:
            continue  # the cluster variable it defaults to (ROLE_PORT_DEFAULTS_TO) is claimed above
        port = _port(name, default if value is None else value, problems)
        if port is not None and port != cluster_ports.get(ROLE_PORT_DEFAULTS_TO.get(name, "")):
            claims.append(_Claim(port, port, _SERVICES[name][0], f"{name} {port}", _SERVICES[name][1]))
    claims.append(_Claim(SSH_PORT, SSH_PORT, "SSH", f"port {SSH_PORT}", "how Ansible reaches the Sparks"))
    claims += _ray_claims(extra_args)
    for index, first in enumerate(claims):
        for second in claims[index + 1 :]:
            if first.service == second.service or first.high < second.low or second.high < first.low:
                continue
            one, other = (second, first) if first.low != first.high else (first, second)
            if other.low != other.high:
                problems.append(f"{one.describe()} is inside {other.describe()}: a Ray worker may take it first; choose a port outside the range")
            else:
                problems.append(f"{one.describe()} clashes with {other.describe()}: every service needs its own port")


def validate(
    groups: dict[str, list[str]],
    fabric_ips: dict[str, t.Any],
    cluster: dict[str, t.Any],
    management: dict[str, t.Any] | None = None,
    ports: dict[str, t.Any] | None = None,
    ray_extra_args: dict[str, t.Any] | None = None,
) -> ClusterPlan:
    """Check the inventory against the contract and return the plan, or raise ContractError listing every problem.

    ``groups`` maps group names to host names, ``fabric_ips`` maps each host in the two groups to its
    ``sparkops_fabric_ip`` (None when unset) and ``cluster`` holds the cluster variables, CLUSTER_VARS and SHARED_VARS,
    and BACKEND_VAR (None or absent when unset; a SHARED_VARS one and BACKEND_VAR then take their defaults), and
    ``sparkops_deployments`` (_deployments.DEPLOYMENTS_VAR; None or absent: the cluster variables' one deployment).
    ``management`` maps hosts to their management address (``ansible_host``, else the inventory name), ``ports`` holds
    the ROLE_PORT_VARS the inventory sets (None or absent: the role's default) and ``ray_extra_args`` maps hosts to
    their ``ray_cluster_extra_args``.
    """
    problems: list[str] = []
    heads, workers = members(groups)
    head_problem = _head_count_problem(heads)
    problems += ([head_problem] if head_problem is not None else []) + _both_groups_problems(groups, heads)
    if not workers:
        problems.append(f"group {WORKER_GROUP} must hold at least one host (sparkops.inference spans two or more Sparks)")

    listed = cluster.get(_deployments.DEPLOYMENTS_VAR)
    # With the list, the model's variables are each entry's own and the serving settings only their defaults.
    required = (
        CLUSTER_VARS
        if listed is None
        else tuple(n for n in CLUSTER_VARS if n not in _deployments.MODEL_VARS and n not in _deployments.SETTING_DEFAULTS.values())
    )
    missing = [name for name in required if cluster.get(name) is None]
    problems += [f"cluster variable {name} is not set" for name in missing]
    if listed is not None:
        serve_port = None
    elif not missing:
        serve_port = _check_scalars(cluster, problems)
    else:  # the port clashes are still looked for
        serve_port = None if "sparkops_serve_port" in missing else _port("sparkops_serve_port", cluster["sparkops_serve_port"], problems)

    subnet: ipaddress.IPv4Network | None = None
    raw_subnet = cluster.get("sparkops_fabric_subnet")
    if raw_subnet is not None and "/" not in str(raw_subnet):
        problems.append(f"sparkops_fabric_subnet must be in CIDR form like 192.168.200.0/24, got {raw_subnet!r}")
    elif raw_subnet is not None:
        try:
            subnet = ipaddress.IPv4Network(str(raw_subnet), strict=True)
        except ValueError as exc:
            problems.append(f"sparkops_fabric_subnet must be an IPv4 network like 192.168.200.0/24, got {raw_subnet!r} ({exc})")
        if subnet is not None and not _check_subnet(subnet, problems):
            subnet = None  # refused: the addresses are not checked against it

    ips: dict[str, str] = {}
    owners: dict[str, str] = {}
    for host in [*heads, *workers]:
        raw = fabric_ips.get(host)
        if raw is None:
            problems.append(_no_address_problem(host))
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
    if subnet is not None:
        _check_management([*heads, *workers], management or {}, subnet, ips, problems)

    world_size = 0
    gpus = None if "sparkops_gpus_per_node" in missing else _positive_int("sparkops_gpus_per_node", cluster["sparkops_gpus_per_node"], problems)
    if listed is None and not missing:
        tp = _positive_int("sparkops_tensor_parallel_size", cluster["sparkops_tensor_parallel_size"], problems)
        pp = _positive_int("sparkops_pipeline_parallel_size", cluster["sparkops_pipeline_parallel_size"], problems)
        if tp and pp and gpus:
            world_size = tp * pp
            capacity = gpus * (len(heads) + len(workers))
            if world_size != capacity:
                problems.append(
                    f"sparkops_tensor_parallel_size ({tp}) x sparkops_pipeline_parallel_size ({pp}) = {world_size} GPUs, "
                    f"but the inventory has {len(heads) + len(workers)} nodes x sparkops_gpus_per_node ({gpus}) = {capacity} GPUs; "
                    "make them equal so every listed node serves"
                )

    nodes = [*heads, *workers]
    deployments, found = _deployments.plan(listed, cluster, nodes, gpus)
    problems += found
    if listed is not None:
        problems += _deployments.beyond_the_roles(deployments, nodes)
        if (ports or {}).get("vllm_serve_port") is not None:
            problems.append(f"vllm_serve_port is set beside {_deployments.DEPLOYMENTS_VAR}: set each deployment's port in its entry")
        ports = {name: value for name, value in (ports or {}).items() if name != "vllm_serve_port"}  # refused: not claimed
        tp, pp = (deployments[0]["tensor_parallel_size"], deployments[0]["pipeline_parallel_size"]) if deployments else (None, None)
        world_size = tp * pp if tp and pp else 0
    shared, shared_ports = _check_shared(shared_values(cluster.get), problems)
    api_claims = _deployments.port_claims(deployments if listed is not None else [{"port": serve_port}], listed=listed is not None)
    _check_ports({"sparkops_serve_port": serve_port, **shared_ports}, api_claims, ports or {}, ray_extra_args or {}, problems)
    if problems:
        raise ContractError(problems)
    return ClusterPlan(heads[0], tuple(workers), ips, str(subnet), world_size, shared, deployments)
