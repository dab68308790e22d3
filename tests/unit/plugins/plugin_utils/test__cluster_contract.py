# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private plugin util _cluster_contract."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import (
    CLUSTER_VARS,
    FABRIC_IP_VAR,
    HEAD_GROUP,
    WORKER_GROUP,
    ClusterPlan,
    ContractError,
    TopologyError,
    topology,
    validate,
)

AS_DICT_KEYS = {"head", "workers", "nodes", "fabric_ips", "head_fabric_ip", "fabric_subnet", "world_size"}
AS_DICT_KEYS |= {"fabric_env_file", "ray_venv", "ray_port", "hf_home", "ray_units", "backend"}  # the shared paths and ports, the backend
AS_DICT_KEYS |= {"deployments"}  # _deployments.plan(): tests/unit/plugins/plugin_utils/test__deployments.py
RAY_UNITS = {"head": "sparkops-ray-head.service", "worker": "sparkops-ray-worker.service"}
SHARED_DEFAULTS = {
    "fabric_env_file": "/etc/sparkops/fabric.env",
    "ray_venv": "/opt/sparkops/ray",
    "ray_port": 6379,
    "hf_home": "/var/lib/sparkops/huggingface",
    "ray_units": RAY_UNITS,
    "backend": "mp",
}


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


def problems_of(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any], cluster: dict[str, t.Any], **more: t.Any) -> list[str]:
    with pytest.raises(ContractError) as excinfo:
        validate(groups, fabric_ips, cluster, **more)
    problems = excinfo.value.problems
    assert problems, "ContractError raised with no problems"
    assert str(excinfo.value) == "; ".join(problems)
    return problems


def only_problem(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any], cluster: dict[str, t.Any], **more: t.Any) -> str:
    problems = problems_of(groups, fabric_ips, cluster, **more)
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
    assert {key: as_dict[key] for key in SHARED_DEFAULTS} == SHARED_DEFAULTS


def test_shared_paths_and_ports_from_the_inventory_reach_the_plan() -> None:
    groups, fabric_ips = make_inventory(2)
    cluster = make_cluster(sparkops_fabric_env_file="/srv/fabric.env", sparkops_ray_venv="/srv/ray", sparkops_ray_port="6400", sparkops_hf_home="/data/hf")
    as_dict = validate(groups, fabric_ips, cluster).as_dict()
    assert {key: as_dict[key] for key in SHARED_DEFAULTS} == {
        "fabric_env_file": "/srv/fabric.env",
        "ray_venv": "/srv/ray",
        "ray_port": 6400,
        "hf_home": "/data/hf",
        "ray_units": RAY_UNITS,
        "backend": "mp",
    }


@pytest.mark.parametrize("backend", ["mp", "ray"])
def test_the_inventorys_backend_reaches_the_plan(backend: str) -> None:
    groups, fabric_ips = make_inventory(2)
    assert validate(groups, fabric_ips, make_cluster(vllm_serve_backend=backend)).as_dict()["backend"] == backend


@pytest.mark.parametrize("value", ["Ray", "uni", "", 1])
def test_a_backend_vllm_has_no_multi_node_mode_for_is_refused(value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(vllm_serve_backend=value))
    assert message == f"vllm_serve_backend must be one of mp, ray, got {value!r}"


@pytest.mark.parametrize("name", ["sparkops_fabric_env_file", "sparkops_ray_venv", "sparkops_hf_home"])
@pytest.mark.parametrize("value", ["relative/path", "/", "", "/a\nb", 5])
def test_a_shared_path_must_be_absolute(name: str, value: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(**{name: value}))
    assert message == f"{name} must be an absolute path below / on one line, got {value!r}"


@pytest.mark.parametrize(("value", "fragment"), [("abc", "positive integer"), (0, "positive integer"), (True, "positive integer"), (65536, "1-65535")])
def test_a_bad_ray_port_is_refused(value: t.Any, fragment: str) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_ray_port=value))
    assert message.startswith("sparkops_ray_port must be") and fragment in message


def test_the_ray_port_clashes_with_another_service() -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_ray_port=29501))
    assert message == (
        "sparkops_ray_port 29501 (Ray's GCS, ray start --port) clashes with vllm_serve_master_port 29501 (vLLM's mp rendezvous, --master-port): "
        "every service needs its own port"
    )


def test_ray_cluster_port_defaults_to_the_ray_port() -> None:
    """ray_cluster_port unset takes sparkops_ray_port; set to it, it is one service; set elsewhere, both are claimed."""
    groups, fabric_ips = make_inventory(2)
    validate(groups, fabric_ips, make_cluster(sparkops_ray_port=6400), ports={"ray_cluster_port": 6400})
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_ray_port=6400, sparkops_serve_port=6379), ports={"ray_cluster_port": 6379})
    assert "sparkops_serve_port 6379" in message and "ray_cluster_port 6379" in message


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


# --- hostile input (issue 15): unusable fabric subnets --------------------------------------------


def inventory_in(subnet: str) -> tuple[dict[str, list[str]], dict[str, t.Any]]:
    """A head and one worker at the first two host addresses of ``subnet``: an inventory consistent with it."""
    import ipaddress

    network = ipaddress.IPv4Network(subnet)
    groups = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: ["spark-worker1"]}
    return groups, {"spark-head": str(network.network_address + 1), "spark-worker1": str(network.network_address + 2)}


@pytest.mark.parametrize(
    ("subnet", "fragment"),
    [
        ("0.0.0.0/0", "too wide"),
        ("128.0.0.0/1", "too wide"),
        ("16.0.0.0/4", "too wide"),
        ("224.0.0.0/4", "too wide"),
        ("10.0.0.0/7", "too wide"),
        ("127.0.0.0/8", "loopback"),
        ("127.0.0.0/24", "loopback"),
        ("224.0.0.0/24", "multicast"),
        ("239.255.0.0/16", "multicast"),
        ("0.0.0.0/8", "unspecified"),
        ("0.0.0.0/24", "unspecified"),
        ("240.0.0.0/24", "reserved"),
        ("255.255.255.0/24", "reserved"),
    ],
)
def test_unusable_fabric_subnet_is_refused(subnet: str, fragment: str) -> None:
    groups, fabric_ips = inventory_in(subnet)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_fabric_subnet=subnet))
    assert message.startswith(f"sparkops_fabric_subnet {subnet} "), message
    assert fragment in message


@pytest.mark.parametrize("subnet", ["10.0.0.0/8", "172.16.0.0/12", "100.64.0.0/10", "192.168.200.0/24", "192.168.200.8/29", "169.254.0.0/16", "169.254.3.0/24"])
def test_usable_fabric_subnet_is_accepted(subnet: str) -> None:
    groups, fabric_ips = inventory_in(subnet)
    plan = validate(groups, fabric_ips, make_cluster(sparkops_fabric_subnet=subnet))
    assert plan.fabric_subnet == subnet


# --- hostile input: the fabric subnet over the management network -------------------------------


def test_management_address_inside_the_fabric_subnet_is_refused() -> None:
    groups, fabric_ips = inventory_in("10.0.0.0/8")
    management = {"spark-head": "10.89.200.51", "spark-worker1": "spark-worker1.lan"}
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_fabric_subnet="10.0.0.0/8"), management=management)
    assert message.startswith("host spark-head: "), message
    assert "ansible_host 10.89.200.51" in message
    assert "sparkops_fabric_subnet 10.0.0.0/8" in message


def test_management_address_of_another_host_on_the_fabric_is_refused() -> None:
    groups, fabric_ips = make_inventory(2)
    management = {"spark-head": "192.168.200.12", "spark-worker1": "192.168.200.12"}
    message = only_problem(groups, fabric_ips, make_cluster(), management=management)
    assert message.startswith("host spark-head: "), message
    assert "192.168.200.12" in message
    assert f"{FABRIC_IP_VAR} 192.168.200.11" in message


@pytest.mark.parametrize(
    "management",
    [
        {"spark-head": "10.89.200.51", "spark-worker1": "192.168.200.12"},  # the lab and inventories/sparks: a worker reached over the fabric
        {"spark-head": "spark-head.example.org", "spark-worker1": "spark-worker1"},
        {"spark-head": "127.0.0.1", "spark-worker1": "fd00::12"},
        {"spark-head": None},
        {},
    ],
)
def test_management_addresses_apart_from_the_fabric_are_accepted(management: dict[str, t.Any]) -> None:
    groups, fabric_ips = make_inventory(2)
    plan = validate(groups, fabric_ips, make_cluster(), management=management)
    assert plan.head == "spark-head"


# --- hostile input: port clashes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("port", "words"),
    [
        (22, ["SSH"]),
        (6379, ["sparkops_ray_port 6379", "Ray's GCS"]),
        ("6379", ["sparkops_ray_port 6379"]),
        (10001, ["port 10001", "Ray's client server"]),
        (8265, ["ray_cluster_dashboard_port 8265", "Ray's dashboard"]),
        (52365, ["port 52365", "Ray's dashboard agent"]),
        (29501, ["vllm_serve_master_port 29501"]),
        (29560, ["vllm_serve_group_port 29560"]),
        (10002, ["Ray's worker ports 10002-19999"]),
        (19999, ["Ray's worker ports 10002-19999"]),
    ],
)
def test_serve_port_on_another_service_port_is_refused(port: t.Any, words: list[str]) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(sparkops_serve_port=port))
    assert message.startswith(f"sparkops_serve_port {port} (vLLM's API) "), message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("ports", "words"),
    [
        ({"ray_cluster_port": 8000}, ["sparkops_serve_port 8000", "ray_cluster_port 8000"]),
        ({"vllm_serve_port": 22}, ["vllm_serve_port 22", "SSH"]),
        ({"vllm_serve_master_port": 6379}, ["sparkops_ray_port 6379", "vllm_serve_master_port 6379"]),
        ({"vllm_serve_group_port": "29501"}, ["vllm_serve_master_port 29501", "vllm_serve_group_port 29501"]),
        ({"ray_cluster_dashboard_port": 22}, ["ray_cluster_dashboard_port 22", "SSH"]),
        ({"ray_cluster_port": 10001}, ["ray_cluster_port 10001", "Ray's client server"]),
        ({"vllm_serve_master_port": 15000}, ["vllm_serve_master_port 15000", "Ray's worker ports 10002-19999"]),
    ],
)
def test_role_ports_that_clash_are_refused(ports: dict[str, t.Any], words: list[str]) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(), ports=ports)
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--ray-client-server-port", "8000"], ["ray_cluster_extra_args --ray-client-server-port 8000", "sparkops_serve_port 8000"]),
        (["--dashboard-agent-listen-port=29501"], ["ray_cluster_extra_args --dashboard-agent-listen-port 29501", "vllm_serve_master_port 29501"]),
        (["--node-manager-port", 8000], ["ray_cluster_extra_args --node-manager-port 8000", "sparkops_serve_port 8000"]),
        (["--worker-port-list=7000,8000"], ["Ray's worker port 8000", "sparkops_serve_port 8000"]),
        ("--metrics-export-port 6379", ["ray_cluster_extra_args --metrics-export-port 6379", "sparkops_ray_port 6379"]),
    ],
)
def test_ray_extra_args_ports_that_clash_are_refused(args: t.Any, words: list[str]) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(), ray_extra_args={"spark-head": args, "spark-worker1": None})
    for word in words:
        assert word in message


def test_ray_worker_port_range_moved_onto_vllm_ports_is_refused() -> None:
    groups, fabric_ips = make_inventory(2)
    args = ["--min-worker-port=20000", "--max-worker-port", "29999"]
    problems = problems_of(groups, fabric_ips, make_cluster(), ray_extra_args={"spark-head": args, "spark-worker1": args})
    assert len(problems) == 2, problems
    assert "vllm_serve_master_port 29501" in problems[0] and "Ray's worker ports 20000-29999" in problems[0]
    assert "vllm_serve_group_port 29560" in problems[1] and "Ray's worker ports 20000-29999" in problems[1]


@pytest.mark.parametrize(
    ("serve_port", "ports", "extra"),
    [
        (8000, {}, None),
        (8080, {"ray_cluster_port": "6379", "vllm_serve_master_port": None}, None),
        (10001, {}, ["--ray-client-server-port=23000"]),  # the client server moved away frees 10001
        (12000, {}, ["--min-worker-port", "20000", "--max-worker-port", "20999"]),  # so does the worker range
        (8000, {"vllm_serve_port": 8000, "vllm_serve_master_port": 29600, "vllm_serve_group_port": 29601}, []),
        (8000, {}, ["--port=6379", "--node-manager-port=0", "--resources", '{"a": 1}']),  # 0: Ray picks a free port
    ],
)
def test_ports_apart_are_accepted(serve_port: int, ports: dict[str, t.Any], extra: t.Any) -> None:
    groups, fabric_ips = make_inventory(2)
    plan = validate(groups, fabric_ips, make_cluster(sparkops_serve_port=serve_port), ports=ports, ray_extra_args={"spark-head": extra})
    assert plan.world_size == 2


@pytest.mark.parametrize("name", ["ray_cluster_port", "ray_cluster_dashboard_port", "vllm_serve_port", "vllm_serve_master_port", "vllm_serve_group_port"])
@pytest.mark.parametrize(("value", "fragment"), [("abc", "positive integer"), (0, "positive integer"), (True, "positive integer"), (65536, "1-65535")])
def test_bad_role_port(name: str, value: t.Any, fragment: str) -> None:
    groups, fabric_ips = make_inventory(2)
    message = only_problem(groups, fabric_ips, make_cluster(), ports={name: value})
    assert name in message
    assert fragment in message


def test_role_port_defaults_match_the_roles() -> None:
    from pathlib import Path

    import yaml
    from ansible_collections.sparkops.inference.plugins.plugin_utils import _cluster_contract as contract

    roles = Path(__file__).resolve().parents[4] / "roles"
    defaults = {}
    for role in ("ray_cluster", "vllm_serve"):
        defaults.update(yaml.safe_load((roles / role / "defaults" / "main.yml").read_text()))
    assert set(contract.ROLE_PORT_VARS) == {
        "ray_cluster_port",
        "ray_cluster_dashboard_port",
        "vllm_serve_port",
        "vllm_serve_master_port",
        "vllm_serve_group_port",
    }
    for name, default in contract.ROLE_PORT_VARS.items():
        expected = None if name in contract.ROLE_PORT_DEFAULTS_TO else defaults[name]  # these default to a cluster variable
        assert default == expected, name
    assert defaults["vllm_serve_port"] == "{{ __vllm_serve_deployment.port }}"  # the deployment's: sparkops_serve_port unless listed
    assert defaults["ray_cluster_port"] == "{{ __ray_cluster_plan.ray_port }}"
    assert defaults["ray_cluster_extra_args"] == []


# --- hostile input: every problem at once --------------------------------------------------------


def test_subnet_and_port_problems_are_reported_together() -> None:
    groups, fabric_ips = make_inventory(2)
    problems = problems_of(groups, fabric_ips, make_cluster(sparkops_fabric_subnet="0.0.0.0/0", sparkops_serve_port=22))
    assert len(problems) == 2, problems
    assert problems[0].startswith("sparkops_fabric_subnet 0.0.0.0/0 ")
    assert problems[1].startswith("sparkops_serve_port 22 ")


def test_every_hostile_setting_is_reported_together() -> None:
    groups, fabric_ips = make_inventory(2)
    cluster = make_cluster(sparkops_serve_port=6379)
    problems = problems_of(
        groups,
        fabric_ips,
        cluster,
        management={"spark-head": "192.168.200.99", "spark-worker1": "192.168.200.12"},
        ports={"vllm_serve_master_port": 22},
    )
    assert len(problems) == 3, problems
    assert problems[0].startswith("host spark-head: ")
    assert any("sparkops_serve_port 6379" in p and "sparkops_ray_port 6379" in p for p in problems)
    assert any("vllm_serve_master_port 22" in p and "SSH" in p for p in problems)


def test_ray_extra_args_on_every_host_are_reported_once() -> None:
    groups, fabric_ips = make_inventory(2)
    args = ["--ray-client-server-port=8000"]
    message = only_problem(groups, fabric_ips, make_cluster(), ray_extra_args={"spark-head": args, "spark-worker1": args})
    assert "ray_cluster_extra_args --ray-client-server-port 8000" in message


def test_port_clash_is_reported_with_a_missing_cluster_variable() -> None:
    groups, fabric_ips = make_inventory(2)
    cluster = make_cluster(sparkops_serve_port=6379)
    del cluster["sparkops_model_repo"]
    problems = problems_of(groups, fabric_ips, cluster)
    assert len(problems) == 2, problems
    assert "sparkops_model_repo is not set" in problems[0]
    assert problems[1].startswith("sparkops_serve_port 6379 (vLLM's API) clashes with sparkops_ray_port 6379")


# topology(): the plan's hosts and addresses from the inventory alone (the cluster_topology filter, for roles run
# without the preflight).
TOPOLOGY_KEYS = ["head", "workers", "nodes", "fabric_ips", "head_fabric_ip", *SHARED_DEFAULTS, "deployments"]


def unset_deployment(nodes: list[str]) -> list[dict[str, t.Any]]:
    """The cluster variables' deployment where the head sets none of them (a role run alone; the contract refuses it)."""
    model = dict.fromkeys(("model", "revision", "served_model_name", "tensor_parallel_size", "pipeline_parallel_size", "port", "gpu_memory_utilization"))
    return [{"name": "default", **model, "nodes": nodes, "extra_args": [], "env": {}, "head": nodes[0]}]


def test_topology_of_a_valid_inventory_is_the_plans() -> None:
    groups, fabric_ips = make_inventory(4)
    cluster = make_cluster(sparkops_gpus_per_node=1, sparkops_tensor_parallel_size=4)
    got = topology(groups, None if fabric_ips is None else fabric_ips.get, lambda host, name: cluster.get(name) if host == "spark-head" else None)
    assert list(got) == TOPOLOGY_KEYS
    assert got == {key: value for key, value in validate(groups, fabric_ips, cluster).as_dict().items() if key in TOPOLOGY_KEYS}
    assert got["deployments"][0]["model"] == cluster["sparkops_model_repo"] and got["deployments"][0]["tensor_parallel_size"] == 4
    del got["deployments"]
    assert got == {
        "head": "spark-head",
        "workers": ["spark-worker1", "spark-worker2", "spark-worker3"],
        "nodes": ["spark-head", "spark-worker1", "spark-worker2", "spark-worker3"],
        "fabric_ips": {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13", "spark-worker3": "192.168.200.14"},
        "head_fabric_ip": "192.168.200.11",
        **SHARED_DEFAULTS,
    }


def test_topology_reads_the_shared_paths_and_ports_from_the_head() -> None:
    asked: list[tuple[str, str]] = []
    given = {"sparkops_ray_venv": "/srv/ray", "sparkops_ray_port": 6400, "vllm_serve_backend": "ray"}
    got = topology({HEAD_GROUP: ["h"], WORKER_GROUP: ["w"]}, None, lambda host, name: asked.append((host, name)) or given.get(name))
    assert {key: got[key] for key in SHARED_DEFAULTS} == {**SHARED_DEFAULTS, "ray_venv": "/srv/ray", "ray_port": 6400, "backend": "ray"}
    names = (
        "sparkops_fabric_env_file",
        "sparkops_ray_venv",
        "sparkops_ray_port",
        "sparkops_hf_home",
        "vllm_serve_backend",
        *CLUSTER_VARS,
        "sparkops_deployments",
    )
    assert asked == [("h", name) for name in names]


def test_topology_keeps_the_inventory_order_of_the_workers_and_drops_repeats() -> None:
    groups = {HEAD_GROUP: ["h"], WORKER_GROUP: ["w3", "w1", "w3", "w2"], "other": ["x"]}
    fabric_ips = {"h": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3", "w3": "10.0.0.4", "x": None}
    got = topology(groups, None if fabric_ips is None else fabric_ips.get)
    assert got["workers"] == ["w3", "w1", "w2"] and got["nodes"] == ["h", "w3", "w1", "w2"]
    assert got["fabric_ips"] == {"h": "10.0.0.1", "w3": "10.0.0.4", "w1": "10.0.0.2", "w2": "10.0.0.3"}


def test_topology_asks_for_each_nodes_address_once_and_no_other_hosts() -> None:
    asked: list[str] = []
    addresses = {"h": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3", "x": "10.0.0.9"}
    got = topology({HEAD_GROUP: ["h"], WORKER_GROUP: ["w1", "w2", "w1"], "other": ["x"]}, lambda host: asked.append(host) or addresses[host])
    assert asked == ["h", "w1", "w2"]
    assert got["fabric_ips"] == {"h": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3"}


def test_topology_takes_the_addresses_as_given() -> None:
    # validate() checks addresses; topology() only needs one per node, as the roles used them before the plan.
    got = topology({HEAD_GROUP: ["h"], WORKER_GROUP: ["w"]}, {"h": "spark-head.lan", "w": "10.0.0.2"}.get)
    assert got["head_fabric_ip"] == "spark-head.lan" and got["fabric_ips"] == {"h": "spark-head.lan", "w": "10.0.0.2"}


def test_topology_without_addresses_leaves_them_out_and_needs_none() -> None:
    got = topology({HEAD_GROUP: ["h"], WORKER_GROUP: ["w1", "w2"]}, None)
    assert got == {"head": "h", "workers": ["w1", "w2"], "nodes": ["h", "w1", "w2"], **SHARED_DEFAULTS, "deployments": unset_deployment(["h", "w1", "w2"])}


def test_topology_of_a_head_alone() -> None:
    assert topology({HEAD_GROUP: ["h"]}, {"h": "10.0.0.1"}.get) == {
        "head": "h",
        "workers": [],
        "nodes": ["h"],
        "fabric_ips": {"h": "10.0.0.1"},
        "head_fabric_ip": "10.0.0.1",
        **SHARED_DEFAULTS,
        "deployments": unset_deployment(["h"]),
    }


@pytest.mark.parametrize(
    ("groups", "fabric_ips", "said"),
    [
        ({WORKER_GROUP: ["w"]}, {"w": "10.0.0.2"}, "group spark_head must hold exactly one host, it holds 0: []"),
        ({HEAD_GROUP: [], WORKER_GROUP: ["w"]}, {"w": "10.0.0.2"}, "group spark_head must hold exactly one host, it holds 0: []"),
        ({HEAD_GROUP: ["h1", "h2"], WORKER_GROUP: ["w"]}, None, "group spark_head must hold exactly one host, it holds 2: ['h1', 'h2']"),
        ({HEAD_GROUP: ["h"], WORKER_GROUP: ["w", "h"]}, None, "host h is in both spark_head and spark_workers"),
        ({HEAD_GROUP: ["h"], WORKER_GROUP: ["w"]}, {"h": "10.0.0.1"}, "host w has no sparkops_fabric_ip"),
        ({HEAD_GROUP: ["h"], WORKER_GROUP: ["w"]}, {"h": None, "w": "10.0.0.2"}, "host h has no sparkops_fabric_ip"),
    ],
)
def test_topology_refuses_what_gives_no_cluster(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any] | None, said: str) -> None:
    with pytest.raises(TopologyError) as caught:
        topology(groups, None if fabric_ips is None else fabric_ips.get)
    assert str(caught.value) == said


@pytest.mark.parametrize(
    ("groups", "fabric_ips"),
    [
        ({HEAD_GROUP: ["h1", "h2"], WORKER_GROUP: ["w"]}, {"h1": "192.168.200.11", "h2": "192.168.200.12", "w": "192.168.200.13"}),
        ({HEAD_GROUP: ["h"], WORKER_GROUP: ["w"]}, {"h": "192.168.200.11"}),
        ({HEAD_GROUP: ["h"], WORKER_GROUP: ["w", "h"]}, {"h": "192.168.200.11", "w": "192.168.200.12"}),
    ],
)
def test_topology_says_what_the_contract_says(groups: dict[str, list[str]], fabric_ips: dict[str, t.Any]) -> None:
    with pytest.raises(TopologyError) as caught:
        topology(groups, None if fabric_ips is None else fabric_ips.get)
    assert str(caught.value) in problems_of(groups, fabric_ips, make_cluster())
