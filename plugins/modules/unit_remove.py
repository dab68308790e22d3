#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: unit_remove
short_description: Stop, disable and remove systemd units and the files that go with them, in one step
version_added: 1.1.0
description:
  - For systemd units a node no longer needs (a feature turned off, a node that changed role, a teardown).
  - Each of O(units) whose file is in C(/etc/systemd/system) is stopped and disabled (C(systemctl disable --now)),
    all of them before anything is removed, and its failed state (a unit stopped mid-run) cleared; then those files
    and each of O(paths) that exists are removed (a folder
    with what it holds, a link and not what it points to); then systemd reloads its units when a unit file was
    removed.
  - A unit that will not stop or disable fails the module naming it, with nothing removed.
  - What the same steps as separate tasks (a stat, a stop, a file removal per path, a reload) do, in one module run
    on the node.
options:
  units:
    description:
      - The units, by their file name in C(/etc/systemd/system), for example V(sparkops-vllm.service) or
        V(sparkops-vllm-liveness.timer).
      - A unit without a file there is left alone (it is not the collection's, or it is gone already).
      - Name the service a timer starts too, so that a run in progress ends before its files are removed.
    type: list
    elements: str
    required: true
  paths:
    description:
      - Other files or folders to remove with them, for example a unit's command, settings and state, or the service
        a removed timer started.
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is stopped or removed; RV(units) and RV(paths) say what would be.
  diff_mode:
    support: full
    details:
      - The paths that exist before, and none after.
  idempotent:
    support: full
    details:
      - A second run finds nothing to remove and reports no change.
notes:
  - Needs root (C(become=true)) and systemd.
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Remove the liveness probe (its timer, its service, its command, its settings and its state)
  sparkops.inference.unit_remove:
    units: [sparkops-vllm-liveness.timer, sparkops-vllm-liveness.service]
    paths:
      - /usr/local/sbin/sparkops-vllm-liveness
      - /etc/sparkops/vllm-liveness.json
  become: true
  register: removed

- name: Say what was removed
  ansible.builtin.debug:
    msg: "stopped {{ removed.units | join(', ') or 'nothing' }}; removed {{ removed.paths | join(', ') or 'nothing' }}"
"""

RETURN = r"""
units:
  description: The units whose file was there, stopped and disabled (in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [sparkops-vllm-liveness.timer]
paths:
  description: The paths removed, the units' files first (in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/sparkops-vllm-liveness.timer, /usr/local/sbin/sparkops-vllm-liveness]
daemon_reloaded:
  description: Whether systemd reloaded its units (a unit file was removed; never in check mode).
  returned: always
  type: bool
  sample: true
"""

import typing as t  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils import _unit_remove  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "units": {"type": "list", "elements": "str", "required": True},
            "paths": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    units: list[str] = module.params["units"]
    bad = [unit for unit in units if not unit or "/" in unit]
    if bad:
        module.fail_json(msg=f"units are unit file names in {_unit_remove.UNIT_DIR} (no '/'), not {', '.join(repr(unit) for unit in bad)}")
    removal = _unit_remove.plan(units, module.params["paths"], _unit_remove.UNIT_DIR)
    result: dict[str, t.Any] = {"changed": removal.changes, "units": removal.units, "paths": removal.paths, "daemon_reloaded": False}
    if module._diff:
        result["diff"] = {"before": "".join(f"{path}\n" for path in removal.paths), "after": ""}
    if module.check_mode or not removal.changes:
        module.exit_json(**result)
    try:
        result["daemon_reloaded"] = _unit_remove.apply(removal, module.run_command, _unit_remove.UNIT_DIR)
    except _unit_remove.UnitRemoveError as exc:
        module.fail_json(msg=str(exc), **{**result, "changed": exc.changed})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
