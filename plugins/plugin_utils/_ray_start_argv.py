# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The arguments of ``ray start`` (after ``start``) that the ray_cluster role's unit runs on a head or a worker, from
the role's variables (its ``ray_start_argv`` filter).

Every value goes in as its text (a number as Python and Jinja's ``~`` write it); whether systemd reads it back
exactly is ``systemd_exec_args``'s job. What is refused here, naming the variable, is what cannot be an argument at
all: a missing variable, a list or a mapping where one value goes, a boolean where a number goes, a dashboard switch
that is not a boolean, a node role other than head or worker.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.sparkops.inference.plugins.plugin_utils._role_argv import argument_list, argument_text, check_names

PREFIX = "ray_cluster_"
ROLES = ("head", "worker")
# The role's variables that go into an argument as their text (without PREFIX), as RayStartInputs' fields.
WORDS = ("port", "head_ip", "node_ip", "num_gpus", "object_store_memory", "dashboard_port")
VARIABLES = (*WORDS, "num_cpus", "dashboard", "extra_args")


class RayStartArgvError(ValueError):
    """A value that cannot be an argument of ``ray start``; the message names its variable and shows the value."""


def switch(value: t.Any, name: str) -> bool:
    """``value`` as a boolean as Ansible reads them (``true``, ``"yes"``, ``1``, ...; null is false, as Ansible's
    ``bool`` filter reads it); anything else is refused, naming ``name``."""
    if value is None:
        return False
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise RayStartArgvError(f"{name} must be a boolean, got {value!r}") from None


@dataclass(frozen=True)
class RayStartInputs:
    """What ``ray start``'s arguments are made of: the node's role (head or worker), Ray's temp dir, and each value's
    text (the role's ``ray_cluster_*`` variable of the same name), ``num_cpus`` None where Ray counts the CPUs."""

    role: str
    temp_dir: str
    port: str
    head_ip: str
    node_ip: str
    num_gpus: str
    object_store_memory: str
    dashboard_port: str
    num_cpus: str | None
    dashboard: bool
    extra_args: tuple[str, ...]

    @property
    def is_head(self) -> bool:
        """Whether this node runs Ray's head (its GCS and, when on, its dashboard)."""
        return self.role == "head"

    @classmethod
    def from_vars(cls, variables: Mapping[str, t.Any], *, role: t.Any, temp_dir: t.Any) -> RayStartInputs:
        """The inputs from the role's variables (``ray_cluster_port``, ... by name, as :data:`VARIABLES` lists them
        without their prefix), the node's role and Ray's temp dir. Raises :class:`RayStartArgvError` naming the
        variable that is missing, unknown or cannot be an argument."""
        check_names(variables, PREFIX, VARIABLES, RayStartArgvError)
        if role not in ROLES:
            raise RayStartArgvError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        num_cpus = variables[PREFIX + "num_cpus"]
        return cls(
            role=str(role),
            temp_dir=argument_text(temp_dir, "temp_dir (Ray's temp dir in ray_cluster_temp_dir)", RayStartArgvError),
            **{field: argument_text(variables[PREFIX + field], PREFIX + field, RayStartArgvError) for field in WORDS},
            num_cpus=None if num_cpus is None else argument_text(num_cpus, PREFIX + "num_cpus", RayStartArgvError),
            dashboard=switch(variables[PREFIX + "dashboard"], PREFIX + "dashboard"),
            extra_args=argument_list(variables[PREFIX + "extra_args"], PREFIX + "extra_args", RayStartArgvError),
        )


def ray_start_argv(inputs: RayStartInputs) -> list[str]:
    """``ray start``'s arguments: ``--block``; the head's port, or a worker's head address; the node's address, temp
    dir and resources (``--num-cpus`` where set); usage stats off; on the head, the dashboard on loopback or off; the
    extra arguments last."""
    argv = ["--block"]
    argv += ["--head", f"--port={inputs.port}"] if inputs.is_head else [f"--address={inputs.head_ip}:{inputs.port}"]
    argv += [f"--node-ip-address={inputs.node_ip}", f"--temp-dir={inputs.temp_dir}", f"--num-gpus={inputs.num_gpus}"]
    if inputs.num_cpus is not None:
        argv.append(f"--num-cpus={inputs.num_cpus}")
    argv += [f"--object-store-memory={inputs.object_store_memory}", "--disable-usage-stats"]
    if inputs.is_head and inputs.dashboard:
        argv += ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={inputs.dashboard_port}"]
    elif inputs.is_head:
        argv.append("--include-dashboard=false")
    return argv + list(inputs.extra_args)
