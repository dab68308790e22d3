# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployments the cluster serves: ``sparkops_deployments``, or the one the cluster variables describe.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

A deployment is one model served by one vLLM group on some of the nodes: its name (in messages; later in unit names
and paths), the model (repo id, revision, served name), its nodes and parallel layout, its API port, its share of each
node's memory, and its own extra arguments and environment. ``plan`` gives each as the plan's ``deployments`` hold
it, with the problems found, each naming the deployment (its name and its index in the list) and the key.
"""

from __future__ import annotations

import re
import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.plugin_utils._inventory_values import REPO_ID, TOKEN, whole_number

DEPLOYMENTS_VAR = "sparkops_deployments"
# The deployment the cluster variables describe when the list is not set.
DEFAULT_NAME = "default"
# The cluster variables that describe the model and its layout: with the list set, each entry says these itself,
# and setting them beside the list is refused (one place for each thing).
MODEL_VARS = {
    "sparkops_model_repo": "model",
    "sparkops_model_revision": "revision",
    "sparkops_served_model_name": "served_model_name",
    "sparkops_tensor_parallel_size": "tensor_parallel_size",
    "sparkops_pipeline_parallel_size": "pipeline_parallel_size",
}
# The cluster variables an entry's serving settings default to.
SETTING_DEFAULTS = {"port": "sparkops_serve_port", "gpu_memory_utilization": "sparkops_gpu_memory_utilization"}
KEYS = (
    "name",
    "model",
    "revision",
    "served_model_name",
    "nodes",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "port",
    "gpu_memory_utilization",
    "extra_args",
    "env",
)
ALL_NODES = "all"
DEFAULT_REVISION = "main"
# A name goes into unit names (sparkops-vllm-<name>.service), paths and messages: lowercase letters, digits and inner
# hyphens, at most 32 characters (nothing systemd escapes, no path separator, no instance '@').
NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Entry:
    """One entry being read: where it is (for messages) and the problems found in it."""

    label: str
    problems: list[str] = field(default_factory=list)

    def refuse(self, key: str, what: str, value: t.Any) -> None:
        self.problems.append(f"{self.label}: {key} must be {what}, got {value!r}")


def _positive_int(entry: _Entry, key: str, value: t.Any) -> int | None:
    number = whole_number(value)
    if number is None or number < 1:
        entry.refuse(key, "a positive integer", value)
        return None
    return number


def _port(entry: _Entry, key: str, value: t.Any) -> int | None:
    port = _positive_int(entry, key, value)
    if port is not None and port > 65535:
        entry.refuse(key, "a TCP port (1-65535)", value)
        return None
    return port


def _fraction(entry: _Entry, key: str, value: t.Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if isinstance(value, bool) or not 0.0 < number <= 1.0:
        entry.refuse(key, "a fraction in (0, 1]", value)
        return None
    return number


def _token(entry: _Entry, key: str, value: t.Any) -> str | None:
    if not isinstance(value, str) or not TOKEN.fullmatch(value):
        entry.refuse(key, "a non-empty string without whitespace", value)
        return None
    return value


def _repo(entry: _Entry, key: str, value: t.Any) -> str | None:
    if not isinstance(value, str) or not REPO_ID.fullmatch(value):
        entry.refuse(key, "a Hugging Face repo id like 'Qwen/Qwen3.5-122B-A10B-FP8'", value)
        return None
    return value


def _args(entry: _Entry, value: t.Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(arg, (str, int, float)) and not isinstance(arg, bool) for arg in value):
        entry.refuse("extra_args", "a list of strings (vLLM's flags and their values, one per item)", value)
        return []
    return [str(arg) for arg in value]


def _env(entry: _Entry, value: t.Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        entry.refuse("env", "a mapping of environment variable names to values", value)
        return {}
    env: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            entry.refuse("env", "a mapping whose keys are environment variable names ([A-Za-z_][A-Za-z0-9_]*)", name)
        elif isinstance(item, (dict, list, tuple)) or item is None or "\n" in str(item):
            entry.refuse(f"env.{name}", "a value on one line", item)
        else:
            env[name] = str(item).lower() if isinstance(item, bool) else str(item)
    return env


def _nodes(entry: _Entry, value: t.Any, nodes: t.Sequence[str]) -> list[str]:
    """The entry's nodes in the plan's order (head first): ``all`` (the default) or inventory hosts."""
    if value is None or value == ALL_NODES:
        return list(nodes)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        entry.refuse("nodes", f"{ALL_NODES!r} or a non-empty list of the inventory's Sparks", value)
        return []
    named: list[str] = []
    for host in value:
        if host not in nodes:
            entry.problems.append(f"{entry.label}: nodes names {host!r}, which is not a host of spark_head or spark_workers ({', '.join(nodes)})")
        elif host in named:
            entry.problems.append(f"{entry.label}: nodes names {host!r} twice")
        else:
            named.append(host)
    return [host for host in nodes if host in named]


def _layout(entry: _Entry, given: t.Mapping[str, t.Any], deployment_nodes: list[str], gpus_per_node: int | None) -> tuple[int | None, int | None]:
    """Tensor and pipeline parallel sizes: as given (pipeline 1, tensor the rest by default), their product the GPUs
    of the entry's nodes."""
    gpus = gpus_per_node * len(deployment_nodes) if gpus_per_node and deployment_nodes else None
    pp = 1 if given.get("pipeline_parallel_size") is None else _positive_int(entry, "pipeline_parallel_size", given["pipeline_parallel_size"])
    if given.get("tensor_parallel_size") is not None:
        tp = _positive_int(entry, "tensor_parallel_size", given["tensor_parallel_size"])
    elif gpus is not None and pp is not None and gpus % pp == 0:
        tp = gpus // pp
    else:
        tp = None
        if gpus is not None and pp is not None:
            entry.problems.append(f"{entry.label}: pipeline_parallel_size ({pp}) does not divide its {gpus} GPUs; set tensor_parallel_size too")
    if tp is not None and pp is not None and gpus is not None and tp * pp != gpus:
        entry.problems.append(
            f"{entry.label}: tensor_parallel_size ({tp}) x pipeline_parallel_size ({pp}) = {tp * pp} GPUs, but its nodes "
            f"({', '.join(deployment_nodes)}) have {len(deployment_nodes)} x sparkops_gpus_per_node ({gpus_per_node}) = {gpus} GPUs; "
            "make them equal so every node of the deployment serves"
        )
    return tp, pp


def _read(entry: _Entry, given: t.Mapping[str, t.Any], cluster: t.Mapping[str, t.Any], nodes: t.Sequence[str], gpus_per_node: int | None) -> dict[str, t.Any]:
    unknown = [key for key in given if key not in KEYS]
    if unknown:
        entry.problems.append(f"{entry.label}: unknown key(s) {', '.join(map(str, unknown))}; a deployment takes {', '.join(KEYS)}")
    model = _repo(entry, "model", given.get("model"))
    revision = _token(entry, "revision", given.get("revision", DEFAULT_REVISION))
    # vLLM's own default for the served name is the model: where the model is refused, so is nothing more.
    served = _token(entry, "served_model_name", given["served_model_name"]) if "served_model_name" in given else model
    deployment_nodes = _nodes(entry, given.get("nodes"), nodes)
    tp, pp = _layout(entry, given, deployment_nodes, gpus_per_node)
    settings: dict[str, t.Any] = {}
    for key, cluster_var in SETTING_DEFAULTS.items():
        value = given.get(key, cluster.get(cluster_var))
        if value is None:
            entry.problems.append(f"{entry.label}: {key} is not set, here nor in the cluster variable {cluster_var}")
            settings[key] = None
        else:
            settings[key] = _port(entry, key, value) if key == "port" else _fraction(entry, key, value)
    return {
        "model": model,
        "revision": revision,
        "served_model_name": served,
        "nodes": deployment_nodes,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        **settings,
        "extra_args": _args(entry, given.get("extra_args")),
        "env": _env(entry, given.get("env")),
    }


def _from_cluster(cluster: t.Mapping[str, t.Any], nodes: t.Sequence[str]) -> dict[str, t.Any]:
    """The one deployment the cluster variables describe, on every node (checked by the contract's own rules)."""

    def number(name: str, kind: t.Callable[[t.Any], t.Any]) -> t.Any:
        try:
            return kind(cluster.get(name))
        except (TypeError, ValueError):
            return None

    return {
        "name": DEFAULT_NAME,
        "model": cluster.get("sparkops_model_repo"),
        "revision": cluster.get("sparkops_model_revision"),
        "served_model_name": cluster.get("sparkops_served_model_name"),
        "nodes": list(nodes),
        "tensor_parallel_size": number("sparkops_tensor_parallel_size", int),
        "pipeline_parallel_size": number("sparkops_pipeline_parallel_size", int),
        "port": number("sparkops_serve_port", int),
        "gpu_memory_utilization": number("sparkops_gpu_memory_utilization", float),
        "extra_args": [],
        "env": {},
    }


def _memory_shares(deployments: list[dict[str, t.Any]], nodes: t.Sequence[str], problems: list[str]) -> None:
    """Refuse a node whose deployments' gpu_memory_utilization add up to more than the whole of its memory."""
    for host in nodes:
        shares = [(d["name"], d["gpu_memory_utilization"]) for d in deployments if host in d["nodes"] and d["gpu_memory_utilization"] is not None]
        total = sum(share for _name, share in shares)
        if len(shares) > 1 and total > 1.0 + 1e-9:
            detail = ", ".join(f"{name} {share:g}" for name, share in shares)
            problems.append(
                f"host {host}: the deployments on it take {total:g} of its memory in gpu_memory_utilization ({detail}), "
                "more than all of it; lower them so they add up to at most 1 (on unified memory, leave the system room: about 0.9)"
            )


def plan(given: t.Any, cluster: t.Mapping[str, t.Any], nodes: t.Sequence[str], gpus_per_node: int | None) -> tuple[list[dict[str, t.Any]], list[str]]:
    """The deployments (the plan's ``deployments``: each a dict with ``name`` and KEYS' values, ``nodes`` in the
    plan's order, and ``head``, the node of its rank 0 that serves its API) and every problem found.

    ``given`` is ``sparkops_deployments`` (None: unset, the one deployment ``cluster``'s variables describe, named
    DEFAULT_NAME, whose checks are the contract's), ``cluster`` the cluster variables, ``nodes`` the plan's nodes (head
    first) and ``gpus_per_node`` ``sparkops_gpus_per_node`` (None where it is not a number). The dicts are formed even
    where a problem is found, a value in doubt None."""
    if given is None:
        return [{**_from_cluster(cluster, nodes), "head": nodes[0] if nodes else None}], []
    problems: list[str] = []
    if not isinstance(given, (list, tuple)):
        return [], [f"{DEPLOYMENTS_VAR} must be a list of deployments (mappings with name and model), got {given!r}"]
    if not given:
        return [], [
            f"{DEPLOYMENTS_VAR} is empty: removing the last deployment is refused; to stop serving and remove everything, run "
            "playbooks/teardown.yml, or leave the variable unset to serve the model the cluster variables name"
        ]
    problems += [
        f"{name} is set beside {DEPLOYMENTS_VAR}: each deployment names its own {key}; move it into the list's entries"
        for name, key in MODEL_VARS.items()
        if cluster.get(name) is not None
    ]
    deployments: list[dict[str, t.Any]] = []
    names: dict[str, int] = {}
    for index, raw in enumerate(given):
        raw_name = raw.get("name") if isinstance(raw, dict) else None
        entry = _Entry(f"{DEPLOYMENTS_VAR}[{index}]" + (f" ({raw_name})" if isinstance(raw_name, str) else ""))
        if not isinstance(raw, dict):
            problems.append(f"{entry.label} must be a mapping with name and model, got {raw!r}")
            continue
        name = raw_name if isinstance(raw_name, str) and NAME_RE.fullmatch(raw_name) else None
        if name is None:
            entry.refuse("name", "1 to 32 lowercase letters, digits and inner hyphens (it names the deployment's units and folders)", raw_name)
        elif name in names:
            entry.problems.append(f"{entry.label}: name {name!r} is also the name of {DEPLOYMENTS_VAR}[{names[name]}]")
        else:
            names[name] = index
        deployment = {"name": name, **_read(entry, raw, cluster, nodes, gpus_per_node)}
        deployment["head"] = deployment["nodes"][0] if deployment["nodes"] else None
        deployments.append(deployment)
        problems += entry.problems
    _memory_shares(deployments, nodes, problems)
    return deployments, problems


def port_claims(deployments: t.Sequence[t.Mapping[str, t.Any]], listed: bool) -> list[tuple[str, str, int]]:
    """Each deployment's API port as the contract's port check claims it: (label, service, port). The services differ
    by deployment, so two on one port clash; the cluster variables' deployment keeps sparkops_serve_port's label."""
    claims: list[tuple[str, str, int]] = []
    for index, deployment in enumerate(deployments):
        if deployment.get("port") is None:
            continue
        if listed:
            label = f"{DEPLOYMENTS_VAR}[{index}] ({deployment['name']}) port {deployment['port']}"
            claims.append((label, f"vLLM's API of deployment {deployment['name']}", deployment["port"]))
        else:
            claims.append((f"sparkops_serve_port {deployment['port']}", "vLLM's API", deployment["port"]))
    return claims


def beyond_the_roles(deployments: t.Sequence[t.Mapping[str, t.Any]], nodes: t.Sequence[str]) -> list[str]:
    """What the roles do not serve yet: they run one deployment, across every node (one vLLM unit per node, one set
    of files). A list of one such entry serves as the cluster variables do."""
    if len(deployments) > 1:
        names = ", ".join(str(d["name"]) for d in deployments)
        return [
            f"{DEPLOYMENTS_VAR} lists {len(deployments)} deployments ({names}): the roles serve one deployment across every "
            "node so far; list one (nodes: all), or leave the variable unset and use the cluster variables"
        ]
    problems = []
    for index, deployment in enumerate(deployments):
        if deployment["nodes"] and list(deployment["nodes"]) != list(nodes):
            problems.append(
                f"{DEPLOYMENTS_VAR}[{index}] ({deployment['name']}): nodes {', '.join(deployment['nodes'])} leave out "
                f"{', '.join(host for host in nodes if host not in deployment['nodes'])}: the roles serve a deployment across "
                "every node so far; use nodes: all, or take the node out of the inventory"
            )
    return problems


def models(deployments: t.Sequence[t.Mapping[str, t.Any]], draft: t.Mapping[str, t.Any] | None, nodes: t.Sequence[str]) -> list[dict[str, t.Any]]:
    """The models the deployments serve, each once (``repo_id``, ``revision``, ``nodes``: the nodes that serve it, in
    the plan's order), for model_sync: a model two deployments serve at one revision is fetched once, for the nodes of
    both. ``draft`` is the draft model of speculative decoding (``speculative_draft``: ``repo_id``, ``revision``),
    served beside the (first) deployment's model on its nodes; None: none."""
    wanted: dict[tuple[str, str], set[str]] = {}
    served = [(d.get("model"), d.get("revision"), d.get("nodes") or []) for d in deployments]
    if draft and deployments:
        served.append((draft.get("repo_id"), draft.get("revision"), deployments[0].get("nodes") or []))
    for repo_id, revision, hosts in served:
        if isinstance(repo_id, str) and isinstance(revision, str):
            wanted.setdefault((repo_id, revision), set()).update(hosts)
    return [{"repo_id": repo_id, "revision": revision, "nodes": [host for host in nodes if host in hosts]} for (repo_id, revision), hosts in wanted.items()]
