#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: unit_status
short_description: Report the state of a node's sparkops systemd units and their last warnings from the journal
version_added: 1.0.0
description:
  - Finds the systemd units whose names match O(patterns), loaded units (C(systemctl list-units --all)) and unit
    files (C(systemctl list-unit-files)) alike, templates (C(name@.service)) left out.
  - "Reads their state with one C(systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState,
    ActiveEnterTimestamp,StateChangeTimestamp,NRestarts,MainPID,Result --timestamp=unix); a systemd that refuses
    C(--timestamp=unix) (before v251) is asked again without it and its default timestamps
    (C(Sat 2026-01-31 12:00:00 UTC)) are parsed."
  - Reads the last O(journal_lines) journal entries of those units at priority warning or worse (C(journalctl -u
    <unit>... -p warning -n <journal_lines> -o json)) as RV(health_events), newest first. These include what systemd
    itself logs about a unit at that priority, such as C(Failed with result 'exit-code'). A program's own output is
    logged at the priority its unit gives it (by default info), so it shows here only when the program or its unit
    sets a higher one.
  - A command that is missing or fails gives an empty list and a line in RV(notes); the module fails only for bad
    options.
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
options:
  patterns:
    description:
      - Shell-style globs matched, case-sensitively, against the whole unit name (C(sparkops-vllm.service)), as
        C(systemctl list-units) matches its patterns.
    type: list
    elements: str
    default: [sparkops-*]
  journal_lines:
    description:
      - How many journal entries at priority warning or worse to return, the newest of all the units together.
      - V(0) does not read the journal.
    type: int
    default: 10
notes:
  - Reads only; never changes the host. Run it with C(become) to read the system journal as root (a user outside the
    C(systemd-journal) group sees only its own entries).
  - Runs C(systemctl) three times and C(journalctl) once.
seealso:
  - module: sparkops.inference.status_report
  - module: sparkops.inference.node_recon
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Read the sparkops units
  sparkops.inference.unit_status:
  become: true
  register: units

- name: Show each unit's state
  ansible.builtin.debug:
    msg: "{{ units.units | map(attribute='unit') | zip(units.units | map(attribute='active_state')) | map('join', '=') }}"

- name: Read the Ray units only, without the journal
  sparkops.inference.unit_status:
    patterns: [sparkops-ray-*]
    journal_lines: 0
"""

RETURN = r"""
units:
  description: Every unit that matches O(patterns), sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    unit:
      description: The unit's name.
      type: str
      returned: always
      sample: sparkops-vllm.service
    load_state:
      description: C(LoadState), such as V(loaded) or V(not-found); null when systemctl did not say.
      type: str
      returned: always
      sample: loaded
    active_state:
      description: C(ActiveState), such as V(active), V(activating), V(inactive) or V(failed); null when systemctl did not say.
      type: str
      returned: always
      sample: active
    sub_state:
      description: C(SubState), such as V(running), V(auto-restart) or V(dead); null when systemctl did not say.
      type: str
      returned: always
      sample: running
    enabled:
      description: C(UnitFileState), such as V(enabled), V(disabled) or V(static); null when the unit has none.
      type: str
      returned: always
      sample: enabled
    since:
      description:
        - When the unit entered its current state, ISO 8601 in UTC to the second; null when it never changed state.
        - C(ActiveEnterTimestamp) while active (as C(systemctl status) says), else C(StateChangeTimestamp).
      type: str
      returned: always
      sample: "2026-01-31T12:00:00Z"
    since_epoch:
      description: RV(units[].since) in seconds since the epoch; null with it.
      type: int
      returned: always
      sample: 1769860800
    restarts:
      description: C(NRestarts), how many times systemd restarted the unit since it was last started by hand; null when not reported.
      type: int
      returned: always
      sample: 0
    main_pid:
      description: C(MainPID); null when the unit has no main process.
      type: int
      returned: always
      sample: 4242
    result:
      description: C(Result), such as V(success) or V(exit-code); null when not reported.
      type: str
      returned: always
      sample: success
health_events:
  description: The last O(journal_lines) journal entries of the units at priority warning or worse, newest first.
  returned: always
  type: list
  elements: dict
  contains:
    time:
      description: When it was logged, ISO 8601 in UTC to the second; null when the entry has no time.
      type: str
      returned: always
      sample: "2026-01-31T12:03:04Z"
    time_epoch:
      description: RV(health_events[].time) in seconds since the epoch, to the microsecond.
      type: float
      returned: always
      sample: 1769860984.123456
    unit:
      description: The unit it is about (the unit that logged it, or the one systemd logged it about).
      type: str
      returned: always
      sample: sparkops-vllm.service
    priority:
      description: The syslog priority, V(emerg), V(alert), V(crit), V(err) or V(warning).
      type: str
      returned: always
      sample: warning
    message:
      description: The message, at most 300 characters (a longer one is cut and ends with an ellipsis).
      type: str
      returned: always
      sample: "sparkops-vllm.service: Failed with result 'exit-code'."
notes:
  description: What could not be read and why (a missing or failing systemctl or journalctl).
  returned: always
  type: list
  elements: str
  sample: []
"""

import typing as t

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._unit_status import DEFAULT_JOURNAL_LINES, DEFAULT_PATTERNS, collect

SBIN = ["/usr/sbin", "/sbin", "/usr/local/sbin"]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "patterns": {"type": "list", "elements": "str", "default": list(DEFAULT_PATTERNS)},
            "journal_lines": {"type": "int", "default": DEFAULT_JOURNAL_LINES},
        },
        supports_check_mode=True,
    )
    patterns = [pattern for pattern in module.params["patterns"] if pattern]
    if not patterns:
        module.fail_json(msg="patterns is empty: give at least one unit name glob, such as sparkops-*")
    if module.params["journal_lines"] < 0:
        module.fail_json(msg=f"journal_lines must be at least 0, not {module.params['journal_lines']}")

    def run(argv: list[str]) -> tuple[int, str, str]:
        # LC_ALL=C: systemctl's default timestamps (the fallback) in the format the parser reads.
        return t.cast("tuple[int, str, str]", module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": ""}))

    report = collect(
        run,
        module.get_bin_path("systemctl", opt_dirs=SBIN),
        module.get_bin_path("journalctl", opt_dirs=SBIN),
        patterns=patterns,
        journal_lines=module.params["journal_lines"],
    )
    module.exit_json(changed=False, **report.as_dict())


if __name__ == "__main__":
    main()
