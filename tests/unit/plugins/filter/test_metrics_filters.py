# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The metrics filters: wiring to plugin_utils/_metrics_config.py and their errors, which name the filter and the role's
variable."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.metrics_alert_rules import FilterModule as RulesFilters
from ansible_collections.sparkops.inference.plugins.filter.metrics_file_sd import FilterModule as FileSdFilters
from ansible_collections.sparkops.inference.plugins.filter.metrics_scrape_config import FilterModule as ScrapeFilters

metrics_file_sd = FileSdFilters().filters()["metrics_file_sd"]
metrics_scrape_config = ScrapeFilters().filters()["metrics_scrape_config"]
metrics_alert_rules = RulesFilters().filters()["metrics_alert_rules"]


def test_metrics_file_sd_returns_the_targets_by_job() -> None:
    targets = metrics_file_sd({"spark-head": "10.0.0.21", "spark-worker1": ""}, head="spark-head", vllm_port=8000)
    assert targets["sparkops-vllm"][0]["targets"] == ["10.0.0.21:8000"]
    assert [group["targets"] for group in targets["sparkops-node"]] == [["10.0.0.21:9100"], ["spark-worker1:9100"]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vllm_port": 99999}, "sparkops.inference.metrics_file_sd: metrics_vllm_port must be a port number"),
        ({"node_exporter_port": -1}, "sparkops.inference.metrics_file_sd: metrics_node_exporter_port must be a port number"),
        ({"scrape_nodes": "yes"}, "metrics_node_exporter_scrape must be true or false"),
        ({"address_var": "sparkops_fabric_ip", "nodes": {"spark-head": "a b"}}, "sparkops_fabric_ip of host spark-head must be an IP address or a DNS name"),
    ],
)
def test_metrics_file_sd_errors_name_the_filter_and_the_variable(kwargs: dict[str, t.Any], message: str) -> None:
    nodes = kwargs.pop("nodes", {"spark-head": "10.0.0.21"})
    with pytest.raises(AnsibleFilterError) as caught:
        metrics_file_sd(nodes, **{"head": "spark-head", "vllm_port": 8000, **kwargs})
    assert message in str(caught.value)


def test_metrics_scrape_config_returns_the_jobs() -> None:
    jobs = metrics_scrape_config("/etc/prometheus/file_sd", scheme="https")["scrape_configs"]
    assert [(job["job_name"], job["scheme"]) for job in jobs] == [("sparkops-vllm", "https"), ("sparkops-node", "http")]


@pytest.mark.parametrize(
    ("folder", "kwargs", "message"),
    [("/etc/prometheus", {"scheme": "ftp"}, "metrics_vllm_scheme must be one of http, https"), ("rel/dir", {}, "must be an absolute folder")],
)
def test_metrics_scrape_config_errors_name_the_filter(folder: str, kwargs: dict[str, t.Any], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.metrics_scrape_config") as caught:
        metrics_scrape_config(folder, **kwargs)
    assert message in str(caught.value)


def test_metrics_alert_rules_takes_the_thresholds_given_and_defaults_the_rest() -> None:
    rules = metrics_alert_rules({"engine_down_for": "20m", "queue_waiting": "3"})["groups"][0]["rules"]
    by_name = {rule["alert"]: rule for rule in rules}
    assert by_name["SparkopsVllmEngineDown"]["for"] == "20m"
    assert by_name["SparkopsVllmQueueGrowing"]["expr"] == 'vllm:num_requests_waiting{job="sparkops-vllm"} > 3'
    assert by_name["SparkopsVllmKvCacheFull"]["expr"] == 'vllm:kv_cache_usage_perc{job="sparkops-vllm"} >= 0.95'


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ({"kv_cache_usage": 2}, "metrics_alert_kv_cache_usage must be a fraction in (0, 1]"),
        ({"engine_down_for": "soon"}, "metrics_alert_engine_down_for must be a Prometheus duration"),
        ({"bogus": 1}, "the input must be a dict with keys among"),
        (["engine_down_for"], "the input must be a dict"),
    ],
)
def test_metrics_alert_rules_errors_name_the_filter_and_the_variable(thresholds: t.Any, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.metrics_alert_rules") as caught:
        metrics_alert_rules(thresholds)
    assert message in str(caught.value)
