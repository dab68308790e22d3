# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster_topology filter: the plan's hosts and addresses from groups and hostvars, errors that name the filter."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.cluster_topology import FilterModule

cluster_topology = FilterModule().filters()["cluster_topology"]
MODEL_KEYS = ("model", "revision", "served_model_name", "tensor_parallel_size", "pipeline_parallel_size", "port", "gpu_memory_utilization")

GROUPS = {"all": ["spark-head", "spark-worker2", "spark-worker1", "other"], "ungrouped": ["other"],
          "spark_head": ["spark-head"], "spark_workers": ["spark-worker2", "spark-worker1"]}  # fmt: skip
HOSTVARS = {
    "spark-head": {"sparkops_fabric_ip": "192.168.100.10", "ansible_host": "10.0.0.21", "sparkops_ray_port": 6400},
    "spark-worker1": {"sparkops_fabric_ip": "192.168.100.11", "sparkops_ray_venv": "/not/the/heads"},
    "spark-worker2": {"sparkops_fabric_ip": "192.168.100.12"},
    "other": {},
}


def test_filter_returns_the_plans_hosts_in_inventory_order_and_their_addresses() -> None:
    got = cluster_topology(GROUPS, HOSTVARS)
    assert got == {
        "head": "spark-head",
        "workers": ["spark-worker2", "spark-worker1"],
        "nodes": ["spark-head", "spark-worker2", "spark-worker1"],
        "fabric_ips": {"spark-head": "192.168.100.10", "spark-worker2": "192.168.100.12", "spark-worker1": "192.168.100.11"},
        "head_fabric_ip": "192.168.100.10",
        # The shared paths and ports: the head's, else their defaults.
        "fabric_env_file": "/etc/sparkops/fabric.env",
        "ray_venv": "/opt/sparkops/ray",
        "ray_port": 6400,
        "hf_home": "/var/lib/sparkops/huggingface",
        "ray_units": {"head": "sparkops-ray-head.service", "worker": "sparkops-ray-worker.service"},
        "backend": "mp",
        # The cluster variables' deployment (the head sets none of them here: each value None, the contract's to refuse).
        "deployments": [{"name": "default", **dict.fromkeys(MODEL_KEYS), "nodes": got["nodes"], "head": "spark-head", "extra_args": [], "env": {}}],
    }
    assert list(got["fabric_ips"]) == got["nodes"]


def test_filter_gives_the_deployment_the_heads_cluster_variables_describe() -> None:
    head = {**HOSTVARS["spark-head"], "sparkops_model_repo": "org/model", "sparkops_model_revision": "main", "sparkops_served_model_name": "m",
            "sparkops_tensor_parallel_size": 3, "sparkops_pipeline_parallel_size": 1, "sparkops_serve_port": 8000,
            "sparkops_gpu_memory_utilization": "0.8"}  # fmt: skip
    (deployment,) = cluster_topology(GROUPS, {**HOSTVARS, "spark-head": head})["deployments"]
    assert deployment == {"name": "default", "model": "org/model", "revision": "main", "served_model_name": "m", "tensor_parallel_size": 3,
                          "pipeline_parallel_size": 1, "port": 8000, "gpu_memory_utilization": 0.8, "extra_args": [], "env": {},
                          "nodes": ["spark-head", "spark-worker2", "spark-worker1"], "head": "spark-head"}  # fmt: skip


def test_filter_without_addresses_reads_none() -> None:
    hostvars = {"spark-head": {}, "spark-worker1": {}, "spark-worker2": {}}
    assert cluster_topology(GROUPS, hostvars, addresses=False) == {
        "head": "spark-head", "workers": ["spark-worker2", "spark-worker1"], "nodes": ["spark-head", "spark-worker2", "spark-worker1"],
        "fabric_env_file": "/etc/sparkops/fabric.env", "ray_venv": "/opt/sparkops/ray", "ray_port": 6379, "hf_home": "/var/lib/sparkops/huggingface",
        "ray_units": {"head": "sparkops-ray-head.service", "worker": "sparkops-ray-worker.service"}, "backend": "mp",
        "deployments": [{"name": "default", **dict.fromkeys(MODEL_KEYS), "nodes": ["spark-head", "spark-worker2", "spark-worker1"],
                         "head": "spark-head", "extra_args": [], "env": {}}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "hostvars", "kwargs", "said"),
    [
        ({"spark_workers": ["spark-worker1"]}, HOSTVARS, {}, "group spark_head must hold exactly one host, it holds 0: []"),
        ({**GROUPS, "spark_head": ["spark-head", "spark-worker1"]}, HOSTVARS, {}, "group spark_head must hold exactly one host, it holds 2"),
        ({**GROUPS, "spark_workers": ["spark-worker1", "spark-head"]}, HOSTVARS, {}, "host spark-head is in both spark_head and spark_workers"),
        (GROUPS, {**HOSTVARS, "spark-worker1": {"ansible_host": "10.0.0.22"}}, {}, "host spark-worker1 has no sparkops_fabric_ip"),
        (GROUPS, {name: v for name, v in HOSTVARS.items() if name != "spark-worker2"}, {}, "host spark-worker2 has no sparkops_fabric_ip"),
        (GROUPS, {**HOSTVARS, "spark-head": {"sparkops_fabric_ip": None}}, {}, "host spark-head has no sparkops_fabric_ip"),
        (["spark-head"], HOSTVARS, {}, "the input must be the inventory's groups (groups)"),
        (GROUPS, "hostvars", {}, "hostvars must be every host's variables (hostvars)"),
        (GROUPS, HOSTVARS, {"addresses": "no"}, "addresses must be a boolean, got 'no'"),
    ],
)
def test_filter_errors_name_the_filter_and_the_group_or_host(groups: t.Any, hostvars: t.Any, kwargs: dict[str, t.Any], said: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        cluster_topology(groups, hostvars, **kwargs)
    assert str(caught.value).startswith("sparkops.inference.cluster_topology: ") and said in str(caught.value)
