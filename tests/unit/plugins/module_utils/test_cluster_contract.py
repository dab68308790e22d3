# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _cluster_contract."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._cluster_contract import (
    CLUSTER_VARS,
    FABRIC_IP_VAR,
    HEAD_GROUP,
    WORKER_GROUP,
    ClusterPlan,
    ContractError,
    validate,
)

AS_DICT_KEYS = {"head", "workers", "nodes", "fabric_ips", "head_fabric_ip", "fabric_subnet", "world_size"}


def make_cluster(**overrides: t.Any) -> dict[str, t.Any]:
    """Cluster variables for a valid two-node, one-GPU-per-node cluster, with ``overrides`` applied."""
    cluster: dict[str, t.Any] = {
        "sparkops_model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
        "sparkops_model_revision": "main",
        "sparkops_served_model_name": "qwen",
        "sparkops_tensor_parallel_size": 2,
        "sparkops_pipeline_parallel_size": 1,
        "sparkops_gpus_per_node": 1,
        "sparkops_fabric_subnet": "192.168.200.0/24",
        "sparkops_serve_port": 8000,
        "sparkops_gpu_memory_utilization": 0.9,
    }
    cluster.update(overrides)
    return cluster


def make_inventory(node_count: int = 2) -> tuple[dict[str, list[str]], dict[str, t.Any]]:
    """Groups and fabric IPs for a head plus ``node_count - 1`` workers on 192.168.200.11..."""
    workers = [f"spark-worker{i}" for i in range(1, node_count)]
    groups = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: workers}
    fabric_ips: dict[str, t.Any] = {"spark-head": "192.168.200.11"}
    fabric_ips.update({w: f"192.168.200.{11 + i}" for i, w in enumerate(workers, start=1)})
    return groups, fabric_ips


def problems_of(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any], cluster: dict[str, t.Any]) -> list[str]:
    with pytest.raises(ContractError) as excinfo:
        validate(groups, fabric_ips, cluster)
    problems = excinfo.value.problems
    assert problems, "ContractError raised with no problems"
    assert str(excinfo.value) == "; ".join(problems)
    return problems


def only_problem(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any], cluster: dict[str, t.Any]) -> str:
    problems = problems_of(groups, fabric_ips, cluster)
    assert len(problems) == 1, problems
    return problems[0]


# --- valid inventories ---------------------------------------------------------------------------


def test_valid_two_node_inventory() -> None:
    groups, fabric_ips = make_inventory(2)
    plan = validate(groups, fabric_ips, make_cluster())
    assert isinstance(plan, ClusterPlan)
    assert plan.head == "spark-head"
    assert plan.workers == ("spark-worker1",)
    assert plan.fabric_ips == {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"}
    assert plan.fabric_subnet == "192.168.200.0/24"
    assert plan.world_size == 2
    as_dict = plan.as_dict()
    assert set(as_dict) == AS_DICT_KEYS
    assert as_dict["head"] == "spark-head"
    assert as_dict["workers"] == ["spark-worker1"]
    assert as_dict["nodes"] == ["spark-head", "spark-worker1"]
    assert as_dict["head_fabric_ip"] == "192.168.200.11"
    assert as_dict["fabric_ips"] == plan.fabric_ips
    assert as_dict["world_size"] == 2


def test_valid_four_node_inventory() -> None:
    groups, fabric_ips = make_inventory(4)
    cluster = make_cluster(sparkops_tensor_parallel_size=4, sparkops_pipeline_parallel_size=2, sparkops_gpus_per_node=2)
    plan = validate(groups, fabric_ips, cluster)
    assert plan.head == "spark-head"
    assert plan.workers == ("spark-worker1", "spark-worker2", "spark-worker3")
    assert plan.fabric_ips == {
        "spark-head": "192.168.200.11",
        "spark-worker1": "192.168.200.12",
        "spark-worker2": "192.168.200.13",
        "spark-worker3": "192.168.200.14",
    }
    assert plan.world_size == 8
    as_dict = plan.as_dict()
    assert set(as_dict) == AS_DICT_KEYS
    assert as_dict["nodes"] == ["spark-head", "spark-worker1", "spark-worker2", "spark-worker3"]
    assert as_dict["workers"] == ["spark-worker1", "spark-worker2", "spark-worker3"]
    assert as_dict["head_fabric_ip"] == "192.168.200.11"
    assert as_dict["world_size"] == 8


def test_as_dict_returns_copies() -> None:
    groups, fabric_ips = make_inventory(2)
    plan = validate(groups, fabric_ips, make_cluster())
    as_dict = plan.as_dict()
    as_dict["fabric_ips"]["spark-head"] = "10.0.0.1"
    as_dict["workers"].append("intruder")
    assert plan.fabric_ips["spark-head"] == "192.168.200.11"
    assert plan.workers == ("spark-worker1",)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sparkops_tensor_parallel_size", "2"),
        ("sparkops_serve_port", "8000"),
        ("sparkops_serve_port", 65535),
        ("sparkops_serve_port", 1),
        ("sparkops_gpu_memory_utilization", 1),
        ("sparkops_gpu_memory_utilization", "0.5"),
        ("sparkops_model_repo", "org.name/model_v1-2.3"),
        ("sparkops_model_revision", "0123456789abcdef0123456789abcdef01234567"),
    ],
)
def test_accepted_values(name: str, value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    plan = validate(groups, fabric_ips, make_cluster(**{name: value}))
    assert plan.world_size == 2


def test_fabric_ip_normalised_to_string() -> None:
    import ipaddress

    groups, fabric_ips = make_inventory(2)
    fabric_ips["spark-worker1"] = ipaddress.IPv4Address("192.168.200.12")
    plan = validate(groups, fabric_ips, make_cluster())
    assert plan.fabric_ips["spark-worker1"] == "192.168.200.12"


# --- groups --------------------------------------------------------------------------------------


@pytest.mark.parametrize("heads", [[], ["spark-head", "spark-head2"]])
def test_head_group_must_hold_exactly_one_host(heads: list[str]) -> None:
    groups = {HEAD_GROUP: heads, WORKER_GROUP: ["spark-worker1"]}
    fabric_ips = {"spark-head": "192.168.200.11", "spark-head2": "192.168.200.13", "spark-worker1": "192.168.200.12"}
    cluster = make_cluster(sparkops_tensor_parallel_size=len(heads) + 1)
    message = only_problem(groups, fabric_ips, cluster)
    assert HEAD_GROUP in message
    assert f"holds {len(heads)}" in message


def test_head_group_absent() -> None:
    groups = {WORKER_GROUP: ["spark-worker1"]}
    message = only_problem(groups, {"spark-worker1": "192.168.200.12"}, make_cluster(sparkops_tensor_parallel_size=1))
    assert HEAD_GROUP in message


@pytest.mark.parametrize("groups", [{HEAD_GROUP: ["spark-head"], WORKER_GROUP: []}, {HEAD_GROUP: ["spark-head"]}])
def test_no_workers(groups: dict[str, list[str]]) -> None:
    message = only_problem(groups, {"spark-head": "192.168.200.11"}, make_cluster(sparkops_tensor_parallel_size=1))
    assert WORKER_GROUP in message
    assert "at least one host" in message


def test_host_in_both_groups() -> None:
    groups = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: ["spark-head", "spark-worker1"]}
    fabric_ips = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"}
    message = only_problem(groups, fabric_ips, make_cluster())
    assert "spark-head" in message
    assert HEAD_GROUP in message
    assert WORKER_GROUP in message


def test_only_host_in_both_groups_also_leaves_no_workers() -> None:
    groups = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: ["spark-head"]}
    problems = problems_of(groups, {"spark-head": "192.168.200.11"}, make_cluster(sparkops_tensor_parallel_size=1))
    assert len(problems) == 2
    assert any("spark-head" in p and "both" in p for p in problems)
    assert any(WORKER_GROUP in p and "at least one host" in p for p in problems)


# --- cluster variables ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLUSTER_VARS)
@pytest.mark.parametrize("how", ["absent", "none"])
def test_missing_cluster_variable_is_named(name: str, how: str) -> None:
    groups, fabric_ips = make_inventory(2)
    cluster = make_cluster()
    if how == "absent":
        del cluster[name]
    else:
        cluster[name] = None
    message = only_problem(groups, fabric_ips, cluster)
    assert name in message
    assert "not set" in message


def test_every_missing_cluster_variable_is_reported() -> None:
    groups, fabric_ips = make_inventory(2)
    problems = problems_of(groups, fabric_ips, {})
    assert len(problems) == len(CLUSTER_VARS)
    for name, problem in zip(CLUSTER_VARS, problems, strict=True):
        assert name in problem


@pytest.mark.parametrize(
    "value", ["Qwen", "/Qwen3", "Qwen/", "Qwen/Qwen3/extra", "Qwen/Qwen 3", "-Qwen/Qwen3", "Qwen/.hidden", "", 42, ["Qwen/Qwen3"], "Qwen/Qwen3\n"]
)
def test_bad_repo_id(value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_model_repo=value))
    assert "sparkops_model_repo" in message
    assert repr(value) in message


@pytest.mark.parametrize("name", ["sparkops_model_revision", "sparkops_served_model_name"])
@pytest.mark.parametrize("value", ["", "   ", 7, "main\n", "my model"])
def test_empty_or_non_string_names(name: str, value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(**{name: value}))
    assert name in message
    assert "non-empty string" in message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (0, "positive integer"),
        (-1, "positive integer"),
        ("abc", "positive integer"),
        (True, "positive integer"),
        (8000.0, "positive integer"),
        (70000, "1-65535"),
        (65536, "1-65535"),
    ],
)
def test_bad_serve_port(value: t.Any, fragment: str) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_serve_port=value))
    assert "sparkops_serve_port" in message
    assert fragment in message


@pytest.mark.parametrize("value", [0, 0.0, -0.1, 1.5, 1.0000001, "abc", True, False, [0.9], float("nan")])
def test_bad_gpu_memory_utilization(value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_gpu_memory_utilization=value))
    assert "sparkops_gpu_memory_utilization" in message
    assert "(0, 1]" in message


@pytest.mark.parametrize("name", ["sparkops_tensor_parallel_size", "sparkops_pipeline_parallel_size", "sparkops_gpus_per_node"])
@pytest.mark.parametrize("value", ["two", "2.0", 2.0, 0, -2, True, False, [2], " 2 ", "0_2", "-2"])
def test_bad_parallel_sizes(name: str, value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(**{name: value}))
    assert name in message
    assert "positive integer" in message
    assert repr(value) in message


@pytest.mark.parametrize(
    ("tp", "pp", "gpus", "nodes"),
    [(1, 1, 1, 2), (4, 1, 1, 2), (2, 2, 1, 2), (4, 1, 2, 4), (16, 1, 1, 4)],
)
def test_world_size_must_match_capacity(tp: int, pp: int, gpus: int, nodes: int) -> None:
    groups, fabric_ips = make_inventory(nodes)
    cluster = make_cluster(sparkops_tensor_parallel_size=tp, sparkops_pipeline_parallel_size=pp, sparkops_gpus_per_node=gpus)
    message = only_problem(groups, fabric_ips, cluster)
    assert "sparkops_tensor_parallel_size" in message
    assert "sparkops_pipeline_parallel_size" in message
    assert "sparkops_gpus_per_node" in message
    assert f"= {tp * pp} GPUs" in message
    assert f"= {nodes * gpus} GPUs" in message


# --- fabric addressing ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["spark-head", "spark-worker1"])
@pytest.mark.parametrize("how", ["absent", "none"])
def test_missing_fabric_ip_names_host(host: str, how: str) -> None:
    groups, fabric_ips = make_inventory(2)
    if how == "absent":
        del fabric_ips[host]
    else:
        fabric_ips[host] = None
    message = only_problem(groups, fabric_ips, make_cluster())
    assert f"host {host} " in message
    assert FABRIC_IP_VAR in message


@pytest.mark.parametrize("value", ["fe80::1", "2001:db8::12", "192.168.200", "192.168.200.256", "192.168.200.12/24", "spark-worker1", "", "192.168.200.012"])
def test_non_ipv4_fabric_ip(value: str) -> None:
    groups, fabric_ips = make_inventory(2)
    fabric_ips["spark-worker1"] = value
    message = only_problem(groups, fabric_ips, make_cluster())
    assert "spark-worker1" in message
    assert FABRIC_IP_VAR in message
    assert "IPv4 address" in message
    assert repr(value) in message


@pytest.mark.parametrize("value", ["192.168.201.12", "10.0.0.12", "192.168.200.0", "192.168.200.255"])
def test_fabric_ip_not_a_host_address_in_subnet(value: str) -> None:
    groups, fabric_ips = make_inventory(2)
    fabric_ips["spark-worker1"] = value
    message = only_problem(groups, fabric_ips, make_cluster())
    assert "host spark-worker1" in message
    assert value in message
    assert "sparkops_fabric_subnet 192.168.200.0/24" in message


def test_fabric_ip_in_smaller_subnet() -> None:
    groups, fabric_ips = make_inventory(2)
    fabric_ips["spark-worker1"] = "192.168.200.20"
    cluster = make_cluster(sparkops_fabric_subnet="192.168.200.8/29")
    message = only_problem(groups, fabric_ips, cluster)
    assert "spark-worker1" in message
    assert "spark-head" not in message


def test_duplicate_fabric_ips_name_both_hosts() -> None:
    groups, fabric_ips = make_inventory(3)
    cluster = make_cluster(sparkops_tensor_parallel_size=3)
    fabric_ips["spark-worker2"] = fabric_ips["spark-worker1"]
    message = only_problem(groups, fabric_ips, cluster)
    assert "spark-worker1" in message
    assert "spark-worker2" in message
    assert "192.168.200.12" in message


def test_duplicate_fabric_ips_with_head() -> None:
    groups, fabric_ips = make_inventory(2)
    fabric_ips["spark-worker1"] = fabric_ips["spark-head"]
    message = only_problem(groups, fabric_ips, make_cluster())
    assert "spark-head" in message
    assert "spark-worker1" in message


@pytest.mark.parametrize("value", ["not-a-subnet", "192.168.200.1/24", "192.168.200.0/33", "2001:db8::/64", "", 24, "192.168.200.0"])
def test_bad_subnet(value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_fabric_subnet=value))
    assert "sparkops_fabric_subnet" in message
    assert repr(value) in message


# --- several problems at once --------------------------------------------------------------------


def test_all_problems_are_reported_together() -> None:
    groups = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: ["spark-worker1", "spark-worker2", "spark-worker3"]}
    fabric_ips = {
        "spark-head": "192.168.200.11",
        "spark-worker1": None,
        "spark-worker2": "not-an-ip",
        "spark-worker3": "192.168.200.11",
    }
    cluster = make_cluster(
        sparkops_model_repo="no-slash",
        sparkops_model_revision="",
        sparkops_serve_port=70000,
        sparkops_gpu_memory_utilization=1.5,
        sparkops_tensor_parallel_size=0,
    )
    problems = problems_of(groups, fabric_ips, cluster)
    expected = [
        "sparkops_model_repo",
        "sparkops_model_revision",
        "sparkops_serve_port",
        "sparkops_gpu_memory_utilization",
        f"host spark-worker1 has no {FABRIC_IP_VAR}",
        "host spark-worker2: ",
        "host spark-worker3: ",
        "sparkops_tensor_parallel_size",
    ]
    assert len(problems) == len(expected), problems
    for fragment in expected:
        assert any(fragment in p for p in problems), (fragment, problems)
    duplicate = next(p for p in problems if p.startswith("host spark-worker3"))
    assert "spark-head" in duplicate


def test_group_and_variable_problems_are_reported_together() -> None:
    groups: dict[str, list[str]] = {HEAD_GROUP: [], WORKER_GROUP: []}
    cluster = make_cluster()
    del cluster["sparkops_serve_port"]
    problems = problems_of(groups, {}, cluster)
    assert len(problems) == 3, problems
    assert HEAD_GROUP in problems[0]
    assert WORKER_GROUP in problems[1]
    assert "sparkops_serve_port" in problems[2]


def test_contract_error_is_a_value_error() -> None:
    error = ContractError(["a", "b"])
    assert isinstance(error, ValueError)
    assert error.problems == ["a", "b"]
    assert str(error) == "a; b"


def test_worker_listed_twice_counts_once() -> None:
    groups, fabric_ips = make_inventory(2)
    groups[WORKER_GROUP] = ["spark-worker1", "spark-worker1"]
    plan = validate(groups, fabric_ips, make_cluster())
    assert plan.workers == ("spark-worker1",)
