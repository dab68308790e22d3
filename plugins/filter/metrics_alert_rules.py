# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: metrics_alert_rules
short_description: Prometheus alert rules for a Spark cluster's vLLM and memory guard
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns a Prometheus rules file (one group, C(sparkops-inference)) with the alerts C(SparkopsVllmEngineDown)
    (vLLM's C(/metrics) not scraped), C(SparkopsVllmWedged) (requests running, and neither
    C(vllm:generation_tokens_total) nor C(vllm:prompt_tokens_total) rose for a while), C(SparkopsVllmQueueGrowing) (C(vllm:num_requests_waiting) above a level),
    C(SparkopsVllmKvCacheFull) (C(vllm:kv_cache_usage_perc) at a level), C(SparkopsMemoryGuardFired)
    (C(sparkops_memory_guard_stops_total) rose) and C(SparkopsMemoryGuardHolding) (C(sparkops_memory_guard_holding)
    is 1). docs/metrics.md says why each threshold is what it is.
  - The rules name the jobs of P(sparkops.inference.metrics_scrape_config#filter).
  - Fails, naming the variable, on a duration Prometheus would not take, a negative or fractional queue length, or a
    KV cache level outside (0, 1].
options:
  _input:
    description: The thresholds, a dict with any of the keys below (the others keep their defaults).
    type: dict
    required: true
    suboptions:
      engine_down_for:
        description: How long C(/metrics) may go unanswered (longer than the model's load).
        type: str
        default: 10m
      queue_waiting:
        description: Waiting requests above which the queue counts as growing.
        type: int
        default: 5
      queue_for:
        description: How long the queue must stay above O(_input.queue_waiting).
        type: str
        default: 5m
      kv_cache_usage:
        description: The KV cache's usage (a fraction, 1 is full) that counts as full.
        type: float
        default: 0.95
      kv_cache_for:
        description: How long the KV cache must stay that full.
        type: str
        default: 5m
      memory_guard_window:
        description: How far back a stop by the memory guard keeps its alert firing.
        type: str
        default: 15m
      wedged_for:
        description: How long requests may run with no token generated and no prompt processed before the engine counts
          as wedged.
        type: str
        default: 5m
"""

EXAMPLES = r"""
- name: Write the alert rules
  ansible.builtin.copy:
    content: >-
      {{ {'engine_down_for': '15m', 'kv_cache_usage': 0.9}
         | sparkops.inference.metrics_alert_rules | to_nice_yaml(indent=2, sort_keys=false) }}
    dest: /etc/prometheus/rules/sparkops.rules
    mode: "0644"
    validate: promtool check rules %s
"""

RETURN = r"""
_value:
  description: The rules file, as a dict with the one key C(groups).
  type: dict
"""

import typing as t
from collections.abc import Callable, Mapping

from ansible.errors import AnsibleFilterError

KEYS = ("engine_down_for", "queue_waiting", "queue_for", "kv_cache_usage", "kv_cache_for", "memory_guard_window", "wedged_for")


def metrics_alert_rules_filter(thresholds: t.Any) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._metrics_config import MetricsConfigError, alert_rules

    if not isinstance(thresholds, Mapping) or set(thresholds) - set(KEYS):
        raise AnsibleFilterError(f"sparkops.inference.metrics_alert_rules: the input must be a dict with keys among {', '.join(KEYS)}, got {thresholds!r}")
    names = {key: f"metrics_alert_{key}" for key in KEYS}
    try:
        return alert_rules(**{key: thresholds[key] for key in KEYS if key in thresholds}, names=names)
    except MetricsConfigError as exc:
        raise AnsibleFilterError(f"sparkops.inference.metrics_alert_rules: {exc}") from None


class FilterModule:
    """sparkops.inference Prometheus alert rules filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"metrics_alert_rules": metrics_alert_rules_filter}
