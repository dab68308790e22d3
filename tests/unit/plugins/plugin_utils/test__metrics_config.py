# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Prometheus files of plugin_utils/_metrics_config.py: the targets and jobs, every refusal naming its variable,
and the alert rules read by the real promtool - `check rules`, then `test rules` with synthetic series that make each
alert fire, and not fire, at the thresholds. promtool comes from `make setup` (tools/setup_host.sh); a machine
without it fails these tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.plugin_utils._metrics_config import (
    NODE_JOB,
    VLLM_JOB,
    MetricsConfigError,
    alert_rules,
    file_sd,
    scrape_config,
)

NODES = {"spark-head": "10.0.0.21", "spark-worker1": "192.168.100.11", "spark-worker2": "fd00::12"}
VLLM = {"job": VLLM_JOB, "instance": "10.0.0.21:8000", "sparkops_node": "spark-head"}
NODE = {"job": NODE_JOB, "instance": "10.0.0.22:9100", "sparkops_node": "spark-worker1"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make setup` installs it (tools/setup_host.sh)"
    return subprocess.run([path, *args], capture_output=True, text=True, check=False, timeout=60)


def series(labels: dict[str, str], name: str) -> str:
    return name + "{" + ", ".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def write_rules(tmp_path: Path, rules: dict[str, t.Any], annotations: bool = True) -> Path:
    """The rules file; without annotations for `promtool test rules` (which compares them too: the tests check the
    expressions and their durations, `check rules` the annotations' templates)."""
    if not annotations:
        bare = [{**group, "rules": [{k: v for k, v in rule.items() if k != "annotations"} for rule in group["rules"]]} for group in rules["groups"]]
        rules = {"groups": bare}
    path = tmp_path / "sparkops.rules"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


def run_rule_tests(tmp_path: Path, rules: dict[str, t.Any], tests: list[dict[str, t.Any]]) -> subprocess.CompletedProcess[str]:
    rules_file = write_rules(tmp_path, rules, annotations=False)
    test_file = tmp_path / "sparkops.test.yml"
    test_file.write_text(yaml.safe_dump({"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False))
    return promtool("test", "rules", str(test_file))


def case(name: str, labels: dict[str, str], values: str, alert: str, fire: dict[str, bool], extra_series: tuple[dict[str, str], ...] = ()) -> dict[str, t.Any]:
    """One promtool test: ``values`` (one a minute) of the series ``name``; at each eval time of ``fire`` the alert
    fires (with the series' labels and its severity) or does not."""
    severity = "critical" if alert in ("SparkopsVllmEngineDown", "SparkopsMemoryGuardFired", "SparkopsMemoryGuardHolding") else "warning"
    checks = []
    for eval_time, fires in fire.items():
        expected = [{"exp_labels": {**labels, "severity": severity}}] if fires else []
        checks.append({"eval_time": eval_time, "alertname": alert, "exp_alerts": expected})
    input_series = [{"series": series(labels, name), "values": values}] if name else []
    return {"interval": "1m", "input_series": input_series + list(extra_series), "alert_rule_test": checks}


def test_the_targets_name_the_head_for_vllm_and_every_node_for_the_exporter() -> None:
    targets = file_sd(NODES, "spark-head", 8000, 9100)
    assert targets[VLLM_JOB] == [{"targets": ["10.0.0.21:8000"], "labels": {"sparkops_node": "spark-head", "sparkops_role": "head"}}]
    assert [group["targets"] for group in targets[NODE_JOB]] == [["10.0.0.21:9100"], ["192.168.100.11:9100"], ["[fd00::12]:9100"]]
    assert [group["labels"]["sparkops_role"] for group in targets[NODE_JOB]] == ["head", "worker", "worker"]
    assert list(file_sd(NODES, "spark-head", "8000", 9100, scrape_nodes=False)) == [VLLM_JOB]


def test_a_node_without_an_address_is_scraped_at_its_inventory_name() -> None:
    targets = file_sd({"spark-head": "", "spark-worker1": None}, "spark-head", 8000, 9100)
    assert [group["targets"] for group in targets[NODE_JOB]] == [["spark-head:9100"], ["spark-worker1:9100"]]


@pytest.mark.parametrize(
    ("nodes", "head", "vllm_port", "node_port", "message"),
    [
        ({"spark-head": "10.0.0.21 10.0.0.22"}, "spark-head", 8000, 9100, "ansible_host of host spark-head must be an IP address or a DNS name"),
        ({"spark-head": "10.0.0.21:8000"}, "spark-head", 8000, 9100, "ansible_host of host spark-head must be an IP address or a DNS name"),
        ({"spark-head": "0.0.0.0"}, "spark-head", 8000, 9100, "ansible_host of host spark-head must be an address Prometheus can reach"),
        ({"spark-head": "10.0.0.21"}, "spark-head", 0, 9100, "metrics_vllm_port must be a port number (1-65535), got 0"),
        ({"spark-head": "10.0.0.21"}, "spark-head", 8000, "91OO", "metrics_node_exporter_port must be a port number"),
        ({"spark-head": "10.0.0.21"}, "spark-head", True, 9100, "metrics_vllm_port must be a port number"),
        ({"spark-head": "10.0.0.21"}, "spark-head", 9100, 9100, "metrics_node_exporter_port 9100 is also vLLM's port on the head (metrics_vllm_port)"),
        ({}, "spark-head", 8000, 9100, "ansible_host must map each node"),
        ({"spark-worker1": "10.0.0.22"}, "spark-head", 8000, 9100, "the head 'spark-head' is not one of the nodes"),
    ],
)
def test_a_bad_target_is_refused_naming_its_variable(nodes: dict[str, t.Any], head: str, vllm_port: t.Any, node_port: t.Any, message: str) -> None:
    names = {"nodes": "ansible_host", "vllm_port": "metrics_vllm_port", "node_exporter_port": "metrics_node_exporter_port"}
    with pytest.raises(MetricsConfigError) as caught:
        file_sd(nodes, head, vllm_port, node_port, names=names)
    assert message in str(caught.value)


def test_the_scrape_jobs_read_the_target_files_and_promtool_takes_them(tmp_path: Path) -> None:
    for job, groups in file_sd(NODES, "spark-head", 8000, 9100).items():
        (tmp_path / f"{job}.json").write_text(json.dumps(groups))
    jobs = scrape_config(str(tmp_path) + "/", "https")
    assert [job["job_name"] for job in jobs["scrape_configs"]] == [VLLM_JOB, NODE_JOB]
    assert jobs["scrape_configs"][0]["scheme"] == "https" and jobs["scrape_configs"][1]["scheme"] == "http"
    assert jobs["scrape_configs"][0]["file_sd_configs"] == [{"files": [f"{tmp_path}/{VLLM_JOB}.json"]}]
    config = tmp_path / "scrape.yml"
    config.write_text(yaml.safe_dump(jobs))
    checked = promtool("check", "config", str(config))
    assert checked.returncode == 0 and "WARNING" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr
    assert [job["job_name"] for job in scrape_config("/etc/prometheus/file_sd", scrape_nodes=False)["scrape_configs"]] == [VLLM_JOB]


@pytest.mark.parametrize(("folder", "scheme"), [("file_sd", "http"), ("/etc/prometheus/*", "http"), ("/etc/prometheus", "ftp"), (None, "http")])
def test_bad_scrape_job_values_are_refused(folder: t.Any, scheme: t.Any) -> None:
    with pytest.raises(MetricsConfigError, match="must be"):
        scrape_config(folder, scheme)


def test_promtool_checks_the_rules_and_their_templates(tmp_path: Path) -> None:
    checked = promtool("check", "rules", str(write_rules(tmp_path, alert_rules())))
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
    names = [rule["alert"] for rule in alert_rules()["groups"][0]["rules"]]
    assert names == [
        "SparkopsVllmEngineDown",
        "SparkopsVllmWedged",
        "SparkopsVllmQueueGrowing",
        "SparkopsVllmKvCacheFull",
        "SparkopsMemoryGuardFired",
        "SparkopsMemoryGuardHolding",
    ]


def wedge_case(running: str, generated: str, prompts: str, fire: dict[str, bool]) -> dict[str, t.Any]:
    """The wedge alert over vLLM's three series (one value a minute): it carries the instance and node, and its
    severity."""
    labels = {"instance": VLLM["instance"], "sparkops_node": VLLM["sparkops_node"], "severity": "critical"}
    return {
        "interval": "1m",
        "input_series": [
            {"series": series({**VLLM, "engine": "0"}, "vllm:num_requests_running"), "values": running},
            {"series": series({**VLLM, "engine": "0"}, "vllm:generation_tokens_total"), "values": generated},
            {"series": series({**VLLM, "engine": "0"}, "vllm:prompt_tokens_total"), "values": prompts},
        ],
        "alert_rule_test": [
            {"eval_time": at, "alertname": "SparkopsVllmWedged", "exp_alerts": [{"exp_labels": labels}] if fires else []} for at, fires in fire.items()
        ],
    }


DEFAULT_CASES = [
    # Wedged: a request running, tokens stop after minute 3: fires once 5m have passed without one, not before.
    wedge_case("1x20", "0 10 20 30x17", "32x20", {"7m": False, "8m": True, "15m": True}),
    wedge_case("1x20", "0+10x20", "32x20", {"10m": False, "20m": False}),  # generating
    wedge_case("0x20", "30x20", "32x20", {"10m": False, "20m": False}),  # idle: nothing running
    wedge_case("1x20", "30x20", "0+100x20", {"10m": False, "20m": False}),  # prompts processed: not stuck
    # Engine down: down from minute 2; fires once 10m down, not before; an engine that answers never.
    case("up", VLLM, "1 1 0x20", "SparkopsVllmEngineDown", {"5m": False, "11m": False, "12m": True, "20m": True}),
    case("up", VLLM, "1x20", "SparkopsVllmEngineDown", {"20m": False}),
    case("up", VLLM, "0x4 1 0x15", "SparkopsVllmEngineDown", {"15m": False, "16m": True}),  # an answer restarts the wait
    # No vLLM target at all (its target file gone): absent() fires, with the job's label.
    {
        "interval": "1m",
        "input_series": [{"series": series(NODE, "up"), "values": "1x20"}],
        "alert_rule_test": [
            {"eval_time": "9m", "alertname": "SparkopsVllmEngineDown", "exp_alerts": []},
            {"eval_time": "11m", "alertname": "SparkopsVllmEngineDown", "exp_alerts": [{"exp_labels": {"job": VLLM_JOB, "severity": "critical"}}]},
        ],
    },
    # Queue: more than 5 waiting for 5m fires; 5 waiting (not more) never; a queue that empties restarts the wait.
    case("vllm:num_requests_waiting", VLLM, "0 6x12", "SparkopsVllmQueueGrowing", {"5m": False, "6m": True, "12m": True}),
    case("vllm:num_requests_waiting", VLLM, "5x20", "SparkopsVllmQueueGrowing", {"10m": False, "20m": False}),
    case("vllm:num_requests_waiting", VLLM, "6 6 6 6 0 6 6 6 6 6 6", "SparkopsVllmQueueGrowing", {"8m": False, "10m": True}),
    # KV cache: at least 0.95 for 5m fires; 0.94 never; a short burst of 1.0 never.
    case("vllm:kv_cache_usage_perc", VLLM, "0.5 0.95x10", "SparkopsVllmKvCacheFull", {"5m": False, "6m": True}),
    case("vllm:kv_cache_usage_perc", VLLM, "0.94x20", "SparkopsVllmKvCacheFull", {"20m": False}),
    case("vllm:kv_cache_usage_perc", VLLM, "0.5 1 1 1 0.5x10", "SparkopsVllmKvCacheFull", {"3m": False, "8m": False}),
    # Memory guard: a stop fires at once and for the 15m window after it; no stop never.
    case("sparkops_memory_guard_stops_total", NODE, "0 0 0 1x30", "SparkopsMemoryGuardFired", {"2m": False, "3m": True, "17m": True, "19m": False}),
    case("sparkops_memory_guard_stops_total", NODE, "2x30", "SparkopsMemoryGuardFired", {"30m": False}),  # old stops only
    # A guard restarted with its counter kept (state file) and a second stop: fires again.
    case("sparkops_memory_guard_stops_total", NODE, "1x20 2x10", "SparkopsMemoryGuardFired", {"19m": False, "21m": True}),
    # Holding: fires while 1, not once memory is back.
    case("sparkops_memory_guard_holding", NODE, "0 0 1 1 1 0x5", "SparkopsMemoryGuardHolding", {"1m": False, "2m": True, "4m": True, "6m": False}),
]


def test_promtool_each_alert_fires_at_its_threshold_and_not_below(tmp_path: Path) -> None:
    result = run_rule_tests(tmp_path, alert_rules(), DEFAULT_CASES)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_promtool_the_thresholds_given_are_the_ones_used(tmp_path: Path) -> None:
    rules = alert_rules(
        engine_down_for="2m", queue_waiting=0, queue_for="1m", kv_cache_usage="0.8", kv_cache_for="1m", memory_guard_window="5m", wedged_for="2m"
    )
    cases = [
        wedge_case("1x20", "0 10 20 30x17", "32x20", {"4m": False, "5m": True}),
        case("up", VLLM, "1 0x10", "SparkopsVllmEngineDown", {"2m": False, "3m": True}),
        case("vllm:num_requests_waiting", VLLM, "0 1x5", "SparkopsVllmQueueGrowing", {"1m": False, "2m": True}),
        case("vllm:kv_cache_usage_perc", VLLM, "0.5 0.8x5", "SparkopsVllmKvCacheFull", {"1m": False, "2m": True}),
        case("sparkops_memory_guard_stops_total", NODE, "0 1x20", "SparkopsMemoryGuardFired", {"1m": True, "5m": True, "7m": False}),
    ]
    result = run_rule_tests(tmp_path, rules, cases)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_fails_an_alert_expected_where_it_does_not_fire(tmp_path: Path) -> None:
    # The harness can fail: 5 waiting requests (not more than 5) said to fire.
    wrong = case("vllm:num_requests_waiting", VLLM, "5x20", "SparkopsVllmQueueGrowing", {"10m": True})
    result = run_rule_tests(tmp_path, alert_rules(), [wrong])
    assert result.returncode != 0 and "SparkopsVllmQueueGrowing" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"engine_down_for": "10 minutes"}, "metrics_alert_engine_down_for must be a Prometheus duration"),
        ({"queue_for": ""}, "metrics_alert_queue_for must be a Prometheus duration"),
        ({"kv_cache_for": "5m1h"}, "metrics_alert_kv_cache_for must be a Prometheus duration"),
        ({"memory_guard_window": "0m"}, "metrics_alert_memory_guard_window must be longer than 0"),
        ({"wedged_for": "0s"}, "metrics_alert_wedged_for must be longer than 0"),
        ({"queue_waiting": -1}, "metrics_alert_queue_waiting must be a whole number"),
        ({"queue_waiting": 2.5}, "metrics_alert_queue_waiting must be a whole number"),
        ({"queue_waiting": True}, "metrics_alert_queue_waiting must be a whole number"),
        ({"kv_cache_usage": 1.5}, "metrics_alert_kv_cache_usage must be a fraction in (0, 1]"),
        ({"kv_cache_usage": 0}, "metrics_alert_kv_cache_usage must be a fraction"),
        ({"kv_cache_usage": "nan"}, "metrics_alert_kv_cache_usage must be a fraction"),
        ({"kv_cache_usage": "full"}, "metrics_alert_kv_cache_usage must be a fraction"),
    ],
)
def test_a_bad_threshold_is_refused_naming_its_variable(kwargs: dict[str, t.Any], message: str) -> None:
    keys = ("engine_down_for", "queue_waiting", "queue_for", "kv_cache_usage", "kv_cache_for", "memory_guard_window", "wedged_for")
    names = {key: f"metrics_alert_{key}" for key in keys}
    with pytest.raises(MetricsConfigError) as caught:
        alert_rules(**kwargs, names=names)
    assert message in str(caught.value)
