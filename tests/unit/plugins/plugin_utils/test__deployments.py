# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sparkops_deployments: the deployments the plan carries, their defaults, and every problem at once, each naming the
deployment and the key; and the contract that refuses what the roles do not serve yet."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import HEAD_GROUP, WORKER_GROUP, ContractError, validate
from ansible_collections.sparkops.inference.plugins.plugin_utils._deployments import beyond_the_roles, models, plan, port_claims

NODES = ["spark-head", "spark-worker1", "spark-worker2"]
# The settings a listed entry defaults to (the cluster variables of its serving settings), and sparkops_gpus_per_node.
SETTINGS = {"sparkops_serve_port": 8000, "sparkops_gpu_memory_utilization": 0.45}
GROUPS = {HEAD_GROUP: ["spark-head"], WORKER_GROUP: ["spark-worker1"]}
FABRIC_IPS = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"}
BASE = {"sparkops_gpus_per_node": 1, "sparkops_fabric_subnet": "192.168.200.0/24"}


def deployments(given: t.Any, cluster: dict[str, t.Any] | None = None, gpus: int = 1) -> list[dict[str, t.Any]]:
    found, problems = plan(given, SETTINGS if cluster is None else cluster, NODES, gpus)
    assert problems == [], problems
    return found


def problems_of(given: t.Any, cluster: dict[str, t.Any] | None = None, gpus: int | None = 1) -> list[str]:
    problems = plan(given, SETTINGS if cluster is None else cluster, NODES, gpus)[1]
    assert problems
    return problems


def test_unset_the_cluster_variables_make_one_deployment_on_every_node() -> None:
    cluster = {"sparkops_model_repo": "org/big", "sparkops_model_revision": "abc", "sparkops_served_model_name": "big",
               "sparkops_tensor_parallel_size": "3", "sparkops_pipeline_parallel_size": 1, **SETTINGS}  # fmt: skip
    assert deployments(None, cluster) == [{
        "name": "default", "model": "org/big", "revision": "abc", "served_model_name": "big", "nodes": NODES, "head": "spark-head",
        "tensor_parallel_size": 3, "pipeline_parallel_size": 1, "port": 8000, "gpu_memory_utilization": 0.45, "extra_args": [], "env": {},
    }]  # fmt: skip


def test_an_entry_with_a_name_and_a_model_takes_every_node_its_gpus_and_the_cluster_s_serving_settings() -> None:
    (entry,) = deployments([{"name": "big", "model": "org/big"}], gpus=2)
    assert entry == {
        "name": "big", "model": "org/big", "revision": "main", "served_model_name": "org/big", "nodes": NODES, "head": "spark-head",
        "tensor_parallel_size": 6, "pipeline_parallel_size": 1, "port": 8000, "gpu_memory_utilization": 0.45, "extra_args": [], "env": {},
    }  # fmt: skip


def test_every_key_given() -> None:
    given = {"name": "small", "model": "org/small", "revision": "r1", "served_model_name": "s", "nodes": ["spark-worker2", "spark-worker1"],
             "tensor_parallel_size": 1, "pipeline_parallel_size": "2", "port": "8001", "gpu_memory_utilization": "0.3",
             "extra_args": ["--max-model-len", 4096], "env": {"VLLM_LOGGING_LEVEL": "DEBUG", "FLAG": True}}  # fmt: skip
    (entry,) = deployments([given])
    # Its nodes in the plan's order: its rank 0 (which serves its API) is the first of them.
    assert entry["nodes"] == ["spark-worker1", "spark-worker2"] and entry["head"] == "spark-worker1"
    assert (entry["tensor_parallel_size"], entry["pipeline_parallel_size"], entry["port"], entry["gpu_memory_utilization"]) == (1, 2, 8001, 0.3)
    assert entry["extra_args"] == ["--max-model-len", "4096"] and entry["env"] == {"VLLM_LOGGING_LEVEL": "DEBUG", "FLAG": "true"}


def test_a_second_model_on_one_node_beside_one_on_every_node() -> None:
    big, small = deployments([
        {"name": "big", "model": "org/big", "gpu_memory_utilization": 0.6},
        {"name": "small", "model": "org/small", "nodes": "spark-worker2", "port": 8001, "gpu_memory_utilization": 0.3},
    ])  # fmt: skip
    assert (big["nodes"], big["tensor_parallel_size"]) == (NODES, 3)
    assert (small["nodes"], small["head"], small["tensor_parallel_size"]) == (["spark-worker2"], "spark-worker2", 1)
    assert port_claims([big, small], listed=True) == [
        ("sparkops_deployments[0] (big) port 8000", "vLLM's API of deployment big", 8000),
        ("sparkops_deployments[1] (small) port 8001", "vLLM's API of deployment small", 8001),
    ]


def test_every_problem_at_once_each_naming_the_deployment_and_the_key() -> None:
    problems = problems_of([
        {"name": "Big_One", "model": "org/big", "nodes": ["spark-head", "spark-9", "spark-head"], "tensor_parallel_size": 4},
        {"name": "small", "model": "not a repo", "port": 70000, "gpu_memory_utilization": 0, "colour": "red"},
        {"name": "small", "model": "org/s", "extra_args": "--enforce-eager", "env": {"1BAD": "x", "GOOD": ["a"]}},
        "just a string",
    ])  # fmt: skip
    assert problems == [
        "sparkops_deployments[0] (Big_One): name must be 1 to 32 lowercase letters, digits and inner hyphens (it names the deployment's units and "
        "folders), got 'Big_One'",
        "sparkops_deployments[0] (Big_One): nodes names 'spark-9', which is not a host of spark_head or spark_workers (spark-head, spark-worker1, "
        "spark-worker2)",
        "sparkops_deployments[0] (Big_One): nodes names 'spark-head' twice",
        "sparkops_deployments[0] (Big_One): tensor_parallel_size (4) x pipeline_parallel_size (1) = 4 GPUs, but its nodes (spark-head) have 1 x "
        "sparkops_gpus_per_node (1) = 1 GPUs; make them equal so every node of the deployment serves",
        "sparkops_deployments[1] (small): unknown key(s) colour; a deployment takes name, model, revision, served_model_name, nodes, "
        "tensor_parallel_size, pipeline_parallel_size, port, gpu_memory_utilization, extra_args, env",
        "sparkops_deployments[1] (small): model must be a Hugging Face repo id like 'Qwen/Qwen3.5-122B-A10B-FP8', got 'not a repo'",
        "sparkops_deployments[1] (small): port must be a TCP port (1-65535), got 70000",
        "sparkops_deployments[1] (small): gpu_memory_utilization must be a fraction in (0, 1], got 0",
        "sparkops_deployments[2] (small): name 'small' is also the name of sparkops_deployments[1]",
        "sparkops_deployments[2] (small): extra_args must be a list of strings (vLLM's flags and their values, one per item), got '--enforce-eager'",
        "sparkops_deployments[2] (small): env must be a mapping whose keys are environment variable names ([A-Za-z_][A-Za-z0-9_]*), got '1BAD'",
        "sparkops_deployments[2] (small): env.GOOD must be a value on one line, got ['a']",
        "sparkops_deployments[3] must be a mapping with name and model, got 'just a string'",
    ]


def test_memory_shares_over_a_node_s_whole_are_refused_per_node() -> None:
    problems = problems_of([
        {"name": "big", "model": "org/big", "gpu_memory_utilization": 0.7},
        {"name": "small", "model": "org/small", "nodes": ["spark-worker1"], "port": 8001, "gpu_memory_utilization": 0.4},
        {"name": "tiny", "model": "org/tiny", "nodes": ["spark-worker2"], "port": 8002, "gpu_memory_utilization": 0.3},
    ])  # fmt: skip
    assert problems == [
        "host spark-worker1: the deployments on it take 1.1 of its memory in gpu_memory_utilization (big 0.7, small 0.4), more than all of it; "
        "lower them so they add up to at most 1 (on unified memory, leave the system room: about 0.9)"
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ([], "sparkops_deployments is empty: removing the last deployment is refused; to stop serving and remove everything, run playbooks/teardown.yml"),
        ({"name": "big"}, "sparkops_deployments must be a list of deployments (mappings with name and model), got {'name': 'big'}"),
        ([{"model": "org/m"}], "sparkops_deployments[0]: name must be 1 to 32 lowercase letters"),
        ([{"name": "a-"}], "sparkops_deployments[0] (a-): name must be 1 to 32 lowercase letters"),
        ([{"name": "x" * 33}], "name must be 1 to 32 lowercase letters"),
        ([{"name": "m"}], "sparkops_deployments[0] (m): model must be a Hugging Face repo id"),
        (
            [{"name": "m", "model": "o/m", "nodes": []}],
            "sparkops_deployments[0] (m): nodes must be 'all' or a non-empty list of the inventory's Sparks, got []",
        ),
        (
            [{"name": "m", "model": "o/m", "pipeline_parallel_size": 2}],
            "sparkops_deployments[0] (m): pipeline_parallel_size (2) does not divide its 3 GPUs; set tensor_parallel_size too",
        ),
        (
            [{"name": "m", "model": "o/m", "tensor_parallel_size": True}],
            "sparkops_deployments[0] (m): tensor_parallel_size must be a positive integer, got True",
        ),
        (
            [{"name": "m", "model": "o/m", "env": "A=1"}],
            "sparkops_deployments[0] (m): env must be a mapping of environment variable names to values, got 'A=1'",
        ),
    ],
)
def test_bad_input_names_the_variable(given: t.Any, said: str) -> None:
    assert any(said in problem for problem in problems_of(given)), problems_of(given)


def test_a_setting_neither_in_the_entry_nor_in_the_cluster_variables_is_named() -> None:
    assert problems_of([{"name": "m", "model": "o/m"}], cluster={}) == [
        "sparkops_deployments[0] (m): port is not set, here nor in the cluster variable sparkops_serve_port",
        "sparkops_deployments[0] (m): gpu_memory_utilization is not set, here nor in the cluster variable sparkops_gpu_memory_utilization",
    ]


def test_the_model_s_cluster_variables_beside_the_list_are_refused() -> None:
    problems = problems_of([{"name": "m", "model": "o/m"}], cluster={**SETTINGS, "sparkops_model_repo": "o/m", "sparkops_tensor_parallel_size": 3})
    assert problems == [
        "sparkops_model_repo is set beside sparkops_deployments: each deployment names its own model; move it into the list's entries",
        "sparkops_tensor_parallel_size is set beside sparkops_deployments: each deployment names its own tensor_parallel_size; move it into the list's entries",
    ]


def test_the_roles_serve_one_deployment_across_every_node_so_far() -> None:
    one = deployments([{"name": "big", "model": "org/big"}])
    assert beyond_the_roles(one, NODES) == []
    two = deployments([{"name": "big", "model": "org/big", "gpu_memory_utilization": 0.5}, {"name": "s", "model": "o/s", "nodes": ["spark-head"], "port": 9}])
    assert beyond_the_roles(two, NODES) == [
        "sparkops_deployments lists 2 deployments (big, s): the roles serve one deployment across every node so far; list one (nodes: all), "
        "or leave the variable unset and use the cluster variables"
    ]
    part = deployments([{"name": "s", "model": "o/s", "nodes": ["spark-head", "spark-worker2"]}])
    assert beyond_the_roles(part, NODES) == [
        "sparkops_deployments[0] (s): nodes spark-head, spark-worker2 leave out spark-worker1: the roles serve a deployment across every node so far; "
        "use nodes: all, or take the node out of the inventory"
    ]


# --- through the contract ------------------------------------------------------------------------------------------


def test_the_contract_puts_a_listed_deployment_in_the_plan_with_no_model_variables() -> None:
    cluster = {**BASE, "sparkops_serve_port": 8100, "sparkops_gpu_memory_utilization": 0.8, "sparkops_deployments": [{"name": "big", "model": "org/big"}]}
    got = validate(GROUPS, FABRIC_IPS, cluster).as_dict()
    assert got["deployments"] == [{
        "name": "big", "model": "org/big", "revision": "main", "served_model_name": "org/big", "nodes": ["spark-head", "spark-worker1"],
        "head": "spark-head", "tensor_parallel_size": 2, "pipeline_parallel_size": 1, "port": 8100, "gpu_memory_utilization": 0.8,
        "extra_args": [], "env": {},
    }]  # fmt: skip
    assert got["world_size"] == 2


def test_the_contract_refuses_two_deployments_on_one_port_with_every_other_problem() -> None:
    cluster = {**BASE, "sparkops_gpu_memory_utilization": 0.5, "sparkops_deployments": [
        {"name": "big", "model": "org/big", "port": 8000},
        {"name": "small", "model": "org/small", "nodes": ["spark-worker1"], "port": 8000},
        {"name": "ray", "model": "org/small", "nodes": ["spark-head"], "port": 6379},
    ]}  # fmt: skip
    with pytest.raises(ContractError) as caught:
        validate(GROUPS, FABRIC_IPS, cluster, ports={"vllm_serve_port": 8000})
    # Memory: big and ray take 0.5 each on the head (1, not more); small 0.5 beside big on the worker.
    assert caught.value.problems == [
        "sparkops_deployments lists 3 deployments (big, small, ray): the roles serve one deployment across every node so far; list one (nodes: all), "
        "or leave the variable unset and use the cluster variables",
        "vllm_serve_port is set beside sparkops_deployments: set each deployment's port in its entry",
        "sparkops_deployments[0] (big) port 8000 (vLLM's API of deployment big) clashes with sparkops_deployments[1] (small) port 8000 (vLLM's API of "
        "deployment small): every service needs its own port",
        "sparkops_deployments[2] (ray) port 6379 (vLLM's API of deployment ray) clashes with sparkops_ray_port 6379 (Ray's GCS, ray start --port): "
        "every service needs its own port",
    ]


def test_the_contract_without_the_list_keeps_the_cluster_variables_rules() -> None:
    with pytest.raises(ContractError) as caught:
        validate(GROUPS, FABRIC_IPS, {**BASE, "sparkops_serve_port": 8000, "sparkops_gpu_memory_utilization": 0.8})
    assert caught.value.problems == [f"cluster variable {name} is not set" for name in (
        "sparkops_model_repo", "sparkops_model_revision", "sparkops_served_model_name", "sparkops_tensor_parallel_size", "sparkops_pipeline_parallel_size",
    )]  # fmt: skip


# --- the models model_sync fetches ---------------------------------------------------------------------------------


def test_each_model_once_with_the_nodes_that_serve_it() -> None:
    listed = deployments([
        {"name": "big", "model": "org/big", "nodes": ["spark-head", "spark-worker1"], "gpu_memory_utilization": 0.4},
        {"name": "small", "model": "org/small", "nodes": ["spark-worker2"], "port": 8001},
        {"name": "big2", "model": "org/big", "nodes": ["spark-worker2"], "port": 8002, "gpu_memory_utilization": 0.4},
        {"name": "old", "model": "org/big", "revision": "v1", "nodes": ["spark-head"], "port": 8003, "gpu_memory_utilization": 0.4},
    ])  # fmt: skip
    assert models(listed, None, NODES) == [
        {"repo_id": "org/big", "revision": "main", "nodes": NODES},  # two deployments at one revision: fetched once
        {"repo_id": "org/small", "revision": "main", "nodes": ["spark-worker2"]},
        {"repo_id": "org/big", "revision": "v1", "nodes": ["spark-head"]},
    ]


def test_the_draft_model_beside_the_first_deployment_s_model() -> None:
    listed = deployments([{"name": "big", "model": "org/big", "nodes": ["spark-head", "spark-worker1"], "tensor_parallel_size": 2}])
    assert models(listed, {"repo_id": "org/draft", "revision": "r1", "tensor_parallel_size": None}, NODES) == [
        {"repo_id": "org/big", "revision": "main", "nodes": ["spark-head", "spark-worker1"]},
        {"repo_id": "org/draft", "revision": "r1", "nodes": ["spark-head", "spark-worker1"]},
    ]
    # A draft model that is the model itself (same revision) is fetched once.
    assert models(listed, {"repo_id": "org/big", "revision": "main"}, NODES) == [
        {"repo_id": "org/big", "revision": "main", "nodes": ["spark-head", "spark-worker1"]}
    ]


def test_a_deployment_with_no_model_fetches_nothing() -> None:
    """The cluster variables unset (a role run alone; the contract refuses it): nothing to fetch, no None repo."""
    assert models(plan(None, {}, NODES, 1)[0], None, NODES) == []
