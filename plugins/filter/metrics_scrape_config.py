# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: metrics_scrape_config
short_description: Prometheus scrape jobs for a Spark cluster's vLLM and node exporters
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns a Prometheus configuration with only C(scrape_configs) - the jobs C(sparkops-vllm) and C(sparkops-node),
    each reading its targets from C(<folder>/<job>.json) (written with P(sparkops.inference.metrics_file_sd#filter)).
  - Prometheus 2.43 and later take the file as it is in C(scrape_config_files); for an older one copy its jobs into
    C(scrape_configs).
  - Fails, naming the variable, on a folder that is not absolute or a scheme other than C(http) or C(https).
options:
  _input:
    description: The folder, as Prometheus sees it, that holds the target files.
    type: path
    required: true
  scheme:
    description: How vLLM's API is reached (C(https) behind a TLS proxy).
    type: str
    default: http
    choices: [http, https]
  scrape_nodes:
    description: Whether to add the node exporters' job (C(sparkops-node)).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Write the scrape jobs
  ansible.builtin.copy:
    content: "{{ '/etc/prometheus/file_sd' | sparkops.inference.metrics_scrape_config | to_nice_yaml(indent=2) }}"
    dest: /etc/prometheus/scrape_configs/sparkops.yml
    mode: "0644"
"""

RETURN = r"""
_value:
  description: A dict with the one key C(scrape_configs), a list of scrape jobs.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def metrics_scrape_config_filter(file_sd_dir: t.Any, scheme: t.Any = "http", scrape_nodes: t.Any = True) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._metrics_config import MetricsConfigError, scrape_config

    if not isinstance(scrape_nodes, bool):
        raise AnsibleFilterError(f"sparkops.inference.metrics_scrape_config: metrics_node_exporter_scrape must be true or false, got {scrape_nodes!r}")
    names = {"file_sd_dir": "the target folder", "scheme": "metrics_vllm_scheme"}
    try:
        return scrape_config(file_sd_dir, scheme, scrape_nodes=scrape_nodes, names=names)
    except MetricsConfigError as exc:
        raise AnsibleFilterError(f"sparkops.inference.metrics_scrape_config: {exc}") from None


class FilterModule:
    """sparkops.inference Prometheus scrape jobs filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"metrics_scrape_config": metrics_scrape_config_filter}
