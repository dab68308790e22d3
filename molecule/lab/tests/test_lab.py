"""The spark lab must behave like a pair of Sparks; each check fails when the topology is wrong."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
import typing as t
from pathlib import Path

import pytest
import testinfra

sys.path.insert(0, str(Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "lab"))
from sparklab.scenario import node  # noqa: E402

FABRIC = ipaddress.ip_network(os.environ["SPARK_LAB_FABRIC_SUBNET"])
MGMT = ipaddress.ip_network(os.environ["SPARK_LAB_MGMT_SUBNET"])
SSH_CONFIG = os.environ["SPARK_LAB_SSH_CONFIG"]
HEAD = os.environ["SPARK_LAB_HEAD"]
WORKER = os.environ["SPARK_LAB_WORKER"]
WORKER_FABRIC_IP = os.environ["SPARK_LAB_WORKER_FABRIC_IP"]


def ipv4_by_interface(host: t.Any) -> dict[str, list[ipaddress.IPv4Interface]]:
    found: dict[str, list[ipaddress.IPv4Interface]] = {}
    for line in host.check_output("ip -4 -o addr show").splitlines():
        fields = line.split()
        name = fields[1].split("@")[0]
        found.setdefault(name, []).append(ipaddress.IPv4Interface(fields[3]))
    return found


def is_head(host: t.Any) -> bool:
    return host.backend.name == HEAD


def test_systemd_running_with_no_failed_units(host: t.Any) -> None:
    state = host.run("systemctl is-system-running").stdout.strip()
    failed = host.check_output("systemctl --failed --no-legend --plain")
    assert state == "running", f"systemd is {state}; failed units:\n{failed}"
    assert failed == ""


def test_sshd_listens(host: t.Any) -> None:
    assert host.service("ssh").is_running
    assert host.socket("tcp://0.0.0.0:22").is_listening


def test_fabric_interface_carries_a_spark_port_name(host: t.Any) -> None:
    addrs = ipv4_by_interface(host)
    assert "enp1s0f1np1" in addrs, f"no enp1s0f1np1 interface: {sorted(addrs)}"
    assert all(a in FABRIC for a in addrs["enp1s0f1np1"])


def test_management_network_only_on_the_head(host: t.Any) -> None:
    addrs = ipv4_by_interface(host)
    on_mgmt = [a for ifaddrs in addrs.values() for a in ifaddrs if a in MGMT]
    if is_head(host):
        assert [str(a.ip) for a in addrs.get("enP7s7", [])], f"head has no management address: {addrs}"
    else:
        assert on_mgmt == [], f"worker has a management address: {on_mgmt}"
        assert sorted(addrs) == ["enp1s0f1np1", "lo"], f"worker has interfaces beyond the fabric: {sorted(addrs)}"


def test_only_the_head_has_a_way_out(host: t.Any) -> None:
    # 'ip route get' asks the node's routing table and sends nothing.
    probe = host.run("ip route get 198.51.100.7")
    default = host.check_output("ip -4 route show default")
    if is_head(host):
        assert probe.rc == 0 and "enP7s7" in probe.stdout, probe.stdout + probe.stderr
    else:
        assert default == "", f"worker has a default route: {default}"
        assert probe.rc != 0 and "unreachable" in probe.stderr.lower(), probe.stdout + probe.stderr


def test_enabled_unit_came_back_after_reboot(host: t.Any) -> None:
    probe = host.service("spark-lab-probe")
    assert probe.is_enabled
    assert probe.is_running


def test_unit_started_by_hand_is_gone_after_reboot(host: t.Any) -> None:
    state = host.run("systemctl is-active spark-lab-by-hand.service").stdout.strip()
    assert state in ("inactive", "unknown"), f"spark-lab-by-hand is {state} after the reboot"


@pytest.fixture(scope="module")
def controller() -> t.Any:
    return testinfra.get_host("local://")


@pytest.fixture(scope="module")
def worker() -> t.Any:
    return node(WORKER)


@pytest.fixture(scope="module")
def head() -> t.Any:
    return node(HEAD)


@pytest.fixture()
def controller_listener() -> t.Iterator[int]:
    """A TCP listener on the controller, on all of its addresses; yields its port."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _addr = server.accept()
                conn.close()
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def ssh(controller: t.Any, *args: str) -> t.Any:
    return controller.run(" ".join(["ssh", "-F", SSH_CONFIG, "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *args]))


def test_controller_reaches_the_head_directly(controller: t.Any) -> None:
    result = ssh(controller, HEAD, "hostname")
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "spark-head"


def test_controller_reaches_the_worker_through_the_head(controller: t.Any) -> None:
    result = ssh(controller, WORKER, "hostname")
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "spark-worker1"


def tcp_connects(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=3).close()
    except OSError:
        return False
    return True


def test_controller_cannot_reach_the_worker_directly(head: t.Any, worker: t.Any) -> None:
    addresses = [str(a.ip) for name, ifaddrs in ipv4_by_interface(worker).items() if name != "lo" for a in ifaddrs]
    assert WORKER_FABRIC_IP in addresses
    # Positive control: the worker's sshd answers on each of its addresses from the head.
    for address in addresses:
        assert head.run(f"timeout 3 bash -c 'echo > /dev/tcp/{address}/22'").rc == 0, f"sshd does not answer on {address}"
    reached = [a for a in addresses if tcp_connects(a, 22)]
    assert reached == [], f"the controller reached the worker's sshd without the head at {reached}"


def test_worker_cannot_reach_the_controller(worker: t.Any, head: t.Any, controller_listener: int) -> None:
    def connects(node: t.Any, address: str) -> bool:
        return node.run(f"timeout 3 bash -c 'echo > /dev/tcp/{address}/{controller_listener}'").rc == 0

    mgmt_gateway = str(MGMT.network_address + 1)
    fabric_gateway = str(FABRIC.network_address + 1)  # podman's bridge address on the controller
    # Positive control: the head reaches the controller's listener over the management network.
    assert connects(head, mgmt_gateway), f"the head cannot reach the controller at {mgmt_gateway}:{controller_listener}"
    reached = [a for a in (fabric_gateway, mgmt_gateway) if connects(worker, a)]
    assert reached == [], f"the worker reached the controller at {reached}"
