"""The mp backend, the default, on the real engine: no Ray cluster runs beside it; the ranks' rendezvous port (rank 0's
--master-port) and the rank supervisors' group port answer the nodes only, with the host firewall on: not the
management network, not a fabric address that is not a node. (The switch from the Ray backend and back, with the
real engine both ways, is molecule/serve/tests/test_engine_ray.py.)

The lab's host runs cgroup v1, where systemd cannot enforce a unit's IPAddressAllow (molecule/serve/tests/
test_firewall.py): the host firewall is what the lab can show; the headless ranks' unit fence is checked in
tests/unit/roles/test_vllm_serve_unit.py."""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.reach import address_on, connect_from, connect_from_here  # noqa: E402
from sparklab.scenario import node  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
WORKER = os.environ["ENGINE_LAB_WORKER"]
HEAD_IP = os.environ["ENGINE_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["ENGINE_LAB_HEAD_MGMT_IP"]
WORKER_IP = os.environ["ENGINE_LAB_WORKER_FABRIC_IP"]
NOT_A_NODE = os.environ["ENGINE_LAB_NOT_A_NODE_IP"]
FABRIC_IF = "enp1s0f1np1"
MASTER_PORT, GROUP_PORT, SERVE_PORT = 29501, 29560, 8000  # the role's defaults (vllm_serve_master_port, _group_port)
RAY_UNITS = ("sparkops-ray-head.service", "sparkops-ray-worker.service")


def listening(host: t.Any) -> set[int]:
    """The TCP ports the node listens on (any address)."""
    return {int(line.split()[3].rsplit(":", 1)[1]) for line in host.check_output("ss -Hltn").splitlines()}


def ray_units_on(name: str) -> dict[str, bool]:
    host = node(name)
    return {unit: host.file(f"/etc/systemd/system/{unit}").exists for unit in RAY_UNITS}


def test_no_ray_cluster_runs_beside_the_mp_backend() -> None:
    for name in (HEAD, WORKER):
        host = node(name)
        assert ray_units_on(name) == dict.fromkeys(RAY_UNITS, False), name
        assert not host.run("pgrep -f 'gcs_server|raylet'").stdout.strip(), name
        assert not host.file("/etc/sparkops/ray.env").exists, name


def test_the_ranks_ports_answer_the_nodes_only() -> None:
    head, worker = node(HEAD), node(WORKER)
    # Live: rank 0 listens on the rendezvous and group ports, the worker's rank on its group port.
    assert {MASTER_PORT, GROUP_PORT} <= listening(head), listening(head)
    assert GROUP_PORT in listening(worker), listening(worker)
    # From the management network (this machine), neither of the head's answers; the API and ssh do.
    seen = {port: connect_from_here(HEAD_MGMT_IP, port) for port in (MASTER_PORT, GROUP_PORT, SERVE_PORT, 22)}
    assert seen == {MASTER_PORT: "EHOSTUNREACH", GROUP_PORT: "EHOSTUNREACH", SERVE_PORT: "open", 22: "open"}, seen
    # A node reaches the other's; a fabric address that is not a node reaches neither.
    with address_on(WORKER, NOT_A_NODE, FABRIC_IF):
        from_node = connect_from(worker, WORKER_IP, HEAD_IP, [MASTER_PORT, GROUP_PORT])
        from_stranger = connect_from(worker, NOT_A_NODE, HEAD_IP, [MASTER_PORT, GROUP_PORT])
    assert from_node == {MASTER_PORT: "open", GROUP_PORT: "open"}, from_node
    assert from_stranger == {MASTER_PORT: "EHOSTUNREACH", GROUP_PORT: "EHOSTUNREACH"}, from_stranger
    with address_on(HEAD, NOT_A_NODE, FABRIC_IF):
        from_node = connect_from(head, HEAD_IP, WORKER_IP, [GROUP_PORT])
        from_stranger = connect_from(head, NOT_A_NODE, WORKER_IP, [GROUP_PORT])
    assert from_node == {GROUP_PORT: "open"} and from_stranger == {GROUP_PORT: "EHOSTUNREACH"}, (from_node, from_stranger)
