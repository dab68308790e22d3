# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memory guard's settings for one node (the vllm_serve role's ``memory_guard_settings`` filter), checked against
that node's ``MemTotal`` before anything changes.

The resume level is the larger of the level asked for and the level vLLM's own memory gate waits for (the
``min_available_mib`` it is given, else ``gpu_memory_utilization`` x ``MemTotal``, as :mod:`._serve_gate` computes
it): a guard that started vLLM below that level would only see the start fail in the gate and use up the unit's
start limit (:mod:`._memory_guard`'s docstring).

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import math
import typing as t

from ansible_collections.sparkops.inference.plugins.module_utils._memory_guard import (
    DEFAULT_RESUME_AVAILABLE_MIB,
    LEVEL_FIELDS,
    MIB,
    GuardSettings,
    MemoryGuardError,
    parse_meminfo_sample,
)


def gate_level_mib(total_mib: int, gate_min_available_mib: int | None, gpu_memory_utilization: float) -> int:
    """The ``MemAvailable`` vLLM's memory gate waits for on a host of ``total_mib``: its ``min_available_mib`` when set
    (above 0), else ``gpu_memory_utilization`` of ``MemTotal`` (rounded up), as :func:`._serve_gate.memory_gate`."""
    if gate_min_available_mib:
        return int(gate_min_available_mib)
    return math.ceil(total_mib * gpu_memory_utilization)


def node_settings(
    meminfo: str,
    *,
    units: t.Sequence[str],
    levels: t.Mapping[str, t.Any],
    names: t.Mapping[str, str],
    state_path: str,
    textfile_dir: str = "",
    gate_min_available_mib: int | None = None,
    gpu_memory_utilization: float = 0.0,
) -> dict[str, t.Any]:
    """The settings ``sparkops-vllm-memory-guard`` reads on the node whose ``/proc/meminfo`` is ``meminfo``.

    ``levels`` holds :data:`._memory_guard.LEVEL_FIELDS` (a missing or null one takes the guard's default, except
    ``stop_psi_full_pct``, where null turns PSI off); ``names`` maps each to the variable that sets it, and may map
    ``gate_min_available_mib`` and ``gpu_memory_utilization`` to the variables behind those (named when the raised
    resume level is refused; only the levels' names go into the settings). Raises
    :class:`._memory_guard.MemoryGuardError` naming the variables when a level makes no sense or is not below this
    host's ``MemTotal`` (with the raised resume level, the gate's variable named as the reason)."""
    unknown = sorted(str(key) for key in levels if key not in LEVEL_FIELDS)
    if unknown:
        raise MemoryGuardError(f"unknown level(s) {', '.join(unknown)}; known: {', '.join(LEVEL_FIELDS)}")
    if isinstance(gpu_memory_utilization, bool) or not isinstance(gpu_memory_utilization, (int, float)) or not 0 <= gpu_memory_utilization <= 1:
        raise MemoryGuardError(f"gpu_memory_utilization is {gpu_memory_utilization!r}: a fraction from 0 to 1")
    gate_bad = isinstance(gate_min_available_mib, bool) or not isinstance(gate_min_available_mib, int) or gate_min_available_mib < 0
    if gate_min_available_mib is not None and gate_bad:
        raise MemoryGuardError(f"the memory gate's level is {gate_min_available_mib!r}: MiB, 0 or more (0 or null: the utilization's share)")
    total, _available, _swap = parse_meminfo_sample(meminfo)
    total_mib = total // MIB
    raw: dict[str, t.Any] = {key: value for key, value in levels.items() if value is not None or key == "stop_psi_full_pct"}
    gate = gate_level_mib(total_mib, gate_min_available_mib, float(gpu_memory_utilization))
    asked = raw.get("resume_available_mib", DEFAULT_RESUME_AVAILABLE_MIB)
    raised = isinstance(asked, (int, float)) and not isinstance(asked, bool) and gate > asked
    if raised:
        raw["resume_available_mib"] = gate
    level_names = {key: value for key, value in names.items() if key in LEVEL_FIELDS}
    document: dict[str, t.Any] = {**raw, "units": list(units), "state_path": state_path, "names": level_names}
    if textfile_dir:
        document["textfile_dir"] = textfile_dir
    try:
        GuardSettings.from_dict(document, mem_total_mib=total_mib)
    except MemoryGuardError as exc:
        if raised:
            gate_name = names.get("gate_min_available_mib", "gate_min_available_mib")
            utilization_name = names.get("gpu_memory_utilization", "gpu_memory_utilization")
            raise MemoryGuardError(
                f"{exc} (the resume level is the memory gate's, {gate} MiB: {gate_name}, else {utilization_name} "
                f"x MemTotal {total_mib} MiB; the guard starts vLLM only where its gate would let it start)"
            ) from None
        raise
    return document
