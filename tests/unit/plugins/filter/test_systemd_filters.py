# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The systemd_exec_args, systemd_value and systemd_ip_allow filters: wiring to _systemd_unit, their options, and
errors that name the filter and the variable (an AnsibleFilterError, never another exception)."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.systemd_exec_args import FilterModule as ExecArgsFilters
from ansible_collections.sparkops.inference.plugins.filter.systemd_ip_allow import FilterModule as IpAllowFilters
from ansible_collections.sparkops.inference.plugins.filter.systemd_value import FilterModule as ValueFilters

systemd_exec_args = ExecArgsFilters().filters()["systemd_exec_args"]
systemd_value = ValueFilters().filters()["systemd_value"]
systemd_ip_allow = IpAllowFilters().filters()["systemd_ip_allow"]

INJECTION = "qwen\nExecStartPre=/bin/sh -c id"


def test_systemd_exec_args_writes_the_words() -> None:
    argv = ["/opt/sparkops/ray/bin/vllm", "serve", "Qwen/Qwen3-8B", "--chat-template", "/etc/vllm/100% chat.jinja", "--x", "$HOME", "a\\nb"]
    assert systemd_exec_args(argv, name="v", command=True) == (
        r"/opt/sparkops/ray/bin/vllm serve Qwen/Qwen3-8B --chat-template '/etc/vllm/100%% chat.jinja' --x '$$HOME' 'a\\nb'"
    )
    assert systemd_exec_args(["A=$HOME x"], expand_variables="false") == "'A=$HOME x'"


def test_systemd_exec_args_names_the_variable_from_sources() -> None:
    sources = {"vllm_serve_served_model_name": [INJECTION], "vllm_serve_model": "Qwen/Qwen3-8B"}
    with pytest.raises(AnsibleFilterError, match="^sparkops.inference.systemd_exec_args: vllm_serve_served_model_name must be one line"):
        systemd_exec_args(["serve", "--served-model-name", INJECTION], name="the vLLM command line", sources=sources)
    with pytest.raises(AnsibleFilterError, match="^sparkops.inference.systemd_exec_args: the vLLM command line must be one line"):
        systemd_exec_args(["serve", INJECTION], name="the vLLM command line")


@pytest.mark.parametrize(
    ("argv", "kwargs", "message"),
    [
        (["ray"], {"command": True}, "must start with the absolute path"),
        ({"a": 1}, {}, "must be a list of arguments"),
        (["a"], {"sources": ["not", "a", "dict"]}, "sources must be a dict"),
        (["a"], {"command": "maybe"}, "command must be a boolean"),
    ],
)
def test_systemd_exec_args_errors_name_the_filter(argv: t.Any, kwargs: dict[str, t.Any], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=f"^sparkops.inference.systemd_exec_args: .*{message}"):
        systemd_exec_args(argv, **kwargs)


def test_systemd_value_escapes_specifiers_and_refuses_line_breaks() -> None:
    assert systemd_value("qwen %h 100%", name="vllm_serve_served_model_name") == "qwen %%h 100%%"
    assert systemd_value("100%", specifiers="no") == "100%"
    assert systemd_value(1020) == "1020"
    with pytest.raises(AnsibleFilterError, match="^sparkops.inference.systemd_value: vllm_serve_served_model_name must be one line"):
        systemd_value(INJECTION, name="vllm_serve_served_model_name")
    with pytest.raises(AnsibleFilterError, match="^sparkops.inference.systemd_value: inventory_hostname must not end with a backslash"):
        systemd_value("spark\\", name="inventory_hostname")
    with pytest.raises(AnsibleFilterError, match="^sparkops.inference.systemd_value: specifiers must be a boolean"):
        systemd_value("x", specifiers="sometimes")


def test_systemd_ip_allow_makes_host_entries() -> None:
    nodes = {"spark-head": "192.168.100.10", "spark-worker1": "192.168.100.11"}
    assert systemd_ip_allow(nodes, name="ray_cluster_node_ip") == ["192.168.100.10/32", "192.168.100.11/32"]
    assert systemd_ip_allow(["10.9.0.0/24", "10.9.1.1"], name="ray_cluster_allowed_addresses", networks="yes") == ["10.9.0.0/24", "10.9.1.1/32"]
    assert systemd_ip_allow([]) == []


@pytest.mark.parametrize(
    ("addresses", "kwargs", "message"),
    [
        ({"spark-worker1": "any"}, {"name": "ray_cluster_node_ip"}, "ray_cluster_node_ip of spark-worker1 must be an IP address"),
        (["10.0.0.0/24"], {"name": "ray_cluster_allowed_addresses"}, "ray_cluster_allowed_addresses must be an IP address"),
        (["0.0.0.0/0"], {"name": "ray_cluster_allowed_addresses", "networks": True}, "unspecified address"),
        ("10.0.0.1", {}, "must be a list of IP addresses"),
        ([f"10.0.0.1\n{INJECTION}"], {"name": "ray_cluster_allowed_addresses"}, "ray_cluster_allowed_addresses must be one line"),
    ],
)
def test_systemd_ip_allow_errors_name_the_filter_and_the_variable(addresses: t.Any, kwargs: dict[str, t.Any], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=f"^sparkops.inference.systemd_ip_allow: .*{message}"):
        systemd_ip_allow(addresses, **kwargs)
