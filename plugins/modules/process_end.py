#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: process_end
short_description: End processes by pid, gracefully then forcefully
version_added: 1.0.0
description:
  - Ends the processes in O(pids), for example Ray or vLLM workers that outlived their container or unit and still
    hold GPU and unified memory.
  - Sends C(SIGTERM) to every process, waits up to O(timeout) seconds for them to exit, sends C(SIGKILL) to those
    still there, and waits up to 5 more seconds for them to vanish.
  - A pid that does not exist is not an error; it is reported in RV(gone). So is a pid whose process is a zombie
    (it has exited and released its memory, and only waits for its parent to reap it).
  - A process that becomes a zombie after a signal counts as ended.
  - With O(expect_start_times), a pid whose process did not start when it was looked up (the pid was reused by
    another process, whatever its name) is left alone and reported in RV(skipped). A process is identified by
    its pid and its start time together, as M(sparkops.inference.gpu_info) returns them.
  - With O(expect_names), a pid whose process no longer has the expected name (the pid was reused by another
    process) is left alone and reported in RV(skipped). Names are compared by base name, so another C(python3)
    passes this guard; use O(expect_start_times) too.
  - Each process is pinned by its start time, so a pid that is reused while the module waits is not signalled again.
  - Refuses, before signalling anything and naming the pid, pid 1, pids of 0 or less (which would signal process
    groups), and the module's own process and its parent.
  - Fails naming the pid and name of a process still there 5 seconds after C(SIGKILL) (for example one in
    uninterruptible sleep, state C(D)), or one it is not permitted to signal.
options:
  pids:
    description:
      - The process ids to end. Duplicates are ended once.
    type: list
    elements: int
    required: true
  timeout:
    description:
      - Seconds to wait after C(SIGTERM) before sending C(SIGKILL) to the processes still there.
      - V(0) sends C(SIGKILL) right after C(SIGTERM).
    type: float
    default: 15
  expect_names:
    description:
      - The names the processes are expected to have, as a mapping of pid to name, to guard against pids reused
        since they were looked up (for example from C(nvidia-smi --query-compute-apps=pid,process_name)).
      - The current name of a process is argv[0] from C(/proc/<pid>/cmdline), or C(/proc/<pid>/comm) when the
        command line is empty.
      - A name matches when it equals argv[0] or comm, when its base name equals the base name of argv[0]
        (V(/usr/bin/python3) matches V(python3)), or when comm is its base name cut to 15 characters (the kernel
        keeps 15 characters of comm).
      - A pid of O(pids) that is not in the mapping is ended whatever its name. Entries for other pids are ignored.
    type: dict
  expect_start_times:
    description:
      - The start times the processes are expected to have, as a mapping of pid to the start time in clock ticks
        after boot (field 22 of C(/proc/<pid>/stat)), as M(sparkops.inference.gpu_info) returns it in
        C(processes[].start_time).
      - A process whose start time differs is another process that got the pid since it was looked up, and is left
        alone and reported in RV(skipped). So is one whose start time cannot be read, and one mapped to null (the
        pid was not running when it was looked up).
      - A pid of O(pids) that is not in the mapping is not checked this way. Entries for other pids are ignored.
    type: dict
  proc_root:
    description:
      - Where procfs is mounted. Only meant for tests; signals always go to the real processes.
    type: path
    default: /proc
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the processes and reports in RV(ended) those that would be sent C(SIGTERM); signals nothing.
  diff_mode:
    support: full
    details:
      - The diff lists the requested processes that exist, one C(pid name) a line, before and after.
  idempotent:
    support: full
notes:
  - Ending processes of other users needs root; use C(become).
seealso:
  - module: community.general.pids
    description: Finds the pids of processes by name.
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Read the processes that hold the GPU
  ansible.builtin.command:
    cmd: nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader
  register: gpu_apps
  changed_when: false

- name: End them, guarding against reused pids
  sparkops.inference.process_end:
    pids: "{{ gpu_apps.stdout_lines | map('split', ', ') | map('first') | map('int') | list }}"
    expect_names: "{{ dict(gpu_apps.stdout_lines | map('split', ', ')) }}"
    timeout: 20
  become: true
  register: ended_processes

- name: Show what needed SIGKILL
  ansible.builtin.debug:
    msg: "{{ ended_processes.ended | selectattr('signal', '==', 'SIGKILL') | list }}"

- name: End the leftover GPU processes gpu_info found, pinned by (pid, start time)
  sparkops.inference.process_end:
    pids: "{{ gpu.processes | map(attribute='pid') | list }}"
    expect_start_times: "{{ dict(gpu.processes | map(attribute='pid') | zip(gpu.processes | map(attribute='start_time'))) }}"
  become: true

- name: End a leftover Ray raylet
  sparkops.inference.process_end:
    pids: [41523]
  become: true
"""

RETURN = r"""
ended:
  description:
    - The processes ended, in the order requested; in check mode, those that would be sent C(SIGTERM).
  returned: success
  type: list
  elements: dict
  contains:
    pid:
      description: The process id.
      type: int
      returned: success
      sample: 41523
    name:
      description: The process name (argv[0], or comm when the command line is empty).
      type: str
      returned: success
      sample: ray::RayWorkerWrapper
    signal:
      description: The last signal the process got, V(SIGTERM) or V(SIGKILL) (when it outlived O(timeout)).
      type: str
      returned: success
      choices: [SIGTERM, SIGKILL]
      sample: SIGTERM
  sample:
    - {pid: 41523, name: "ray::RayWorkerWrapper", signal: SIGTERM}
    - {pid: 41560, name: /usr/bin/python3, signal: SIGKILL}
gone:
  description: The pids that did not exist, or were zombies, when the module looked (nothing to end).
  returned: success
  type: list
  elements: int
  sample: [40100]
skipped:
  description:
    - The pids left alone because their start time was not the one in O(expect_start_times), or their name no
      longer matched O(expect_names).
  returned: success
  type: list
  elements: dict
  contains:
    pid:
      description: The process id.
      type: int
      returned: success
      sample: 40211
    name:
      description: The name the process has now.
      type: str
      returned: success
      sample: /bin/bash
    expected_name:
      description: The name O(expect_names) gave.
      type: str
      returned: when skipped for its name
      sample: ray::IDLE
    start_time:
      description: The start time the process has now (clock ticks after boot), null when unreadable.
      type: int
      returned: when skipped for its start time
      sample: 9000
    expected_start_time:
      description: The start time O(expect_start_times) gave.
      type: int
      returned: when skipped for its start time
      sample: 5000
    reason:
      description: Why it was skipped.
      type: str
      returned: success
      sample: "pid 40211 is now '/bin/bash', not 'ray::IDLE' (pid reused?)"
diff:
  description:
    - The requested processes that existed (C(before)) and those still there (C(after)), one C(pid name) a line.
  returned: success
  type: dict
  contains:
    before:
      description: The requested processes that existed.
      type: str
      returned: success
    after:
      description: The requested processes still there (skipped ones, and in a failure those not ended).
      type: str
      returned: success
  sample:
    before: "41523 ray::RayWorkerWrapper\n40211 /bin/bash\n"
    after: "40211 /bin/bash\n"
"""

# Imports follow the documentation, as validate-modules requires.
from pathlib import Path  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._process_end import (  # noqa: E402
    ProcessEndError,
    end_processes,
    parse_expect_names,
    parse_expect_start_times,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "pids": {"type": "list", "elements": "int", "required": True},
            "timeout": {"type": "float", "default": 15},
            "expect_names": {"type": "dict"},
            "expect_start_times": {"type": "dict"},
            "proc_root": {"type": "path", "default": "/proc"},
        },
        supports_check_mode=True,
    )
    try:
        result = end_processes(
            module.params["pids"],
            module.params["timeout"],
            expect_names=parse_expect_names(module.params["expect_names"]),
            expect_start_times=parse_expect_start_times(module.params["expect_start_times"]),
            proc_root=Path(module.params["proc_root"]),
            check_mode=module.check_mode,
        )
    except ProcessEndError as exc:
        module.fail_json(msg=str(exc))
    if result.failures:
        module.fail_json(msg="; ".join(result.failures), changed=result.changed, **result.as_dict())
    module.exit_json(changed=result.changed, **result.as_dict())


if __name__ == "__main__":
    main()
