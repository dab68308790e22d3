# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _ray_cluster.

tests/unit/fixtures/ray/nodes_single_head.json is what SCRIPT printed against a real single-node Ray 2.60.0 head
(ray start --head --num-gpus=1); nodes_three_nodes.json is derived from it by hand: the head with 1 GPU,
spark-worker1 alive with 0 GPU and spark-worker2 DEAD.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import (
    CONTAINER_PYTHON,
    DEFAULT_PYTHON,
    SCRIPT,
    Probe,
    RayClusterError,
    auth_environment,
    build_argv,
    describe_alive,
    evaluate,
    format_gpus,
    normalise_node,
    normalise_nodes,
    not_ready_message,
    parse_output,
    resolve_python,
    script_args,
    stderr_tail,
    version_mismatches,
    wait_for_cluster,
)
from fake_clock import FakeClock

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ray"
ADDRESS = "192.168.200.11:6379"
FABRIC = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13"}
NODE_KEYS = {"node_id", "ip", "alive", "state", "is_head", "hostname", "resources", "gpus"}
MODULE_NOT_FOUND = """Traceback (most recent call last):
  File "<string>", line 16, in <module>
ModuleNotFoundError: No module named 'ray'
"""


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture(name: str) -> dict[str, t.Any]:
    data = json.loads(fixture_text(name))
    assert isinstance(data, dict)
    return data


def probe_of(name: str) -> Probe:
    return parse_output(0, fixture_text(name), "", DEFAULT_PYTHON)


def raw_node(ip: str, gpus: float | None = 1.0, alive: bool = True, head: bool = False) -> dict[str, t.Any]:
    """A ray.nodes() entry in the shape of the real fixture."""
    resources: dict[str, float] = {"CPU": 20.0, f"node:{ip}": 1.0}
    if gpus is not None:
        resources["GPU"] = gpus
    if head:
        resources["node:__internal_head__"] = 1.0
    return {
        "NodeID": f"id-{ip}",
        "Alive": alive,
        "alive": alive,
        "NodeManagerAddress": ip,
        "NodeManagerHostname": f"host-{ip}",
        "Resources": resources,
    }


def reachable(*nodes: dict[str, t.Any]) -> Probe:
    return Probe(ray_version="2.60.0", python_version="3.11.7", nodes=list(nodes))


def unreachable(error: str = "ConnectionError: Failed to connect to Ray cluster at 192.168.200.11:6379") -> Probe:
    return Probe(ray_version="2.60.0", python_version="3.11.7", connect_error=error, stderr="W gcs_client.cc: Timed out\n")


class Probes:
    """Hands out the given probes in turn (the last one forever), advancing the clock by ``cost`` per call."""

    def __init__(self, clock: FakeClock, *probes: Probe, cost: float = 0.0) -> None:
        self.clock = clock
        self.probes = list(probes)
        self.calls = 0
        self.cost = cost

    def __call__(self) -> Probe:
        self.calls += 1
        self.clock.now += self.cost
        return self.probes[min(self.calls, len(self.probes)) - 1]


# --- argv ---------------------------------------------------------------------------------------------------------


def test_resolve_python() -> None:
    assert resolve_python(None, None) == DEFAULT_PYTHON == "/opt/sparkops/ray/bin/python"
    assert resolve_python(None, "ray-head") == CONTAINER_PYTHON == "python3"
    assert resolve_python("/usr/bin/python3.11", None) == "/usr/bin/python3.11"
    assert resolve_python("/usr/bin/python3.11", "ray-head") == "/usr/bin/python3.11"


def test_build_argv_on_the_host() -> None:
    argv = build_argv(DEFAULT_PYTHON, ADDRESS, "192.168.200.11")
    assert argv[:3] == [DEFAULT_PYTHON, "-c", SCRIPT]
    assert json.loads(argv[3]) == {"address": ADDRESS, "node_ip_address": "192.168.200.11"}
    assert len(argv) == 4


def test_build_argv_without_address() -> None:
    assert json.loads(build_argv(DEFAULT_PYTHON)[3]) == {"address": None, "node_ip_address": None}
    assert json.loads(script_args("", "")) == {"address": None, "node_ip_address": None}


def test_build_argv_in_a_container() -> None:
    argv = build_argv("python3", ADDRESS, None, container="ray-head", docker="/usr/bin/docker")
    assert argv == ["/usr/bin/docker", "exec", "ray-head", "python3", "-c", SCRIPT, script_args(ADDRESS)]


def test_build_argv_in_a_container_passes_the_auth_environment_as_options() -> None:
    environment = auth_environment("/etc/sparkops/private/ray-auth-token")
    assert environment == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/etc/sparkops/private/ray-auth-token"}
    argv = build_argv("python3", ADDRESS, None, container="ray-head", docker="/usr/bin/docker", environment=environment)
    options = ["--env", "RAY_AUTH_MODE=token", "--env", "RAY_AUTH_TOKEN_PATH=/etc/sparkops/private/ray-auth-token"]
    assert argv[:7] == ["/usr/bin/docker", "exec", *options, "ray-head"]
    assert auth_environment(None) == auth_environment("") == {}


def test_build_argv_container_needs_docker() -> None:
    with pytest.raises(RayClusterError, match="no docker binary"):
        build_argv("python3", ADDRESS, container="ray-head")


def test_script_compiles_and_keeps_stdout_for_the_result() -> None:
    compile(SCRIPT, "<SCRIPT>", "exec")
    assert "os.dup2(2, 1)" in SCRIPT
    assert 'os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "1")' in SCRIPT
    for kwarg in ('"logging_level": logging.ERROR', '"log_to_driver": False', '"configure_logging": False', '"_node_ip_address"'):
        assert kwarg in SCRIPT


# --- SCRIPT end to end, against a fake ray package ------------------------------------------------------------------

FAKE_RAY = """
import json, os, sys
__version__ = "2.60.0"
_nodes = json.loads(os.environ["FAKE_RAY_NODES"])
def init(**kwargs):
    print("noise from print while connecting")
    os.write(1, b"noise on fd 1\\n")
    with open(os.environ["FAKE_RAY_INIT_LOG"], "w") as log:
        json.dump({"kwargs": kwargs, "wait": os.environ.get("RAY_gcs_server_port_wait_time_s")}, log)
    if os.environ.get("FAKE_RAY_FAIL"):
        raise ConnectionError("Failed to connect to Ray cluster at " + kwargs["address"])
def nodes():
    return _nodes
def shutdown():
    os.write(2, b"shutdown called\\n")
"""


def run_script(tmp_path: Path, args: dict[str, t.Any], fail: bool = False, with_ray: bool = True) -> subprocess.CompletedProcess[str]:
    if with_ray:
        (tmp_path / "ray").mkdir()
        (tmp_path / "ray" / "__init__.py").write_text(FAKE_RAY, encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(tmp_path),
        "FAKE_RAY_NODES": json.dumps(fixture("nodes_single_head.json")["nodes"]),
        "FAKE_RAY_INIT_LOG": str(tmp_path / "init.json"),
    }
    if fail:
        env["FAKE_RAY_FAIL"] = "1"
    # -I would drop PYTHONPATH; -S keeps site-packages (and any real ray) out of the way.
    argv = [sys.executable, "-S", "-c", SCRIPT, json.dumps(args)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)


def test_script_reports_nodes_and_passes_the_init_arguments(tmp_path: Path) -> None:
    proc = run_script(tmp_path, {"address": "127.0.0.1:6399", "node_ip_address": "127.0.0.1"})
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1, proc.stdout
    assert "noise from print" in proc.stderr and "noise on fd 1" in proc.stderr
    assert "shutdown called" in proc.stderr
    probe = parse_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert probe.ray_version == "2.60.0"
    assert probe.python_version == ".".join(str(part) for part in sys.version_info[:3])
    assert probe.nodes == fixture("nodes_single_head.json")["nodes"]
    init = json.loads((tmp_path / "init.json").read_text(encoding="utf-8"))
    assert init["kwargs"] == {
        "address": "127.0.0.1:6399",
        "_node_ip_address": "127.0.0.1",
        "logging_level": 40,
        "log_to_driver": False,
        "configure_logging": False,
    }
    assert init["wait"] == "1"


def test_script_without_node_ip_address_leaves_it_to_ray(tmp_path: Path) -> None:
    proc = run_script(tmp_path, {"address": "127.0.0.1:6399", "node_ip_address": None})
    assert proc.returncode == 0, proc.stderr
    init = json.loads((tmp_path / "init.json").read_text(encoding="utf-8"))
    assert "_node_ip_address" not in init["kwargs"]


def test_script_without_address_only_reports_versions(tmp_path: Path) -> None:
    proc = run_script(tmp_path, {"address": None, "node_ip_address": None})
    data = json.loads(proc.stdout)
    assert set(data) == {"python_version", "python_executable", "ray_version"}
    assert not (tmp_path / "init.json").exists()


def test_script_reports_a_connection_failure(tmp_path: Path) -> None:
    proc = run_script(tmp_path, {"address": "127.0.0.1:6398"}, fail=True)
    assert proc.returncode == 0, proc.stderr
    probe = parse_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert probe.nodes is None
    assert not probe.reached
    assert probe.connect_error == "ConnectionError: Failed to connect to Ray cluster at 127.0.0.1:6398"
    assert "shutdown called" in probe.stderr


def test_script_reports_ray_missing(tmp_path: Path) -> None:
    proc = run_script(tmp_path, {"address": "127.0.0.1:6399"}, with_ray=False)
    with pytest.raises(RayClusterError) as excinfo:
        parse_output(proc.returncode, proc.stdout, proc.stderr, "/opt/sparkops/ray/bin/python")
    assert str(excinfo.value) == "ray is not importable by /opt/sparkops/ray/bin/python: ModuleNotFoundError: No module named 'ray'"


# --- parsing ------------------------------------------------------------------------------------------------------


def test_parse_the_real_single_head_output() -> None:
    data = fixture("nodes_single_head.json")
    assert set(data) == {"nodes", "python_executable", "python_version", "ray_version"}
    probe = probe_of("nodes_single_head.json")
    assert probe.ray_version == "2.60.0"
    assert probe.python_version == "3.11.7"
    assert probe.connect_error is None
    assert probe.reached
    assert probe.nodes is not None and len(probe.nodes) == 1


def test_real_fixture_has_the_fields_the_normaliser_reads() -> None:
    (raw,) = fixture("nodes_single_head.json")["nodes"]
    for key in ("NodeID", "Alive", "NodeManagerAddress", "NodeManagerHostname", "Resources"):
        assert key in raw, key
    assert "node:__internal_head__" in raw["Resources"]
    assert raw["Resources"]["GPU"] == 1.0


def test_normalise_the_real_head() -> None:
    (raw,) = fixture("nodes_single_head.json")["nodes"]
    node = normalise_node(raw)
    assert set(node) == NODE_KEYS
    assert node["node_id"] == raw["NodeID"] and len(node["node_id"]) == 56
    assert node["ip"] == raw["NodeManagerAddress"] == "127.0.0.1"
    assert node["hostname"] == raw["NodeManagerHostname"]
    assert node["alive"] is True
    assert node["state"] == "ALIVE"
    assert node["is_head"] is True
    assert node["gpus"] == 1.0 and isinstance(node["gpus"], float)
    assert node["resources"] == raw["Resources"]


def test_parse_output_tolerates_noise_before_the_result() -> None:
    stdout = "some banner\n" + fixture_text("nodes_single_head.json")
    assert probe_of("nodes_single_head.json") == parse_output(0, stdout, "", DEFAULT_PYTHON)


def test_parse_output_ray_missing_from_a_traceback() -> None:
    with pytest.raises(RayClusterError) as excinfo:
        parse_output(1, "", MODULE_NOT_FOUND, DEFAULT_PYTHON)
    assert str(excinfo.value) == "ray is not importable by /opt/sparkops/ray/bin/python: ModuleNotFoundError: No module named 'ray'"


def test_parse_output_ray_missing_reported_by_the_script() -> None:
    stdout = json.dumps({"python_version": "3.12.3", "import_error": "ModuleNotFoundError: No module named 'ray'"})
    with pytest.raises(RayClusterError) as excinfo:
        parse_output(0, stdout, "", "python3", " in container ray-head")
    assert str(excinfo.value) == "ray is not importable by python3 in container ray-head: ModuleNotFoundError: No module named 'ray'"


def test_parse_output_not_json() -> None:
    with pytest.raises(RayClusterError) as excinfo:
        parse_output(126, "", "OCI runtime exec failed: container not running\n", "python3", " in container ray-head")
    message = str(excinfo.value)
    assert message.startswith("running python3 in container ray-head did not print the expected JSON object (rc=126)")
    assert "container not running" in message


def test_parse_output_garbage_without_stderr_shows_stdout() -> None:
    with pytest.raises(RayClusterError, match=r"rc=0\); stdout: 'Segmentation fault'"):
        parse_output(0, "Segmentation fault", "", DEFAULT_PYTHON)


@pytest.mark.parametrize(
    "stdout",
    [
        "[]",
        json.dumps({"python_version": "3.11.7"}),
        json.dumps({"python_version": "3.11.7", "ray_version": "2.60.0", "nodes": {"a": 1}}),
        json.dumps({"python_version": "3.11.7", "ray_version": "2.60.0", "nodes": ["x"]}),
    ],
)
def test_parse_output_rejects_wrong_shapes(stdout: str) -> None:
    with pytest.raises(RayClusterError):
        parse_output(0, stdout, "", DEFAULT_PYTHON)


def test_stderr_tail_keeps_the_last_non_empty_lines() -> None:
    stderr = "\n".join(f"line {i}" for i in range(40)) + "\n\n   \n"
    assert stderr_tail(stderr, 3) == "line 37\nline 38\nline 39"
    assert stderr_tail("") == ""


# --- normalisation ------------------------------------------------------------------------------------------------


def test_normalise_the_three_node_fixture() -> None:
    probe = probe_of("nodes_three_nodes.json")
    assert probe.nodes is not None
    nodes = normalise_nodes(probe.nodes)
    assert [(n["ip"], n["alive"], n["state"], n["is_head"], n["gpus"]) for n in nodes] == [
        ("192.168.200.11", True, "ALIVE", True, 1.0),
        ("192.168.200.12", True, "ALIVE", False, 0.0),
        ("192.168.200.13", False, "DEAD", False, 1.0),
    ]
    assert [n["hostname"] for n in nodes] == ["spark-head", "spark-worker1", "spark-worker2"]


def test_normalise_derives_what_ray_leaves_out() -> None:
    node = normalise_node({"NodeID": "x", "alive": False, "NodeManagerAddress": "10.0.0.1"})
    assert node == {
        "node_id": "x",
        "ip": "10.0.0.1",
        "alive": False,
        "state": "DEAD",
        "is_head": False,
        "hostname": "",
        "resources": {},
        "gpus": 0.0,
    }
    assert normalise_node({"Alive": True, "state": "ALIVE", "Resources": {"GPU": "2"}})["gpus"] == 2.0
    assert normalise_node({"Alive": True, "Resources": {"GPU": True}})["gpus"] == 0.0


def test_normalise_nodes_orders_alive_head_first() -> None:
    nodes = normalise_nodes([raw_node("10.0.0.3", alive=False), raw_node("10.0.0.2"), raw_node("10.0.0.9", head=True)])
    assert [n["ip"] for n in nodes] == ["10.0.0.9", "10.0.0.2", "10.0.0.3"]


def test_format_gpus_and_describe_alive() -> None:
    assert format_gpus(1.0) == "1"
    assert format_gpus(0.5) == "0.5"
    assert describe_alive([]) == "no alive nodes"
    one = normalise_nodes([raw_node("10.0.0.1", head=True), raw_node("10.0.0.2", alive=False)])
    assert describe_alive(one) == "1 alive node: 10.0.0.1 (head, 1 GPU)"


# --- expectations -------------------------------------------------------------------------------------------------


def three_nodes() -> list[dict[str, t.Any]]:
    probe = probe_of("nodes_three_nodes.json")
    assert probe.nodes is not None
    return normalise_nodes(probe.nodes)


def test_evaluate_names_every_missing_host_and_why() -> None:
    evaluation = evaluate(three_nodes(), FABRIC, 1)
    assert not evaluation.ready
    assert evaluation.missing == ["spark-worker1", "spark-worker2"]
    assert evaluation.problems == [
        "spark-worker1 (192.168.200.12) is alive with 0 GPU, expected 1",
        "spark-worker2 (192.168.200.13) is DEAD",
    ]
    assert evaluation.alive_nodes == 2
    assert evaluation.total_gpus == 1.0
    assert evaluation.unexpected_nodes == []


def test_evaluate_without_gpu_expectation_only_needs_alive_nodes() -> None:
    evaluation = evaluate(three_nodes(), {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"})
    assert evaluation.ready
    assert evaluation.missing == [] and evaluation.problems == []


def test_evaluate_not_joined_and_unexpected_nodes() -> None:
    expected = {"spark-head": "192.168.200.11", "spark-worker3": "192.168.200.14"}
    evaluation = evaluate(three_nodes(), expected, 1)
    assert evaluation.missing == ["spark-worker3"]
    assert evaluation.problems == ["spark-worker3 (192.168.200.14) has not joined"]
    assert [n["ip"] for n in evaluation.unexpected_nodes] == ["192.168.200.12"]


def test_evaluate_prefers_the_alive_node_of_a_restarted_host() -> None:
    nodes = normalise_nodes([raw_node("10.0.0.1", head=True), raw_node("10.0.0.2", alive=False), raw_node("10.0.0.2")])
    evaluation = evaluate(nodes, {"h": "10.0.0.1", "w": "10.0.0.2"}, 1)
    assert evaluation.ready
    assert evaluation.alive_nodes == 2 and evaluation.total_gpus == 2.0


def test_evaluate_without_expectations_is_ready() -> None:
    evaluation = evaluate(three_nodes())
    assert evaluation.ready
    assert evaluation.unexpected_nodes == []
    assert evaluation.alive_nodes == 2


def test_not_ready_message_names_every_missing_host() -> None:
    nodes = normalise_nodes([raw_node("192.168.200.11", head=True), raw_node("192.168.200.12", gpus=None)])
    evaluation = evaluate(nodes, FABRIC, 1)
    assert not_ready_message(ADDRESS, evaluation, 120) == (
        "Ray cluster at 192.168.200.11:6379: after 120s, spark-worker1 (192.168.200.12) is alive with 0 GPU, expected 1; "
        "spark-worker2 (192.168.200.13) has not joined. "
        "Last state seen: 2 alive nodes: 192.168.200.11 (head, 1 GPU), 192.168.200.12 (0 GPU)"
    )
    assert not_ready_message(ADDRESS, evaluation, 0).startswith("Ray cluster at 192.168.200.11:6379: spark-worker1 ")


# --- waiting ------------------------------------------------------------------------------------------------------


def test_wait_polls_until_ready() -> None:
    fake = FakeClock()
    head, worker1, worker2 = (raw_node(ip, head=(host == "spark-head")) for host, ip in FABRIC.items())
    probes = Probes(fake, unreachable(), reachable(head), reachable(head, worker1), reachable(head, worker1, worker2))
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=60, poll_interval=2, clock=fake.clock, sleep=fake.sleep)
    assert outcome.failure is None
    assert outcome.attempts == probes.calls == 4
    assert fake.sleeps == [2, 2, 2]
    assert outcome.evaluation is not None and outcome.evaluation.ready
    assert outcome.evaluation.alive_nodes == 3


def test_wait_gives_up_at_the_timeout_with_the_last_state() -> None:
    fake = FakeClock()
    head = raw_node("192.168.200.11", head=True)
    probes = Probes(fake, reachable(head), cost=1.5)
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=10, poll_interval=3, clock=fake.clock, sleep=fake.sleep)
    assert outcome.failure == (
        "Ray cluster at 192.168.200.11:6379: after 10s, spark-worker1 (192.168.200.12) has not joined; "
        "spark-worker2 (192.168.200.13) has not joined. Last state seen: 1 alive node: 192.168.200.11 (head, 1 GPU)"
    )
    assert outcome.evaluation is not None and outcome.evaluation.missing == ["spark-worker1", "spark-worker2"]
    # each probe costs 1.5 s: they end at 1.5, 6 and 10.5 s; no sleep reaches past the deadline
    assert fake.sleeps == [3, 3]
    assert fake.now - 1000.0 == 10.5
    assert probes.calls == 3


def test_wait_cuts_the_last_sleep_to_the_deadline() -> None:
    fake = FakeClock()
    probes = Probes(fake, reachable(raw_node("192.168.200.11", head=True)))
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=5, poll_interval=3, clock=fake.clock, sleep=fake.sleep)
    assert fake.sleeps == [3, 2]
    assert probes.calls == 3
    assert outcome.failure is not None and "after 5s" in outcome.failure


def test_wait_with_zero_timeout_looks_once() -> None:
    fake = FakeClock()
    probes = Probes(fake, reachable(raw_node("192.168.200.11", head=True)))
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=0, clock=fake.clock, sleep=fake.sleep)
    assert probes.calls == 1
    assert fake.sleeps == []
    assert outcome.failure is not None and outcome.failure.startswith("Ray cluster at 192.168.200.11:6379: spark-worker1")


def test_wait_reports_an_unreachable_cluster_with_the_stderr_tail() -> None:
    fake = FakeClock()
    probes = Probes(fake, unreachable(), cost=41)
    runner = "python3 in container ray-head"
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=120, poll_interval=5, runner=runner, clock=fake.clock, sleep=fake.sleep)
    assert outcome.evaluation is None
    assert outcome.failure == (
        "Ray cluster at 192.168.200.11:6379: cannot connect after 120s (ray.init by python3 in container ray-head): "
        "ConnectionError: Failed to connect to Ray cluster at 192.168.200.11:6379; stderr tail:\nW gcs_client.cc: Timed out"
    )
    assert probes.calls == 3


def test_wait_reports_the_last_reachable_state_when_it_ends_unreachable() -> None:
    fake = FakeClock()
    probes = Probes(fake, reachable(raw_node("192.168.200.11", head=True)), unreachable())
    outcome = wait_for_cluster(probes, ADDRESS, FABRIC, 1, timeout=4, poll_interval=2, clock=fake.clock, sleep=fake.sleep)
    assert outcome.failure is not None and "cannot connect after 4s" in outcome.failure


def test_wait_does_not_retry_errors_that_waiting_cannot_fix() -> None:
    fake = FakeClock()
    calls: list[int] = []

    def broken() -> Probe:
        calls.append(1)
        raise RayClusterError("ray is not importable by python3: ModuleNotFoundError: No module named 'ray'")

    with pytest.raises(RayClusterError, match="not importable"):
        wait_for_cluster(broken, ADDRESS, FABRIC, 1, timeout=60, clock=fake.clock, sleep=fake.sleep)
    assert calls == [1]
    assert fake.sleeps == []


def test_wait_uses_the_real_clock_by_default() -> None:
    outcome = wait_for_cluster(lambda: reachable(raw_node("10.0.0.1", head=True)), "10.0.0.1:6379", {"h": "10.0.0.1"}, 1)
    assert outcome.failure is None and outcome.attempts == 1


# --- version_mismatches -------------------------------------------------------------------------------------------


def test_version_mismatches_all_equal() -> None:
    same = {"ray_version": "2.60.0", "python_version": "3.11.7"}
    assert version_mismatches({"spark-head": same, "spark-worker1": dict(same), "spark-worker2": dict(same)}) == []
    assert version_mismatches({}) == []


def test_version_mismatches_python_patch_release() -> None:
    per_host = {
        "spark-head": {"ray_version": "2.60.0", "python_version": "3.11.2"},
        "spark-worker1": {"ray_version": "2.60.0", "python_version": "3.11.7"},
    }
    assert version_mismatches(per_host) == ["Python 3.11.7 on spark-worker1 differs from 3.11.2 on spark-head"]


def test_version_mismatches_follow_the_majority() -> None:
    per_host = {
        "spark-head": {"ray_version": "2.59.0", "python_version": "3.11.7"},
        "spark-worker1": {"ray_version": "2.60.0", "python_version": "3.11.7"},
        "spark-worker2": {"ray_version": "2.60.0", "python_version": "3.12.3"},
    }
    assert version_mismatches(per_host) == [
        "Ray 2.59.0 on spark-head differs from 2.60.0 on spark-worker1",
        "Python 3.12.3 on spark-worker2 differs from 3.11.7 on spark-head",
    ]


def test_version_mismatches_unknown_version() -> None:
    per_host: dict[str, dict[str, t.Any]] = {
        "spark-head": {"ray_version": "2.60.0", "python_version": "3.11.7"},
        "spark-worker1": {"ray_version": None, "python_version": "3.11.7"},
    }
    assert version_mismatches(per_host) == ["Ray version of spark-worker1 is unknown"]
