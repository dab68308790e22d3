# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter plugins: wiring to module_utils and their error messages (which name the filter)."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.env_file import FilterModule as EnvFileFilters
from ansible_collections.sparkops.inference.plugins.filter.fabric_env import FilterModule as FabricEnvFilters
from ansible_collections.sparkops.inference.plugins.filter.ray_version_mismatches import FilterModule as RayFilters

fabric_env = FabricEnvFilters().filters()["fabric_env"]
env_file = EnvFileFilters().filters()["env_file"]
ray_version_mismatches = RayFilters().filters()["ray_version_mismatches"]

ROCE = {"interface": "enp1s0f1np1", "transport": "ib", "hca_list": ["rocep1s0f1", "roceP2p1s0f1"], "gid_index": 3}
ARGS = {"fabric_ip": "192.168.200.12", "master_addr": "192.168.200.11", "vllm_config_root": "/etc/sparkops/vllm"}


def test_fabric_env_filter_returns_the_environment() -> None:
    env = fabric_env(ROCE, **ARGS)
    assert env["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"
    assert env["VLLM_HOST_IP"] == "192.168.200.12"


@pytest.mark.parametrize(("value", "kwargs"), [("not a dict", ARGS), (ROCE, {**ARGS, "fabric_ip": "x"}), (ROCE, {**ARGS, "bogus": 1})])
def test_fabric_env_filter_errors_name_the_filter(value: t.Any, kwargs: dict[str, t.Any]) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.fabric_env"):
        fabric_env(value, **kwargs)


def test_env_file_filter_renders_with_header() -> None:
    assert env_file({"A": "1", "B": "two words"}, header=["managed"]) == "# managed\nA=1\nB='two words'\n"


@pytest.mark.parametrize("value", [["A=1"], {"A": "x\ny"}, {"BAD NAME": "1"}])
def test_env_file_filter_errors_name_the_filter(value: t.Any) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.env_file"):
        env_file(value)


def test_ray_version_mismatches_filter_names_the_host() -> None:
    versions = {
        "spark-head": {"ray_version": "2.60.0", "python_version": "3.12.3", "changed": False},
        "spark-worker1": {"ray_version": "2.60.0", "python_version": "3.12.4", "changed": False},
    }
    problems = ray_version_mismatches(versions)
    assert len(problems) == 1 and "spark-worker1" in problems[0] and "3.12.4" in problems[0]
    assert ray_version_mismatches({h: {**v, "python_version": "3.12.3"} for h, v in versions.items()}) == []


@pytest.mark.parametrize("value", [["spark-head"], {"spark-head": {"ray_version": "2.60.0"}}, {"spark-head": "2.60.0"}])
def test_ray_version_mismatches_filter_refuses_bad_input(value: t.Any) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.ray_version_mismatches"):
        ray_version_mismatches(value)
