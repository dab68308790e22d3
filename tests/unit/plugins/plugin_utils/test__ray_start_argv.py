# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``ray start``'s arguments from the ray_cluster role's variables (plugins/plugin_utils/_ray_start_argv.py): the head
and a worker, the optional CPU count, the dashboard, the extra arguments last, and refusals that name the variable."""

from __future__ import annotations

import dataclasses
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._ray_start_argv import (
    VARIABLES,
    RayStartArgvError,
    RayStartInputs,
    ray_start_argv,
)

TEMP_DIR = "/var/lib/sparkops/tmp/ray"
HEAD = ["--block", "--head", "--port=6379"]
WORKER = ["--block", "--address=192.168.100.10:6379"]


def resources(node_ip: str) -> list[str]:
    return [f"--node-ip-address={node_ip}", f"--temp-dir={TEMP_DIR}", "--num-gpus=1", "--object-store-memory=1073741824", "--disable-usage-stats"]


def role_vars(**overrides: t.Any) -> dict[str, t.Any]:
    """The role's defaults (one GPU a node), ``overrides`` by short name."""
    values: dict[str, t.Any] = {
        "port": 6379,
        "head_ip": "192.168.100.10",
        "node_ip": "192.168.100.10",
        "num_gpus": 1,
        "num_cpus": None,
        "object_store_memory": 1073741824,
        "dashboard": False,
        "dashboard_port": 8265,
        "extra_args": [],
    }
    values.update(overrides)
    return {f"ray_cluster_{name}": value for name, value in values.items()}


def argv(role: str = "head", **overrides: t.Any) -> list[str]:
    return ray_start_argv(RayStartInputs.from_vars(role_vars(**overrides), role=role, temp_dir=TEMP_DIR))


def test_the_head_without_its_dashboard() -> None:
    assert argv() == [*HEAD, *resources("192.168.100.10"), "--include-dashboard=false"]


@pytest.mark.parametrize("dashboard", [True, "yes", "true", 1])
def test_the_head_with_its_dashboard_on_loopback(dashboard: t.Any) -> None:
    expected = [*HEAD, *resources("192.168.100.10"), "--include-dashboard=true", "--dashboard-host=127.0.0.1", "--dashboard-port=8266"]
    assert argv(dashboard=dashboard, dashboard_port=8266) == expected


@pytest.mark.parametrize("dashboard", [False, "false", "no", 0, None])
def test_the_dashboard_off_as_ansible_reads_the_switch(dashboard: t.Any) -> None:
    """As the pip requirement reads it (``ray_cluster_dashboard | bool``): ``-e ray_cluster_dashboard=false`` is off."""
    assert argv(dashboard=dashboard)[-1] == "--include-dashboard=false"


@pytest.mark.parametrize("dashboard", [True, False])
def test_a_worker_joins_the_head_and_has_no_dashboard_flag(dashboard: bool) -> None:
    assert argv("worker", node_ip="192.168.100.11", dashboard=dashboard) == [*WORKER, *resources("192.168.100.11")]


def test_num_cpus_where_set_and_extra_args_last() -> None:
    extra = ["--labels", '{"zone": "rack 1"}', "--x=%h", "$HOME", "", 3]
    got = argv("worker", node_ip="192.168.100.11", num_cpus=16, extra_args=extra)
    assert got == [
        *WORKER, "--node-ip-address=192.168.100.11", f"--temp-dir={TEMP_DIR}", "--num-gpus=1", "--num-cpus=16",
        "--object-store-memory=1073741824", "--disable-usage-stats", "--labels", '{"zone": "rack 1"}', "--x=%h", "$HOME", "", "3",
    ]  # fmt: skip


def test_numbers_and_strings_go_in_as_their_text() -> None:
    got = argv("worker", port="6380", num_gpus=0.5, num_cpus="8", object_store_memory="2147483648")
    assert got[:2] == ["--block", "--address=192.168.100.10:6380"]
    assert "--num-gpus=0.5" in got and "--num-cpus=8" in got and "--object-store-memory=2147483648" in got


def test_the_inputs_are_frozen() -> None:
    inputs = RayStartInputs.from_vars(role_vars(dashboard="yes"), role="head", temp_dir=TEMP_DIR)
    assert (inputs.is_head, inputs.dashboard, inputs.num_cpus, inputs.port) == (True, True, None, "6379")
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.role = "worker"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ({"node_ip": None}, "ray_cluster_node_ip must be a string or a number, got None"),
        ({"port": True}, "ray_cluster_port must be a string or a number, got True"),
        ({"num_gpus": [1]}, "ray_cluster_num_gpus must be a string or a number, got [1]"),
        ({"num_cpus": {"n": 4}}, "ray_cluster_num_cpus must be a string or a number"),
        ({"dashboard": "maybe"}, "ray_cluster_dashboard must be a boolean, got 'maybe'"),
        ({"extra_args": "--verbose"}, "ray_cluster_extra_args must be a list of arguments, got '--verbose'"),
        ({"extra_args": ["--labels", {"zone": "a"}]}, "ray_cluster_extra_args[1] must be a string or a number"),
    ],
)
def test_a_value_that_cannot_be_an_argument_is_refused_naming_its_variable(overrides: dict[str, t.Any], said: str) -> None:
    with pytest.raises(RayStartArgvError) as caught:
        RayStartInputs.from_vars(role_vars(**overrides), role="head", temp_dir=TEMP_DIR)
    assert said in str(caught.value)


def test_missing_and_unknown_variables_the_role_and_the_temp_dir_are_named() -> None:
    variables = role_vars()
    del variables["ray_cluster_num_gpus"]
    variables["ray_cluster_gpus"] = 1
    said = r"^unknown variable\(s\) ray_cluster_gpus; missing ray_cluster_num_gpus \(the variables are ray_cluster_port, "
    with pytest.raises(RayStartArgvError, match=said):
        RayStartInputs.from_vars(variables, role="head", temp_dir=TEMP_DIR)
    with pytest.raises(RayStartArgvError, match="^role must be one of head, worker, got 'driver'$"):
        RayStartInputs.from_vars(role_vars(), role="driver", temp_dir=TEMP_DIR)
    with pytest.raises(RayStartArgvError, match=r"^temp_dir \(Ray's temp dir in ray_cluster_temp_dir\) must be a string or a number, got None$"):
        RayStartInputs.from_vars(role_vars(), role="head", temp_dir=None)
    with pytest.raises(RayStartArgvError, match="must be a dict of ray_cluster_"):
        RayStartInputs.from_vars("ray_cluster_port", role="head", temp_dir=TEMP_DIR)  # type: ignore[arg-type]
    assert len(VARIABLES) == len(role_vars())
