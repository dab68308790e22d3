# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The metrics role run by ansible-playbook on this machine (every host a local connection): a head, two workers and
a Prometheus host. Off (every default) it changes nothing; on, the file_sd targets name the head's address and the
serve port for vLLM and every node's at 9100 for the node exporter, the scrape jobs read them and promtool takes the
rules and the jobs, on the controller and on the Prometheus host; a second run changes nothing; a bad value is refused
naming its variable before anything is written; a real Prometheus (Debian's, from `make setup`) reads the files, scrapes
stand-ins for vLLM's /metrics and a node exporter, and fires the alerts. The rules' behaviour in detail:
tests/unit/plugins/plugin_utils/test__metrics_config.py."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import typing as t
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from ansible_run import play

NODES = {
    "spark-head": {"ansible_host": "10.0.0.21", "sparkops_fabric_ip": "192.168.100.10"},
    "spark-worker1": {"ansible_host": "192.168.100.11", "sparkops_fabric_ip": "192.168.100.11"},
    "spark-worker2": {"ansible_host": "10.0.0.23", "sparkops_fabric_ip": "192.168.100.12"},
}
PLAY = yaml.safe_dump(
    [{"name": "Metrics", "hosts": "spark_head:spark_workers", "gather_facts": False, "roles": [{"role": "sparkops.inference.metrics"}]}], sort_keys=False
)
RECAP = re.compile(r"^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


def inventory(head: dict[str, t.Any] | None = None, nodes: dict[str, dict[str, t.Any]] | None = None) -> dict[str, t.Any]:
    hosts = {**(nodes or NODES)}
    hosts["spark-head"] = {**hosts["spark-head"], **(head or {})}
    return {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "sparkops_serve_port": 8000},
            "children": {
                "spark_head": {"hosts": {"spark-head": hosts["spark-head"]}},
                "spark_workers": {"hosts": {name: hosts[name] for name in ("spark-worker1", "spark-worker2")}},
                "prometheus": {"hosts": {"prometheus1": {}}},
            },
        }
    }


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make setup` installs it (tools/setup_host.sh)"
    return path


def run(
    tmp_path: Path, extra: dict[str, t.Any], head: dict[str, t.Any] | None = None, nodes: dict[str, dict[str, t.Any]] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, int]]:
    """The play and, by host, how many tasks changed something."""
    proc = play(tmp_path, inventory(head, nodes), PLAY, extra)
    recap = {host: int(changed) for host, changed, _unreachable, _failed in RECAP.findall(proc.stdout)}
    return proc, recap


def on(tmp_path: Path, **extra: t.Any) -> dict[str, t.Any]:
    return {
        "metrics_controller_dir": str(tmp_path / "controller"),
        "metrics_prometheus_host": "prometheus1",
        "metrics_prometheus_config_dir": str(tmp_path / "prometheus"),
        "metrics_prometheus_service": "",  # no Prometheus unit here
        "metrics_prometheus_promtool": promtool(),
        **extra,
    }


def targets(path: Path) -> list[tuple[str, str, str]]:
    return [(group["labels"]["sparkops_node"], group["labels"]["sparkops_role"], *group["targets"]) for group in json.loads(path.read_text())]


def test_off_by_default_a_run_changes_and_writes_nothing(tmp_path: Path) -> None:
    proc, recap = run(tmp_path, {})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert recap == {"spark-head": 0, "spark-worker1": 0, "spark-worker2": 0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extra.json", "hosts.yml", "play.yml"]


def test_the_targets_jobs_and_rules_on_the_controller_and_the_prometheus_host_then_a_rerun_changes_nothing(tmp_path: Path) -> None:
    proc, recap = run(tmp_path, on(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert recap["spark-head"] > 0 and recap["spark-worker1"] == recap["spark-worker2"] == 0  # run_once, on the first node
    controller, prometheus = tmp_path / "controller", tmp_path / "prometheus"
    for folder, file_sd in ((controller, controller), (prometheus, prometheus / "file_sd")):
        assert targets(file_sd / "sparkops-vllm.json") == [("spark-head", "head", "10.0.0.21:8000")]
        assert targets(file_sd / "sparkops-node.json") == [
            ("spark-head", "head", "10.0.0.21:9100"),
            ("spark-worker1", "worker", "192.168.100.11:9100"),
            ("spark-worker2", "worker", "10.0.0.23:9100"),
        ]
        jobs_file = folder / ("sparkops-scrape.yml" if folder == controller else "scrape_configs/sparkops-scrape.yml")
        rules_file = folder / ("sparkops.rules" if folder == controller else "rules/sparkops.rules")
        jobs = yaml.safe_load(jobs_file.read_text())["scrape_configs"]
        assert [(job["job_name"], job["file_sd_configs"][0]["files"]) for job in jobs] == [
            ("sparkops-vllm", [f"{file_sd}/sparkops-vllm.json"]),
            ("sparkops-node", [f"{file_sd}/sparkops-node.json"]),
        ]
        checked = subprocess.run([promtool(), "check", "config", str(jobs_file)], capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and "WARNING" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr
        checked = subprocess.run([promtool(), "check", "rules", str(rules_file)], capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
        text = rules_file.read_text()
        assert text.startswith("# Managed by sparkops.inference (role metrics).")
        assert "{{ $labels.instance }}" in text and "vllm:kv_cache_usage_perc" in text and "sparkops_memory_guard_holding" in text
    again, recap = run(tmp_path, on(tmp_path))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert recap == {"spark-head": 0, "spark-worker1": 0, "spark-worker2": 0}, again.stdout[-3000:]


def test_the_fabric_addresses_for_a_prometheus_on_the_fabric_and_the_thresholds_given(tmp_path: Path) -> None:
    extra = {"metrics_controller_dir": str(tmp_path / "controller"), "metrics_address_var": "sparkops_fabric_ip", "metrics_alert_kv_cache_usage": 0.9}
    proc, _recap = run(tmp_path, {**extra, "metrics_node_exporter_scrape": False})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert targets(tmp_path / "controller" / "sparkops-vllm.json") == [("spark-head", "head", "192.168.100.10:8000")]
    assert not (tmp_path / "controller" / "sparkops-node.json").exists()
    assert 'vllm:kv_cache_usage_perc{job="sparkops-vllm"} >= 0.9\n' in (tmp_path / "controller" / "sparkops.rules").read_text()


TEARDOWN = yaml.safe_dump(
    [
        {
            "name": "Teardown | Metrics",
            "hosts": "spark_head:spark_workers",
            "gather_facts": False,
            "tasks": [{"name": "Remove the metrics", "ansible.builtin.include_role": {"name": "sparkops.inference.metrics", "tasks_from": "teardown"}}],
        }
    ],
    sort_keys=False,
)


def test_the_teardown_removes_the_files_it_wrote_and_leaves_the_rest_then_changes_nothing(tmp_path: Path) -> None:
    proc, _recap = run(tmp_path, on(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (tmp_path / "prometheus" / "rules" / "mine.rules").write_text("groups: []\n")  # someone else's
    for expected_changes in (True, False):  # the first run removes, the second finds nothing
        proc = play(tmp_path, inventory(), TEARDOWN, on(tmp_path))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        recap = {host: int(changed) for host, changed, _unreachable, _failed in RECAP.findall(proc.stdout)}
        assert (recap["spark-head"] > 0) is expected_changes and recap["spark-worker1"] == recap["spark-worker2"] == 0, proc.stdout[-3000:]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path) == ["prometheus/rules/mine.rules"]
    assert (tmp_path / "controller").is_dir() and (tmp_path / "prometheus" / "file_sd").is_dir()


@pytest.mark.parametrize(
    ("extra", "head", "message"),
    [
        ({"metrics_alert_kv_cache_usage": 1.5}, {}, "metrics_alert_kv_cache_usage must be a fraction in (0, 1]"),
        ({"metrics_node_exporter_port": 70000}, {}, "metrics_node_exporter_port must be a port number (1-65535)"),
        ({"metrics_alert_engine_down_for": "ten minutes"}, {}, "metrics_alert_engine_down_for must be a Prometheus duration"),
        ({}, {"ansible_host": "10.0.0.21; rm -rf /"}, "ansible_host of host spark-head must be an IP address or a DNS name"),
        ({"metrics_vllm_scheme": "ftp"}, {}, "metrics_vllm_scheme"),
    ],
)
def test_a_bad_value_is_refused_naming_it_before_anything_is_written(tmp_path: Path, extra: dict[str, t.Any], head: dict[str, t.Any], message: str) -> None:
    proc, _recap = run(tmp_path, on(tmp_path, **extra), head)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and message in said, said[-3000:]
    assert "Traceback" not in said
    assert not (tmp_path / "controller").exists() and not (tmp_path / "prometheus").exists()


# What vLLM 0.30.0 exports (vllm/v1/metrics/loggers.py: the names, the labels model_name and engine): a queue of 7 and a
# KV cache 97% full. And what a node exporter's textfile collector shows of the memory guard holding vLLM stopped.
VLLM_METRICS = """# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen3.5-122b"} 7.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3.5-122b"} 16.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen3.5-122b"} 0.97
"""
GUARD_METRICS = """# TYPE sparkops_memory_guard_stops_total counter
sparkops_memory_guard_stops_total 1
# TYPE sparkops_memory_guard_holding gauge
sparkops_memory_guard_holding 1
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MetricsHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = t.cast("MetricsServer", self.server).body.encode()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - http.server's signature
        pass


class MetricsServer(ThreadingHTTPServer):
    def __init__(self, body: str) -> None:
        super().__init__(("127.0.0.1", 0), MetricsHandler)
        self.body = body


@pytest.fixture
def stand_ins() -> Iterator[tuple[int, int]]:
    """A vLLM /metrics and a node exporter on 127.0.0.1; their ports."""
    servers = [MetricsServer(VLLM_METRICS), MetricsServer(GUARD_METRICS)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield servers[0].server_address[1], servers[1].server_address[1]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def api(base: str, path: str) -> t.Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1, whatever the environment's proxy
    with opener.open(base + path, timeout=5) as response:
        return json.loads(response.read())


def wait_for(check: t.Callable[[], t.Any], what: str, timeout: float = 90.0) -> t.Any:
    deadline = time.monotonic() + timeout
    last: t.Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as exc:  # not listening yet
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout} s; last: {last!r}")


def test_a_real_prometheus_scrapes_the_targets_and_fires_the_alerts(tmp_path: Path, stand_ins: tuple[int, int]) -> None:
    vllm_port, node_port = stand_ins
    nodes = {name: {**hostvars, "ansible_host": "127.0.0.1"} for name, hostvars in NODES.items()}
    extra = {"metrics_controller_dir": str(tmp_path / "controller"), "metrics_vllm_port": vllm_port, "metrics_node_exporter_port": node_port}
    proc, _recap = run(tmp_path, extra, nodes=nodes)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # Prometheus 2.42 (Debian 12) has no scrape_config_files: the jobs go into scrape_configs, as docs/metrics.md says.
    controller = tmp_path / "controller"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(controller / "sparkops.rules")],
        "scrape_configs": yaml.safe_load((controller / "sparkops-scrape.yml").read_text())["scrape_configs"],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: `make setup` installs it (tools/setup_host.sh)"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"]
    with (tmp_path / "prometheus.log").open("w") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: api(base, "/api/v1/status/buildinfo")["status"] == "success", "Prometheus answering")

            def targets_up() -> list[tuple[str, str, str]] | None:
                active = api(base, "/api/v1/targets")["data"]["activeTargets"]
                if len(active) != 4 or any(target["health"] != "up" for target in active):
                    return None
                return sorted((target["labels"]["job"], target["labels"]["sparkops_node"], target["labels"]["instance"]) for target in active)

            assert wait_for(targets_up, "the four targets scraped") == [
                ("sparkops-node", "spark-head", f"127.0.0.1:{node_port}"),
                ("sparkops-node", "spark-worker1", f"127.0.0.1:{node_port}"),
                ("sparkops-node", "spark-worker2", f"127.0.0.1:{node_port}"),
                ("sparkops-vllm", "spark-head", f"127.0.0.1:{vllm_port}"),
            ]

            def alerts() -> dict[str, set[tuple[str, str]]] | None:
                found: dict[str, set[tuple[str, str]]] = {}
                for alert in api(base, "/api/v1/alerts")["data"]["alerts"]:
                    found.setdefault(alert["labels"]["alertname"], set()).add((alert["labels"].get("sparkops_node", ""), alert["state"]))
                return found if len(found) == 3 and len(found.get("SparkopsMemoryGuardHolding", ())) == 3 else None

            # The guard holding on every node fires at once; the queue (7 > 5) and the KV cache (0.97) wait their 5m;
            # the engine answers, so no SparkopsVllmEngineDown; the counter's first sample is no increase.
            assert wait_for(alerts, "the alerts") == {
                "SparkopsMemoryGuardHolding": {("spark-head", "firing"), ("spark-worker1", "firing"), ("spark-worker2", "firing")},
                "SparkopsVllmQueueGrowing": {("spark-head", "pending")},
                "SparkopsVllmKvCacheFull": {("spark-head", "pending")},
            }
            rules = api(base, "/api/v1/rules")["data"]["groups"]
            assert [(group["name"], len(group["rules"])) for group in rules] == [("sparkops-inference", 6)]
            assert all(rule["health"] == "ok" for rule in rules[0]["rules"]), rules
        finally:
            server.terminate()
            server.wait(timeout=30)
