"""The Ray cluster formed by site.yml on the lab: on the fabric, from enabled units, back after a reboot."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
HEAD_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
FABRIC = ipaddress.ip_network(os.environ["RAY_LAB_FABRIC_SUBNET"])
NODES = int(os.environ["RAY_LAB_NODES"])
PROJECT = os.environ["RAY_LAB_PROJECT"]
PYTHON = "/opt/sparkops/ray/bin/python"
TOKEN_FILE = "/etc/sparkops/private/ray-auth-token"
# What the ray_cluster role's clients run with (its /etc/sparkops/ray.env): Ray's token mode and the token's path.
WITH_TOKEN = f"env RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={TOKEN_FILE}"
NODES_SCRIPT = (
    "import json, ray; ray.init(address='{addr}', _node_ip_address='{ip}', logging_level='ERROR', log_to_driver=False);"
    "print(json.dumps([{{'ip': n['NodeManagerAddress'], 'alive': n['Alive'], 'gpus': n['Resources'].get('GPU', 0)}} for n in ray.nodes()]))"
)


def is_head(host: t.Any) -> bool:
    return host.backend.get_hostname() == HEAD


def fabric_ip(host: t.Any) -> str:
    return host.check_output("ip -4 -o addr show dev enp1s0f1np1").split()[3].split("/")[0]


def alive_nodes(head: t.Any) -> list[dict[str, t.Any]]:
    result = head.run(f'{WITH_TOKEN} {PYTHON} -c "{NODES_SCRIPT.format(addr=f"{HEAD_IP}:6379", ip=HEAD_IP)}"')
    if result.rc != 0:
        return []
    return [n for n in json.loads(result.stdout.strip().splitlines()[-1]) if n["alive"]]


@pytest.fixture(scope="module")
def cluster() -> list[dict[str, t.Any]]:
    """The alive nodes, waiting (bounded) for the cluster to re-form after the reboot of every node."""
    head = node(HEAD)
    deadline = time.monotonic() + 180
    nodes: list[dict[str, t.Any]] = []
    while time.monotonic() < deadline:
        nodes = alive_nodes(head)
        if len(nodes) == NODES:
            return nodes
        time.sleep(3)
    pytest.fail(f"after the reboot only {len(nodes)} of {NODES} nodes re-joined: {nodes}")


def test_cluster_reformed_after_reboot_on_the_fabric(cluster: list[dict[str, t.Any]]) -> None:
    assert len(cluster) == NODES
    assert all(ipaddress.ip_address(n["ip"]) in FABRIC for n in cluster), cluster
    assert HEAD_IP in [n["ip"] for n in cluster]


def test_every_node_declares_its_gpu(cluster: list[dict[str, t.Any]]) -> None:
    assert [n["gpus"] for n in cluster] == [1.0] * NODES


def test_ray_status_lists_every_node_with_the_declared_gpus(cluster: list[dict[str, t.Any]]) -> None:
    head = node(HEAD)
    # `ray status` shows the autoscaler's view, refreshed every few seconds: it may lag ray.nodes() briefly.
    deadline = time.monotonic() + 60
    while True:
        status = head.check_output(f"{WITH_TOKEN} /opt/sparkops/ray/bin/ray status --address {HEAD_IP}:6379")
        active = re.search(r"Active:\n((?: \d+ node_\w+\n)+)", status + "\n")
        count = len(active.group(1).strip().splitlines()) if active else 0
        if count == NODES or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert count == NODES, status
    # Every node's GPU is declared; vLLM's placement group may hold them all (2.0/2.0 GPU reserved).
    assert re.search(rf"\d\.0/{NODES}\.0 GPU", status), status


def test_unit_enabled_and_running(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    unit = host.service("sparkops-ray-head" if is_head(host) else "sparkops-ray-worker")
    assert unit.is_enabled
    assert unit.is_running
    other = host.service("sparkops-ray-worker" if is_head(host) else "sparkops-ray-head")
    assert not other.is_running


def test_raylet_runs_on_the_fabric_address_without_the_memory_monitor(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    pid = host.check_output("pgrep -o -f '^/opt/sparkops/ray/bin/python.*ray start'")
    cmdline = host.file(f"/proc/{pid}/cmdline").content_string.split("\0")
    environ = host.file(f"/proc/{pid}/environ").content_string.split("\0")
    assert f"--node-ip-address={fabric_ip(host)}" in cmdline, cmdline
    assert "RAY_memory_monitor_refresh_ms=0" in environ
    assert f"VLLM_HOST_IP={fabric_ip(host)}" in environ
    if is_head(host):
        assert "--head" in cmdline and "--include-dashboard=false" in cmdline
    else:
        assert f"--address={HEAD_IP}:6379" in cmdline


def test_fabric_environment(host: t.Any) -> None:
    env = dict(line.split("=", 1) for line in host.file("/etc/sparkops/fabric.env").content_string.splitlines() if line and not line.startswith("#"))
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["UCX_NET_DEVICES"] == "enp1s0f1np1"
    assert env["NCCL_IB_DISABLE"] == "1"  # the lab has no RDMA device: sockets on the fabric
    assert "NCCL_IB_HCA" not in env
    assert env["VLLM_HOST_IP"] == fabric_ip(host)
    assert env["MASTER_ADDR"] == HEAD_IP
    carry = json.loads(host.file(f"{env['VLLM_CONFIG_ROOT']}/ray_non_carry_over_env_vars.json").content_string)
    assert "VLLM_HOST_IP" in carry and "NCCL_SOCKET_IFNAME" in carry
    # The engine's secrets stay on the head: vLLM's Ray executor copies every VLLM_* and HF_* variable otherwise.
    assert {"VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} <= set(carry), carry


def test_the_token_is_root_only_the_same_everywhere_and_never_in_a_unit_or_argv(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    folder, token = host.file("/etc/sparkops/private"), host.file(TOKEN_FILE)
    assert (folder.user, folder.group, folder.mode) == ("root", "root", 0o700)
    assert (token.user, token.group, token.mode) == ("root", "root", 0o600)
    value = token.content_string
    assert re.fullmatch(r"[0-9a-f]{64}", value), "the generated token is not 64 hex digits"
    assert value == node(HEAD).file(TOKEN_FILE).content_string, "the nodes hold different tokens"
    env = host.file("/etc/sparkops/ray.env").content_string
    assert f"RAY_AUTH_MODE=token\nRAY_AUTH_TOKEN_PATH={TOKEN_FILE}\n" in env and value not in env
    unit = "sparkops-ray-head" if is_head(host) else "sparkops-ray-worker"
    assert value not in host.file(f"/etc/systemd/system/{unit}.service").content_string
    assert value not in host.check_output(f"systemctl show {unit}")
    pid = host.check_output("pgrep -o -f '^/opt/sparkops/ray/bin/python.*ray start'")
    environ = host.file(f"/proc/{pid}/environ").content_string.split("\0")
    assert "RAY_AUTH_MODE=token" in environ and f"RAY_AUTH_TOKEN_PATH={TOKEN_FILE}" in environ, environ
    everything = host.check_output("ps -eo args") + host.check_output("journalctl --no-pager -o cat -u 'sparkops-*' 2>/dev/null || true")
    assert value not in everything


@pytest.mark.parametrize(
    "credential",
    ["", "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=" + "0" * 64],
    ids=["no token", "a wrong token"],
)
def test_a_ray_client_without_the_token_is_refused(credential: str, cluster: list[dict[str, t.Any]]) -> None:
    """From another node of the fabric (the worker), a Ray client that would run a task on the cluster: refused by
    the head's GCS without the token or with a wrong one; the same client with the token runs the task."""
    worker = node(os.environ["RAY_LAB_WORKERS"].split(",")[0])
    task = "ray.remote(lambda: 'ran as ' + __import__('getpass').getuser()).remote()"
    job = f"import ray; ray.init(address='{HEAD_IP}:6379', logging_level='ERROR'); print(ray.get({task}))"
    # One connection attempt (Ray retries for about 20 s otherwise); RAY_AUTH_MODE unset: Ray's own default.
    plain = f"env -u RAY_AUTH_MODE -u RAY_AUTH_TOKEN_PATH RAY_gcs_server_port_wait_time_s=1 {credential}"
    refused = worker.run(f'timeout 60 {plain} {PYTHON} -c "{job}"')
    assert refused.rc != 0 and "ran as" not in refused.stdout, refused.stdout
    assert "Authentication token is missing or incorrect" in refused.stderr, refused.stderr[-2000:]
    allowed = worker.run(f'timeout 60 {WITH_TOKEN} {PYTHON} -c "{job}"')
    assert allowed.rc == 0 and "ran as root" in allowed.stdout, allowed.stderr[-2000:]


def test_units_confine_ray_to_the_nodes_fabric_addresses(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    """systemd's own reading of the fence: localhost and each node's fabric address, not the fabric subnet (another
    host on the fabric is not a node). The lab's host runs cgroup v1, where systemd cannot enforce it."""
    unit = "sparkops-ray-head" if is_head(host) else "sparkops-ray-worker"
    allow = set(host.check_output(f"systemctl show -p IPAddressAllow --value {unit}").split())
    deny = host.check_output(f"systemctl show -p IPAddressDeny --value {unit}")
    assert allow == {"127.0.0.0/8", "::1/128", *(f"{n['ip']}/32" for n in cluster)}, allow
    assert str(FABRIC) not in allow and "0.0.0.0/0" in deny, (allow, deny)


def test_ray_keeps_its_sessions_and_sockets_in_a_root_only_folder(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    """Not /tmp/ray, which another local user could make first: Ray makes its temp dir world-writable, so the folder
    around it is root's, 0700."""
    folder = host.file("/var/lib/sparkops/tmp")
    assert (folder.user, folder.group, folder.mode) == ("root", "root", 0o700)
    pid = host.check_output("pgrep -o -f '^/opt/sparkops/ray/bin/python.*ray start'")
    assert "--temp-dir=/var/lib/sparkops/tmp/ray" in host.file(f"/proc/{pid}/cmdline").content_string.split("\0")
    assert host.file("/var/lib/sparkops/tmp/ray/session_latest/sockets/raylet").is_socket
    assert "RAY_TMPDIR=/var/lib/sparkops/tmp\n" in host.file("/etc/sparkops/ray.env").content_string


def test_no_ray_listener_bound_to_the_management_address(host: t.Any, cluster: list[dict[str, t.Any]]) -> None:
    # Ray 2.60 binds its gRPC servers to every interface (0.0.0.0); what it binds to one address must be the fabric's.
    listeners = host.check_output("ss -Hltnp").splitlines()
    ray = [line.split()[3] for line in listeners if re.search(r'"(gcs_server|raylet|ray::|python)', line)]
    assert ray, listeners
    bound = [ipv4(a.rsplit(":", 1)[0]) for a in ray if not a.startswith(("*", "0.0.0.0", "[::]"))]
    assert ipaddress.ip_address(HEAD_MGMT_IP) not in bound, ray
    assert [a for a in bound if a not in FABRIC and not a.is_loopback] == [], ray


def ipv4(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as ss prints it, an IPv4-mapped IPv6 one ([::ffff:192.168.200.51], Ray's client server) as IPv4."""
    ip = ipaddress.ip_address(address.strip("[]"))
    return ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip


def materialise_sysfs(case: str, name: str) -> str:
    """Copy a sysfs fixture tree of the unit tests (with its symlinks) into node ``name``; return its path there."""
    import tempfile  # pylint: disable=import-outside-toplevel

    sys.path.insert(0, f"{PROJECT}/tests/unit")
    from sysfs_tree import materialise

    with tempfile.TemporaryDirectory() as tmp:
        tree = materialise(case, Path(tmp))
        subprocess.run(["podman", "exec", name, "rm", "-rf", f"/tmp/sysfs-{case}"], check=True)
        subprocess.run(["podman", "cp", str(tree), f"{name}:/tmp/sysfs-{case}"], check=True)
    return f"/tmp/sysfs-{case}"


def run_site(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("site.yml", *args)


def test_fabric_link_down_fails_naming_host_interface_and_state(cluster: list[dict[str, t.Any]]) -> None:
    worker = "serve-spark-worker1"
    host = node(worker)
    before = host.file("/etc/sparkops/fabric.env").sha256sum
    sysfs = materialise_sysfs("link_down", worker)
    run = run_site("--tags", "nccl", "--limit", worker, "-e", f"nccl_env_sysfs_root={sysfs}")
    assert run.returncode != 0, run.stdout[-2000:]
    output = " ".join((run.stdout + run.stderr).split())  # Ansible may print the failure on either stream
    assert f"host {worker}: fabric interface enp1s0f1np1 is not up (state: down, RDMA rocep1s0f1 DOWN)" in output, output[-3000:]
    assert host.file("/etc/sparkops/fabric.env").sha256sum == before  # nothing half-done


def test_roce_host_would_get_both_twins_in_check_mode(cluster: list[dict[str, t.Any]]) -> None:
    worker = "serve-spark-worker1"
    host = node(worker)
    before = host.file("/etc/sparkops/fabric.env").sha256sum
    sysfs = materialise_sysfs("both_halves", worker)
    run = run_site("--tags", "nccl", "--limit", worker, "--check", "--diff", "-e", f"nccl_env_sysfs_root={sysfs}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "+NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1" in run.stdout, run.stdout[-3000:]
    assert "-NCCL_IB_DISABLE=1" in run.stdout and "+NCCL_IB_DISABLE=0" in run.stdout, run.stdout[-3000:]
    assert host.file("/etc/sparkops/fabric.env").sha256sum == before  # check mode changed nothing
