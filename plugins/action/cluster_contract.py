# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side check of the sparkops.inference inventory contract (docs: plugins/modules/cluster_contract.py)."""

from __future__ import annotations

import typing as t

from ansible.plugins.action import ActionBase
from ansible_collections.sparkops.inference.plugins.module_utils._cluster_contract import (
    CLUSTER_VARS,
    FABRIC_IP_VAR,
    HEAD_GROUP,
    WORKER_GROUP,
    ContractError,
    validate,
)


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

        problems: list[str] = []
        cluster: dict[str, t.Any] = {}
        for name in CLUSTER_VARS:
            seen = {host: host_var(host, name) for host in hosts}
            distinct = {repr(v) for v in seen.values()}
            if len(distinct) > 1:
                detail = ", ".join(f"{host}={value!r}" for host, value in seen.items())
                problems.append(f"cluster variable {name} must be the same on every host, it differs: {detail}")
            cluster[name] = next(iter(seen.values()), task_vars.get(name))
        try:
            plan = validate(groups, {host: host_var(host, FABRIC_IP_VAR) for host in hosts}, cluster)
        except ContractError as exc:
            problems = problems + exc.problems
            plan = None
        if problems or plan is None:
            result.update(failed=True, problems=problems, msg="The inventory breaks the sparkops.inference contract:\n- " + "\n- ".join(problems))
            return result
        result.update(changed=False, cluster=plan.as_dict(), ansible_facts={"sparkops_cluster": plan.as_dict()})
        return result
