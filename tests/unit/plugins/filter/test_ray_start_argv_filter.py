# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ray_start_argv filter: wiring to the _ray_start_argv module util, and errors that name the filter and the variable."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.ray_start_argv import FilterModule

ray_start_argv = FilterModule().filters()["ray_start_argv"]


def role_vars(**overrides: t.Any) -> dict[str, t.Any]:
    values: dict[str, t.Any] = {
        "port": 6379, "head_ip": "10.0.0.1", "node_ip": "10.0.0.1", "num_gpus": 1, "num_cpus": 20,
        "object_store_memory": 1073741824, "dashboard": True, "dashboard_port": 8265, "extra_args": ["--verbose"],
    }  # fmt: skip
    values.update(overrides)
    return {f"ray_cluster_{name}": value for name, value in values.items()}


def test_filter_returns_the_heads_arguments() -> None:
    assert ray_start_argv(role_vars(), role="head", temp_dir="/var/lib/sparkops/tmp/ray") == [
        "--block", "--head", "--port=6379", "--node-ip-address=10.0.0.1", "--temp-dir=/var/lib/sparkops/tmp/ray", "--num-gpus=1",
        "--num-cpus=20", "--object-store-memory=1073741824", "--disable-usage-stats",
        "--include-dashboard=true", "--dashboard-host=127.0.0.1", "--dashboard-port=8265", "--verbose",
    ]  # fmt: skip


def test_filter_returns_a_workers_arguments() -> None:
    got = ray_start_argv(role_vars(node_ip="10.0.0.2", num_cpus=None, extra_args=[]), role="worker", temp_dir="/tmp/r")
    assert got == ["--block", "--address=10.0.0.1:6379", "--node-ip-address=10.0.0.2", "--temp-dir=/tmp/r", "--num-gpus=1",
                   "--object-store-memory=1073741824", "--disable-usage-stats"]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "kwargs", "said"),
    [
        ([], {"role": "head", "temp_dir": "/tmp/r"}, "the role's variables must be a dict"),
        (role_vars(dashboard="sometimes"), {"role": "head", "temp_dir": "/tmp/r"}, "ray_cluster_dashboard must be a boolean"),
        (role_vars(node_ip=["10.0.0.1"]), {"role": "worker", "temp_dir": "/tmp/r"}, "ray_cluster_node_ip must be a string or a number"),
        (role_vars(), {"role": "all", "temp_dir": "/tmp/r"}, "role must be one of head, worker"),
    ],
)
def test_filter_errors_name_the_filter_and_the_variable(value: t.Any, kwargs: dict[str, t.Any], said: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        ray_start_argv(value, **kwargs)
    assert str(caught.value).startswith("sparkops.inference.ray_start_argv: ") and said in str(caught.value)
