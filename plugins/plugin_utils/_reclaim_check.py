# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prove that GPU memory is free: no GPU process left but allowed ones, and enough memory available.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

Memory that the collection's own kept services hold (its running Ray/vLLM, when ``include_own`` is off) counts as
available: it is the service the memory is freed for, so a converged cluster passes the check. That is a process in
an own unit (``sparkops-*``) or, with the docker runtime, in an own container (``sparkops-vllm``, ``sparkops-ray``)
that docker listed running and confirmed.
"""

from __future__ import annotations

import math
import typing as t

from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import (
    Settings,
    basename,
    matches,
    own_container,
    process_table,
)


def required_mib(total_mib: int, min_available_mib: int, min_available_fraction: float) -> int:
    """The memory that must be available: the larger of the absolute and the fractional threshold.

    The product is rounded before ``ceil`` so that float error (``0.07 * 100 == 7.000000000000001``) adds no MiB.
    """
    return max(int(min_available_mib), math.ceil(round(float(min_available_fraction) * total_mib, 6)))


def verdict(
    gpu_info: t.Mapping[str, t.Any],
    settings: Settings,
    min_available_mib: int = 0,
    min_available_fraction: float = 0.0,
) -> dict[str, t.Any]:
    """Whether the host's GPU memory is free, with the problems named and a table of what still holds memory."""
    remaining = []
    own_used = 0
    for process in gpu_info.get("processes", []):
        if matches(basename(str(process.get("name", ""))), settings.allowed_processes):
            continue
        unit = str(process.get("unit") or "")
        own = (unit.endswith(".service") and not process.get("user_unit") and matches(unit, settings.own_units)) or own_container(process, settings)
        if own and not settings.include_own:
            own_used += int(process.get("used_mib") or 0)
            continue
        remaining.append(process)
    total = int(gpu_info.get("total_mib") or 0)
    available = int(gpu_info.get("available_mib") or 0)
    required = required_mib(total, min_available_mib, min_available_fraction)
    problems = []
    if remaining:
        problems.append(f"{len(remaining)} GPU process(es) still hold memory")
    if available + own_used < required:
        where = "MemAvailable (unified memory)" if gpu_info.get("unified_memory") else "free GPU memory"
        own_note = f" + {own_used} MiB held by the collection's own services" if own_used else ""
        problems.append(f"{where} is {available} MiB{own_note}, below the required {required} MiB of {total} MiB")
    return {
        "ok": not problems,
        "problems": problems,
        "remaining": remaining,
        "remaining_table": process_table(remaining) if remaining else "",
        "available_mib": available,
        "own_used_mib": own_used,
        "required_mib": required,
        "total_mib": total,
    }
