# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/benchmark.yml's endpoint as Ansible runs it: the default address is the head's as the load generator
reaches it (from the controller its management address, ansible_host; from a node of the cluster its fabric
address), a given benchmark_url wins; and the load generator's connection check before the sweep: a listening port
passes, a port nothing listens on fails within the connect timeout, naming the URL and the variables to set. The
play's own variables and tasks, as written, on this machine (local connection). And its variable checks for
benchmark_compare: speculative needs vllm_serve_speculative set, anything else is refused by name; the plays of the
comparison (the role without speculation, a sweep, the role as set, a sweep) in that order."""

from __future__ import annotations

import socket
import sys
import time
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import play

REPO = Path(__file__).resolve().parents[3]
BENCHMARK = REPO / "playbooks" / "benchmark.yml"
CHECK = "Benchmark | Check the load generator reaches the endpoint"
SETTINGS = "Benchmark | Check the benchmark variables"


def benchmark_play() -> dict[str, t.Any]:
    """The playbook's first play (the checks), its variables read from its vars_files as Ansible reads them."""
    first = t.cast("dict[str, t.Any]", yaml.safe_load(BENCHMARK.read_text())[0])
    assert first["vars_files"] == ["vars/benchmark.yml"], first["vars_files"]
    return {**first, "vars": yaml.safe_load((BENCHMARK.parent / "vars" / "benchmark.yml").read_text())}


def inventory(head_address: str) -> dict[str, t.Any]:
    """A head reached at ``head_address`` (its ansible_host) and a worker, both on this machine's local connection."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {
        "all": {"vars": {"sparkops_serve_port": 8000}},
        "spark_head": {"hosts": {"spark-head": {"ansible_host": head_address, "sparkops_fabric_ip": "192.168.100.10", **local}}},
        "spark_workers": {"hosts": {"spark-worker1": {"ansible_host": "192.168.100.11", "sparkops_fabric_ip": "192.168.100.11", **local}}},
    }


def run(tmp_path: Path, tasks: list[dict[str, t.Any]], extra: dict[str, t.Any], head_address: str = "10.0.0.21") -> t.Any:
    source = benchmark_play()
    plays = [{"name": "benchmark.yml's endpoint", "hosts": "spark_head", "gather_facts": False, "vars": source["vars"], "tasks": tasks}]
    return play(tmp_path, inventory(head_address), yaml.safe_dump(plays), extra)


URL_TASK = {
    "name": "Write the endpoint",
    "ansible.builtin.copy": {"content": "{{ __benchmark_url }}", "dest": "{{ out }}", "mode": "0600"},
    "delegate_to": "localhost",
}


@pytest.mark.parametrize(
    ("head_address", "extra", "url"),
    [
        ("10.0.0.21", {}, "http://10.0.0.21:8000"),  # the controller (the default benchmark_run_on): management
        ("spark-head.lan", {}, "http://spark-head.lan:8000"),
        ("fd00::21", {}, "http://[fd00::21]:8000"),
        ("10.0.0.21", {"benchmark_run_on": "spark-worker1"}, "http://192.168.100.10:8000"),  # a node: the fabric
        ("10.0.0.21", {"benchmark_run_on": "spark-head"}, "http://192.168.100.10:8000"),
        ("10.0.0.21", {"benchmark_run_on": "spark-worker1", "benchmark_url": "http://10.9.9.9:8001/v1"}, "http://10.9.9.9:8001/v1"),
    ],
)
def test_the_default_endpoint_is_the_head_s_address_as_the_load_generator_reaches_it(
    tmp_path: Path, head_address: str, extra: dict[str, t.Any], url: str
) -> None:
    out = tmp_path / "url"
    proc = run(tmp_path, [URL_TASK], {**extra, "out": str(out)}, head_address)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert out.read_text() == url


def test_the_connection_check_passes_a_listener_and_fails_at_once_on_a_closed_port_naming_what_to_set(tmp_path: Path) -> None:
    (check,) = [task for task in benchmark_play()["tasks"] if task.get("name") == CHECK]
    with socket.socket() as listener, socket.socket() as closed:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: its port refuses connections while the test runs
        open_url, closed_url = (f"http://127.0.0.1:{sock.getsockname()[1]}/v1" for sock in (listener, closed))
        for case in ("open", "closed"):
            (tmp_path / case).mkdir()
        proc = run(tmp_path / "open", [check], {"benchmark_url": open_url})
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        started = time.monotonic()
        proc = run(tmp_path / "closed", [check], {"benchmark_url": closed_url, "benchmark_connect_timeout": 2})
        took = time.monotonic() - started
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0, said[-3000:]
    netloc = closed_url.split("/")[2]
    assert f"benchmark_url {closed_url}: localhost (benchmark_run_on) cannot reach {netloc} within 2 s" in said, said[-3000:]
    assert "Set benchmark_url to an address localhost reaches" in said and "(the head: spark-head)" in said, said[-3000:]
    assert took < 30, took  # the connect timeout, not the sweep's request timeout (300 s)


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ({}, None),
        ({"benchmark_compare": ""}, None),
        ({"benchmark_compare": "speculative", "vllm_serve_speculative": {"method": "ngram", "num_speculative_tokens": 3}}, None),
        ({"benchmark_compare": "speculative"}, "vllm_serve_speculative={} is not set (a speculative method) for benchmark_compare=speculative"),
        ({"benchmark_compare": "eagle"}, "benchmark_compare=eagle is not empty (one sweep) or speculative"),
    ],
)
def test_benchmark_compare_needs_a_speculative_setting_and_nothing_else_is_taken(tmp_path: Path, extra: dict[str, t.Any], refused: str | None) -> None:
    (check,) = [task for task in benchmark_play()["tasks"] if task.get("name") == SETTINGS]
    proc = run(tmp_path, [check], extra)
    said = proc.stdout + proc.stderr
    if refused is None:
        assert proc.returncode == 0, said[-3000:]
    else:
        assert proc.returncode != 0 and refused in said, said[-3000:]


def test_the_comparison_serves_without_speculation_sweeps_then_serves_as_set_and_sweeps_again() -> None:
    plays = yaml.safe_load(BENCHMARK.read_text())
    steps = []
    for each in plays[1:]:
        if "ansible.builtin.import_playbook" in each:
            steps.append(("preflight", each["when"]))
            continue
        for task in each["tasks"]:
            inner = task.get("block", [task])
            for step in inner:
                if "ansible.builtin.include_role" in step:
                    steps.append(("role", (step.get("vars") or {}).get("vllm_serve_speculative_enabled", True)))
                elif "ansible.builtin.include_tasks" in step:
                    steps.append(("sweep", step["vars"]["__benchmark_sweep_label"]))
    assert steps == [
        ("preflight", "(benchmark_compare | default('', true) | string | trim) == 'speculative'"),
        ("role", False),
        ("sweep", "speculative decoding off"),
        ("role", True),
        ("sweep", "{{ 'speculative decoding on' if __benchmark_comparing | bool else 'the endpoint' }}"),
    ], steps
