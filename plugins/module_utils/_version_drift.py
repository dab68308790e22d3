# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Nodes that drifted apart: the versions that must match across a tensor-parallel group, compared node by node.

After a partial upgrade one node runs another kernel, driver, CUDA, NCCL build, Python, Ray or vLLM than the others;
NCCL and Ray then fail in ways that name neither (a hang, a pickling error, a rendezvous timeout). The head's value
is the reference: every node that differs is named with the component and both values. A deliberate mix is allowed
per component (``allowed``), and what a node could not report (None) is listed apart, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

COMPONENTS: tuple[str, ...] = ("kernel", "driver", "cuda", "nccl", "python", "ray", "vllm")


@dataclass
class Drift:
    problems: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.problems


def version_drift(head: str, versions: dict[str, dict[str, str | None]], allowed: list[str] | tuple[str, ...] = ()) -> Drift:
    """Compare every node's versions with the head's (``versions[host][component]``); every difference at once."""
    unknown_allowed = sorted(set(allowed) - set(COMPONENTS))
    if unknown_allowed:
        raise ValueError(f"sparkops_drift_allowed names {', '.join(unknown_allowed)}: the components are {', '.join(COMPONENTS)}")
    if head not in versions:
        raise ValueError(f"the head {head} reported no versions")
    drift = Drift()
    reference = versions[head]
    for component in COMPONENTS:
        expected = reference.get(component)
        if expected is None:
            drift.unknown.append(f"{component}: the head {head} did not report it; not compared")
            continue
        for host in sorted(h for h in versions if h != head):
            value = versions[host].get(component)
            if value is None:
                drift.unknown.append(f"{component}: host {host} did not report it; not compared")
            elif value != expected:
                line = f"host {host}: {component} {value}, the head {head} has {expected}"
                (drift.allowed if component in allowed else drift.problems).append(line)
    return drift
