# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side check of the sparkops.inference inventory contract (docs: plugins/modules/cluster_contract.py)."""

from __future__ import annotations

import typing as t

from ansible.plugins.action import ActionBase
from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import (
    BACKEND_VAR,
    CLUSTER_VARS,
    DEFAULT_BACKEND,
    FABRIC_IP_VAR,
    HEAD_GROUP,
    RAY_EXTRA_ARGS_VAR,
    ROLE_PORT_DEFAULTS_TO,
    ROLE_PORT_VARS,
    SHARED_VARS,
    WORKER_GROUP,
    ContractError,
    validate,
)
from ansible_collections.sparkops.inference.plugins.plugin_utils._deployments import DEPLOYMENTS_VAR


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset()

    def run(self, tmp: t.Any = None, task_vars: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        groups: dict[str, list[str]] = task_vars.get("groups") or {}
        hostvars = task_vars.get("hostvars") or {}
        hosts = list(dict.fromkeys([*(groups.get(HEAD_GROUP) or []), *(groups.get(WORKER_GROUP) or [])]))

        def host_var(host: str, name: str) -> t.Any:
            if host not in hostvars or name not in hostvars[host]:
                return None
            return self._templar.template(hostvars[host][name])

        def role_default(host: str, name: str) -> t.Any:
            """The cluster variable a role port defaults to, as the host has it (else its shared default)."""
            cluster_var = ROLE_PORT_DEFAULTS_TO[name]
            value = host_var(host, cluster_var)
            return SHARED_VARS.get(cluster_var) if value is None else value

        problems: list[str] = []
        cluster: dict[str, t.Any] = {}
        for name in (*CLUSTER_VARS, *SHARED_VARS, DEPLOYMENTS_VAR):
            seen = {host: host_var(host, name) for host in hosts}
            distinct = {repr(v) for v in seen.values()}
            if len(distinct) > 1:
                detail = ", ".join(f"{host}={value!r}" for host, value in seen.items())
                problems.append(f"cluster variable {name} must be the same on every host, it differs: {detail}")
            cluster[name] = next(iter(seen.values()), task_vars.get(name))
        # The backend: one for the cluster (ray_cluster and vllm_serve both follow it); a host that leaves it unset
        # takes the default there.
        backends = {host: host_var(host, BACKEND_VAR) for host in hosts}
        if len({DEFAULT_BACKEND if value is None else value for value in backends.values()}) > 1:
            detail = ", ".join(f"{host}={value!r}" + (" (the default)" if value is None else "") for host, value in backends.items())
            problems.append(f"{BACKEND_VAR} must be the same on every host, it differs: {detail}")
        cluster[BACKEND_VAR] = next(iter(backends.values()), task_vars.get(BACKEND_VAR))
        # The roles' ports as the inventory sets them (no role has run: their defaults are not in hostvars). Each must
        # be the same on every host: a worker reaches the head's GCS and rendezvous at its own value of the port.
        ports: dict[str, t.Any] = {}
        for name, default in ROLE_PORT_VARS.items():
            given = {host: host_var(host, name) for host in hosts}
            if all(value is None for value in given.values()):
                continue
            # Where one host leaves it unset, it takes the role's default there (vllm_serve_port's: sparkops_serve_port).
            seen = {host: value if value is not None else default if default is not None else role_default(host, name) for host, value in given.items()}
            if len({str(value) for value in seen.values()}) > 1:
                detail = ", ".join(f"{host}={value!r}" + (" (the role's default)" if given[host] is None else "") for host, value in seen.items())
                problems.append(f"{name} must be the same on every host, it differs: {detail}")
            ports[name] = next(iter(seen.values()))
        # A host's management address: ansible_host, else its inventory name (as Ansible connects).
        management = {host: host_var(host, "ansible_host") for host in hosts}
        try:
            plan = validate(
                groups,
                {host: host_var(host, FABRIC_IP_VAR) for host in hosts},
                cluster,
                management={host: host if address is None else address for host, address in management.items()},
                ports=ports,
                ray_extra_args={host: host_var(host, RAY_EXTRA_ARGS_VAR) for host in hosts},
            )
        except ContractError as exc:
            problems = problems + exc.problems
            plan = None
        if problems or plan is None:
            result.update(failed=True, problems=problems, msg="The inventory breaks the sparkops.inference contract:\n- " + "\n- ".join(problems))
            return result
        result.update(changed=False, cluster=plan.as_dict(), ansible_facts={"sparkops_cluster": plan.as_dict()})
        return result
