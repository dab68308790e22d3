# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the cluster_contract action plugin."""

from __future__ import annotations

import typing as t
from unittest.mock import MagicMock

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.sparkops.inference.plugins.action.cluster_contract import ActionModule
from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import CLUSTER_VARS
from ansible_collections.sparkops.inference.tests.unit.plugins.plugin_utils.test__cluster_contract import make_cluster

CLUSTER = make_cluster()
FABRIC_IPS = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13"}


def make_action() -> ActionModule:
    loader = DataLoader()
    task = MagicMock(args={}, async_val=0, check_mode=False, action="sparkops.inference.cluster_contract")
    return ActionModule(
        task=task,
        connection=MagicMock(),
        play_context=MagicMock(),
        loader=loader,
        templar=Templar(loader=loader),
        shared_loader_obj=None,
    )


def make_task_vars(workers: t.Sequence[str] = ("spark-worker1",), **cluster_overrides: t.Any) -> dict[str, t.Any]:
    hosts = ["spark-head", *workers]
    cluster = {**CLUSTER, **cluster_overrides}
    hostvars = {host: {**cluster, "sparkops_fabric_ip": FABRIC_IPS[host], "inventory_hostname": host} for host in hosts}
    return {
        "groups": {"all": hosts, "ungrouped": [], "spark_head": ["spark-head"], "spark_workers": list(workers)},
        "hostvars": hostvars,
        "inventory_hostname": "spark-head",
    }


def test_success_sets_fact_and_is_not_changed() -> None:
    result = make_action().run(task_vars=make_task_vars())
    assert not result.get("failed", False), result
    assert result["changed"] is False
    fact = result["ansible_facts"]["sparkops_cluster"]
    assert fact == result["cluster"]
    assert fact["head"] == "spark-head"
    assert fact["workers"] == ["spark-worker1"]
    assert fact["nodes"] == ["spark-head", "spark-worker1"]
    assert fact["fabric_ips"] == {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"}
    assert fact["head_fabric_ip"] == "192.168.200.11"
    assert fact["fabric_subnet"] == "192.168.200.0/24"
    assert fact["world_size"] == 2


def test_success_three_nodes() -> None:
    task_vars = make_task_vars(("spark-worker1", "spark-worker2"), sparkops_tensor_parallel_size=3)
    result = make_action().run(task_vars=task_vars)
    assert not result.get("failed", False), result
    assert result["ansible_facts"]["sparkops_cluster"]["workers"] == ["spark-worker1", "spark-worker2"]
    assert result["ansible_facts"]["sparkops_cluster"]["world_size"] == 3


@pytest.mark.parametrize(
    ("name", "other"),
    [
        ("sparkops_model_revision", "v2"),
        ("sparkops_serve_port", 8001),
        ("sparkops_tensor_parallel_size", "2"),
        ("sparkops_gpu_memory_utilization", 0.8),
    ],
)
def test_cluster_variable_differing_between_hosts_fails(name: str, other: t.Any) -> None:
    task_vars = make_task_vars()
    task_vars["hostvars"]["spark-worker1"][name] = other
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    assert "ansible_facts" not in result
    differing = [p for p in result["problems"] if "differs" in p]
    assert len(differing) == 1, result["problems"]
    message = differing[0]
    assert name in message
    assert f"spark-head={CLUSTER[name]!r}" in message
    assert f"spark-worker1={other!r}" in message
    assert message in result["msg"]


def test_cluster_variable_set_on_one_host_only_fails() -> None:
    task_vars = make_task_vars()
    del task_vars["hostvars"]["spark-worker1"]["sparkops_served_model_name"]
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    message = next(p for p in result["problems"] if "sparkops_served_model_name" in p)
    assert "spark-head='qwen'" in message
    assert "spark-worker1=None" in message


@pytest.mark.parametrize("name", CLUSTER_VARS)
def test_cluster_variable_missing_everywhere_is_reported(name: str) -> None:
    task_vars = make_task_vars()
    for hostvars in task_vars["hostvars"].values():
        del hostvars[name]
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    assert result["problems"] == [f"cluster variable {name} is not set"]
    assert name in result["msg"]


def test_contract_problems_appear_in_problems_and_msg() -> None:
    task_vars = make_task_vars(sparkops_serve_port=70000, sparkops_gpu_memory_utilization=1.5)
    task_vars["hostvars"]["spark-worker1"]["sparkops_fabric_ip"] = "192.168.200.11"
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    assert "ansible_facts" not in result
    problems = result["problems"]
    assert len(problems) == 3, problems
    assert any("sparkops_serve_port" in p for p in problems)
    assert any("sparkops_gpu_memory_utilization" in p for p in problems)
    assert any("spark-worker1" in p and "spark-head" in p for p in problems)
    assert result["msg"].startswith("The inventory breaks the sparkops.inference contract:")
    for problem in problems:
        assert f"\n- {problem}" in result["msg"]


def test_differing_variable_and_contract_problems_are_combined() -> None:
    task_vars = make_task_vars()
    task_vars["hostvars"]["spark-worker1"]["sparkops_model_revision"] = "other"
    del task_vars["hostvars"]["spark-worker1"]["sparkops_fabric_ip"]
    result = make_action().run(task_vars=task_vars)
    problems = result["problems"]
    assert len(problems) == 2, problems
    assert "sparkops_model_revision" in problems[0]
    assert "spark-worker1" in problems[1]
    assert "sparkops_fabric_ip" in problems[1]


def test_missing_head_group_fails() -> None:
    task_vars = make_task_vars()
    task_vars["groups"]["spark_head"] = []
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    assert any("spark_head" in p for p in result["problems"])


def test_host_without_hostvars_has_no_fabric_ip() -> None:
    task_vars = make_task_vars()
    del task_vars["hostvars"]["spark-worker1"]
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    assert any("spark-worker1" in p and "sparkops_fabric_ip" in p for p in result["problems"])


def test_no_task_vars_fails_cleanly() -> None:
    result = make_action().run(task_vars=None)
    assert result["failed"] is True
    assert any("spark_head" in p for p in result["problems"])
    assert any("spark_workers" in p for p in result["problems"])


def test_host_vars_go_through_the_templar() -> None:
    def render(value: t.Any) -> t.Any:
        return 8000 if value == "{{ serve_port }}" else value

    action = make_action()
    templar = MagicMock()
    templar.template.side_effect = render
    action._templar = templar
    task_vars = make_task_vars(sparkops_serve_port="{{ serve_port }}")
    result = action.run(task_vars=task_vars)
    assert not result.get("failed", False), result
    templar.template.assert_any_call("{{ serve_port }}")
    templar.template.assert_any_call("192.168.200.12")


# --- hostile input (issue 15) ---------------------------------------------------------------------


def lab_task_vars(**cluster_overrides: t.Any) -> dict[str, t.Any]:
    """The lab's shape: the head at its management address, the worker reached over the fabric at its fabric address."""
    task_vars = make_task_vars(**cluster_overrides)
    task_vars["hostvars"]["spark-head"]["ansible_host"] = "10.89.200.51"
    task_vars["hostvars"]["spark-worker1"]["ansible_host"] = "192.168.200.12"
    return task_vars


def test_the_labs_inventory_is_accepted() -> None:
    result = make_action().run(task_vars=lab_task_vars())
    assert not result.get("failed", False), result
    assert result["cluster"]["fabric_subnet"] == "192.168.200.0/24"


def only_problem_of(task_vars: dict[str, t.Any]) -> str:
    result = make_action().run(task_vars=task_vars)
    assert result.get("failed") is True, result
    assert "ansible_facts" not in result
    assert len(result["problems"]) == 1, result["problems"]
    assert result["problems"][0] in result["msg"]
    return str(result["problems"][0])


@pytest.mark.parametrize(("subnet", "fragment"), [("0.0.0.0/0", "too wide"), ("192.0.0.0/4", "too wide")])
def test_fabric_subnet_everything_is_refused(subnet: str, fragment: str) -> None:
    message = only_problem_of(lab_task_vars(sparkops_fabric_subnet=subnet))
    assert f"sparkops_fabric_subnet {subnet}" in message
    assert fragment in message


def test_fabric_subnet_over_the_heads_management_address_is_refused() -> None:
    task_vars = lab_task_vars()
    task_vars["hostvars"]["spark-head"]["ansible_host"] = "192.168.200.1"
    message = only_problem_of(task_vars)
    assert message.startswith("host spark-head: ")
    assert "ansible_host 192.168.200.1" in message


def test_management_address_is_the_inventory_name_when_ansible_host_is_unset() -> None:
    task_vars = make_task_vars()
    hostvars = task_vars["hostvars"]
    hostvars["192.168.200.5"] = {**hostvars.pop("spark-head"), "inventory_hostname": "192.168.200.5", "sparkops_fabric_ip": "192.168.200.11"}
    task_vars["groups"]["spark_head"] = ["192.168.200.5"]
    message = only_problem_of(task_vars)
    assert message.startswith("host 192.168.200.5: ")


@pytest.mark.parametrize(
    ("port", "word"), [(22, "SSH"), (6379, "sparkops_ray_port 6379"), (10001, "Ray's client server"), (29501, "vllm_serve_master_port 29501")]
)
def test_serve_port_on_a_port_in_use_is_refused(port: int, word: str) -> None:
    message = only_problem_of(lab_task_vars(sparkops_serve_port=port))
    assert f"sparkops_serve_port {port}" in message
    assert word in message


@pytest.mark.parametrize(
    ("name", "value", "word"),
    [
        ("vllm_serve_master_port", 8000, "sparkops_serve_port 8000"),
        ("ray_cluster_port", 29560, "vllm_serve_group_port 29560"),
        ("vllm_serve_port", 8265, "ray_cluster_dashboard_port 8265"),
        ("vllm_serve_group_port", trust_as_template("{{ 6000 + 379 }}"), "sparkops_ray_port 6379"),  # as the inventory's, templated
    ],
)
def test_role_port_from_the_inventory_reaches_the_contract(name: str, value: t.Any, word: str) -> None:
    task_vars = lab_task_vars()
    for hostvars in task_vars["hostvars"].values():
        hostvars[name] = value
    message = only_problem_of(task_vars)
    assert name in message
    assert word in message


def test_ray_extra_args_of_a_host_reach_the_contract() -> None:
    task_vars = lab_task_vars()
    task_vars["hostvars"]["spark-worker1"]["ray_cluster_extra_args"] = ["--dashboard-agent-listen-port=8000"]
    message = only_problem_of(task_vars)
    assert "ray_cluster_extra_args --dashboard-agent-listen-port 8000" in message


def test_role_port_differing_between_hosts_fails() -> None:
    task_vars = lab_task_vars()
    task_vars["hostvars"]["spark-worker1"]["ray_cluster_port"] = 6380
    message = only_problem_of(task_vars)
    assert message == "ray_cluster_port must be the same on every host, it differs: spark-head=6379 (the role's default), spark-worker1=6380"


def test_ray_cluster_port_unset_on_one_host_takes_the_ray_port_there() -> None:
    task_vars = lab_task_vars()
    for hostvars in task_vars["hostvars"].values():
        hostvars["sparkops_ray_port"] = 6400
    task_vars["hostvars"]["spark-worker1"]["ray_cluster_port"] = 6379
    message = only_problem_of(task_vars)
    assert message == "ray_cluster_port must be the same on every host, it differs: spark-head=6400 (the role's default), spark-worker1=6379"


def test_shared_paths_and_ports_reach_the_plan_and_must_agree() -> None:
    task_vars = lab_task_vars()
    for hostvars in task_vars["hostvars"].values():
        hostvars["sparkops_ray_venv"] = "/srv/ray"
        hostvars["sparkops_ray_port"] = trust_as_template("{{ 6000 + 400 }}")
    result = make_action().run(task_vars=task_vars)
    assert not result.get("failed", False), result
    fact = result["ansible_facts"]["sparkops_cluster"]
    assert (fact["ray_venv"], fact["ray_port"], fact["hf_home"]) == ("/srv/ray", 6400, "/var/lib/sparkops/huggingface")
    task_vars["hostvars"]["spark-worker1"]["sparkops_hf_home"] = "/data/hf"
    message = only_problem_of(task_vars)
    assert message == "cluster variable sparkops_hf_home must be the same on every host, it differs: spark-head=None, spark-worker1='/data/hf'"


def test_role_port_set_to_its_default_on_one_host_only_is_accepted() -> None:
    task_vars = lab_task_vars()
    task_vars["hostvars"]["spark-head"]["vllm_serve_master_port"] = 29501
    task_vars["hostvars"]["spark-head"]["ray_cluster_port"] = "6379"
    task_vars["hostvars"]["spark-worker1"]["vllm_serve_port"] = 8000
    result = make_action().run(task_vars=task_vars)
    assert not result.get("failed", False), result


def test_hostile_subnet_and_ports_are_reported_together() -> None:
    task_vars = lab_task_vars(sparkops_fabric_subnet="0.0.0.0/0", sparkops_serve_port=22)
    for hostvars in task_vars["hostvars"].values():
        hostvars["vllm_serve_master_port"] = 6379
    result = make_action().run(task_vars=task_vars)
    assert result["failed"] is True
    problems = result["problems"]
    assert len(problems) == 3, problems
    assert "sparkops_fabric_subnet 0.0.0.0/0" in problems[0]
    assert any("sparkops_serve_port 22" in p for p in problems)
    assert any("vllm_serve_master_port 6379" in p and "sparkops_ray_port 6379" in p for p in problems)


def test_the_backend_is_mp_unless_the_inventory_says_ray() -> None:
    task_vars = lab_task_vars()
    result = make_action().run(task_vars=task_vars)
    assert result["ansible_facts"]["sparkops_cluster"]["backend"] == "mp", result
    for hostvars in task_vars["hostvars"].values():
        hostvars["vllm_serve_backend"] = trust_as_template("{{ 'ra' ~ 'y' }}")
    result = make_action().run(task_vars=task_vars)
    assert result["ansible_facts"]["sparkops_cluster"]["backend"] == "ray", result


def test_a_backend_set_on_one_host_only_must_be_the_default() -> None:
    task_vars = lab_task_vars()
    task_vars["hostvars"]["spark-worker1"]["vllm_serve_backend"] = "mp"
    assert not make_action().run(task_vars=task_vars).get("failed", False)
    task_vars["hostvars"]["spark-worker1"]["vllm_serve_backend"] = "ray"
    message = only_problem_of(task_vars)
    assert message == "vllm_serve_backend must be the same on every host, it differs: spark-head=None (the default), spark-worker1='ray'"
