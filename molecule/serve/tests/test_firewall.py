"""The host firewall on the lab (host_firewall_enabled, the management network as the API's clients): after the reboot
of every node, from its enabled unit; no Ray port of the head answers from the management network or from a fabric
address that is not a node, the vLLM API answers the management network and the nodes only; off, the role removes it.

The lab's host runs cgroup v1, where systemd cannot enforce the Ray units' IPAddressAllow: without the firewall, the
head's Ray ports answer on its management address (the first test shows what the firewall turns away, port by port)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.reach import address_on, connect_from, connect_from_here  # noqa: E402
from sparklab.scenario import Api, node, playbook, recap  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
HEAD_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
WORKER_IP = os.environ["SERVE_LAB_WORKER_FABRIC_IP"]
NOT_A_NODE = os.environ["SERVE_LAB_NOT_A_NODE_IP"]
SERVE_PORT = 8000
FABRIC_IF = "enp1s0f1np1"


def ray_ports(node: t.Any) -> list[int]:
    """The TCP ports Ray's processes (GCS, raylet, object manager, agents, workers) and the engine's Ray workers listen
    on other hosts can reach (every interface or the fabric address), but ssh's and the API's."""
    ports = set()
    for line in node.check_output("ss -Hltnp").splitlines():
        address, port = line.split()[3].rsplit(":", 1)
        if re.search(r'"(gcs_server|raylet|ray::|python|ray)', line) and address in ("*", "0.0.0.0", "[::]", HEAD_IP):
            ports.add(int(port))
    return sorted(ports - {22, SERVE_PORT})


@pytest.fixture(scope="module")
def head() -> t.Any:
    return node(HEAD)


@pytest.fixture(scope="module")
def worker() -> t.Any:
    return node(WORKER)


@pytest.fixture(scope="module")
def serving() -> None:
    """The API port is checked open to clients, so vLLM must be back from side_effect's reboot first (this file runs
    first after it; under a busy machine the cluster and the engine take longer than the tests before the port checks)."""
    assert Api.from_env().serves_within(600), f"vLLM on {HEAD} ({HEAD_MGMT_IP}:{SERVE_PORT}) did not serve within 600 s of the reboot"


def test_the_firewall_came_back_with_the_reboot_from_its_enabled_unit(head: t.Any, worker: t.Any) -> None:
    for host in (head, worker):
        assert host.check_output("systemctl is-enabled sparkops-firewall.service") == "enabled"
        assert host.check_output("systemctl is-active sparkops-firewall.service") == "active"
        listing = host.check_output("nft list table inet sparkops_firewall")
        assert f"elements = {{ {HEAD_IP}, {WORKER_IP} }}" in listing, listing
        assert "reject with icmpx admin-prohibited" in listing, listing
        ruleset = host.file("/etc/sparkops/firewall.nft")
        assert (ruleset.user, ruleset.mode) == ("root", 0o644)


def live_ray_ports(head: t.Any) -> list[int]:
    """Ray's ports that answer from the head itself now (a worker process's port may come and go between the listing
    and the connection): the GCS's and at least three others."""
    ports = [port for port, state in connect_from(head, HEAD_IP, HEAD_IP, ray_ports(head)).items() if state == "open"]
    assert 6379 in ports and len(ports) >= 4, ports  # the GCS and the raylet's, agents' and workers' ports
    return ports


@pytest.mark.usefixtures("serving")
def test_no_ray_port_answers_from_the_management_network(head: t.Any) -> None:
    # From the head itself each of them answers (the ports are live) ...
    ports = live_ray_ports(head)
    # ... from this machine, on the management network, none does: the firewall turns them away.
    seen = {port: connect_from_here(HEAD_MGMT_IP, port) for port in ports}
    assert set(seen.values()) == {"EHOSTUNREACH"}, seen
    # The API answers the management network (host_firewall_client_networks); ssh answers (Ansible's way in).
    assert connect_from_here(HEAD_MGMT_IP, SERVE_PORT) == "open"
    assert connect_from_here(HEAD_MGMT_IP, 22) == "open"


@pytest.mark.usefixtures("serving")
def test_a_fabric_address_that_is_not_a_node_reaches_neither_ray_nor_the_api(head: t.Any, worker: t.Any) -> None:
    ports = live_ray_ports(head)
    with address_on(WORKER, NOT_A_NODE, FABRIC_IF):
        from_node = connect_from(worker, WORKER_IP, HEAD_IP, [*ports, SERVE_PORT])
        from_stranger = connect_from(worker, NOT_A_NODE, HEAD_IP, [*ports, SERVE_PORT, 22])
    assert set(from_node.values()) == {"open"}, from_node  # the worker, a node, reaches all of them
    assert from_stranger == {**dict.fromkeys([*ports, SERVE_PORT], "EHOSTUNREACH"), 22: "open"}, from_stranger


def site(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("site.yml", "--tags", "firewall", *args)


def recap_changed(run: subprocess.CompletedProcess[str]) -> dict[str, int]:
    return {host: counts["changed"] for host, counts in recap(run).items()}


def test_a_rerun_changes_nothing_off_removes_it_on_puts_it_back(head: t.Any, worker: t.Any) -> None:
    again = site()
    assert again.returncode == 0 and set(recap_changed(again).values()) == {0}, again.stdout[-3000:]
    bad = site("-e", '{"host_firewall_client_networks": ["10.89.200.1/24"]}')
    said = " ".join((bad.stdout + bad.stderr).split())  # Ansible prints the failure on either stream
    assert bad.returncode != 0 and "host_firewall_client_networks[0] must be an IP network" in said, said[-3000:]
    assert head.check_output("nft list table inet sparkops_firewall")  # refused before anything changed
    off = site("-e", "host_firewall_enabled=false")
    try:
        assert off.returncode == 0 and min(recap_changed(off).values()) > 0, off.stdout[-3000:]
        for node in (head, worker):
            assert node.run("nft list table inet sparkops_firewall").rc != 0
            assert not node.file("/etc/systemd/system/sparkops-firewall.service").exists
            assert not node.file("/etc/sparkops/firewall.nft").exists
        assert connect_from_here(HEAD_MGMT_IP, 6379) == "open"  # what the firewall turned away, without it
        off_again = site("-e", "host_firewall_enabled=false")
        assert off_again.returncode == 0 and set(recap_changed(off_again).values()) == {0}, off_again.stdout[-3000:]
    finally:
        on = site()
    assert on.returncode == 0, on.stdout[-3000:]
    assert connect_from_here(HEAD_MGMT_IP, 6379) == "EHOSTUNREACH"
    assert worker.check_output("systemctl is-active sparkops-firewall.service") == "active"
