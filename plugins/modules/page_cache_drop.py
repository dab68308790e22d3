#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: page_cache_drop
short_description: Drop the kernel's clean page cache so that unified GPU memory can use it
version_added: 1.0.0
description:
  - Writes back dirty pages (C(sync)), then writes C(3) to C(/proc/sys/vm/drop_caches), the step NVIDIA's DGX
    Spark troubleshooting guide gives before starting a large model - on unified memory, page cache left by reading
    safetensors counts as used in C(cudaMemGetInfo), so vLLM sees less free memory than C(MemAvailable) says.
  - Only clean caches are dropped; no data is lost. The cache fills again as files are read.
  - Reports the page cache before and after. Where C(/proc/sys) is read-only (an unprivileged container) or the
    user is not root, it warns and reports RV(dropped=false) instead of failing, unless O(required=true).
options:
  required:
    description:
      - Fail instead of warning when the cache cannot be dropped.
    type: bool
    default: false
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is dropped; RV(dropped) is V(false).
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - A cache flush changes no state that Ansible manages, so the module never reports a change; RV(freed_mib)
        says what it did.
notes:
  - Needs root (C(become=true)).
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Drop the page cache before starting vLLM on a DGX Spark
  sparkops.inference.page_cache_drop:
  become: true
  register: cache

- name: Say what it freed
  ansible.builtin.debug:
    msg: "{{ cache.freed_mib }} MiB of page cache dropped"
"""

RETURN = r"""
dropped:
  description: Whether the cache was dropped.
  returned: always
  type: bool
page_cache_before_mib:
  description: Cached + Buffers before, in MiB.
  returned: always
  type: int
page_cache_after_mib:
  description: Cached + Buffers after, in MiB.
  returned: always
  type: int
freed_mib:
  description: The page cache freed, in MiB (0 when not dropped).
  returned: always
  type: int
"""

import os
import typing as t
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
MEMINFO = Path("/proc/meminfo")


def page_cache_mib() -> int:
    return parse_meminfo(MEMINFO.read_text(encoding="ascii")).page_cache_mib


def main() -> None:
    module = AnsibleModule(argument_spec={"required": {"type": "bool", "default": False}}, supports_check_mode=True)
    try:
        before = page_cache_mib()
    except (OSError, MeminfoError) as exc:
        module.fail_json(msg=f"cannot read {MEMINFO}: {exc}")
    result: dict[str, t.Any] = {"changed": False, "dropped": False, "page_cache_before_mib": before, "page_cache_after_mib": before, "freed_mib": 0}
    if module.check_mode:
        module.exit_json(**result)
    os.sync()
    try:
        DROP_CACHES.write_text("3\n", encoding="ascii")
    except OSError as exc:
        message = f"page cache not dropped: cannot write {DROP_CACHES}: {exc.strerror} (needs root on the host, not in an unprivileged container)"
        if module.params["required"]:
            module.fail_json(msg=message, **result)
        module.warn(message)
        module.exit_json(**result)
    after = page_cache_mib()
    module.exit_json(**{**result, "dropped": True, "page_cache_after_mib": after, "freed_mib": max(0, before - after)})


if __name__ == "__main__":
    main()
