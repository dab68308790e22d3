"""What the lab looks like: node names, networks and addresses (pure data, unit-tested)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

LAB_LABEL = "sparkops.lab"
FABRIC_IFNAME = "enp1s0f1np1"  # a Spark's CX-7 port (right cage, PCIe domain 0)
MGMT_IFNAME = "enP7s7"  # a Spark's 10 GbE management port
MAX_NODES = 16


@dataclass(frozen=True)
class Network:
    name: str
    subnet: str
    internal: bool

    def address(self, host_index: int) -> str:
        net = ipaddress.ip_network(self.subnet)
        addr = net.network_address + host_index
        if addr not in net or addr in (net.network_address, net.broadcast_address):
            raise ValueError(f"host index {host_index} is outside {self.subnet}")
        return str(addr)


@dataclass(frozen=True)
class Node:
    name: str
    role: str  # "head" or "worker"
    fabric_ip: str
    mgmt_ip: str | None  # workers have none: reachable only through the head


@dataclass(frozen=True)
class Topology:
    name: str
    image: str
    mgmt: Network
    fabric: Network
    nodes: tuple[Node, ...]

    @property
    def head(self) -> Node:
        return self.nodes[0]

    @property
    def workers(self) -> tuple[Node, ...]:
        return self.nodes[1:]


def build_topology(
    node_count: int,
    image: str,
    *,
    name: str = "spark-lab",
    node_prefix: str = "spark",
    mgmt_network: str = "spark-mgmt",
    mgmt_subnet: str = "10.89.200.0/24",
    fabric_network: str = "spark-ib",
    fabric_subnet: str = "192.168.200.0/24",
    first_host: int = 11,
) -> Topology:
    """A head plus ``node_count - 1`` workers; the head gets ``.first_host`` on both networks."""
    if not 2 <= node_count <= MAX_NODES:
        raise ValueError(f"SPARK_LAB_NODES must be between 2 and {MAX_NODES}, got {node_count}")
    mgmt = Network(mgmt_network, mgmt_subnet, internal=False)
    fabric = Network(fabric_network, fabric_subnet, internal=True)
    nodes = [Node(f"{node_prefix}-head", "head", fabric.address(first_host), mgmt.address(first_host))]
    for i in range(1, node_count):
        nodes.append(Node(f"{node_prefix}-worker{i}", "worker", fabric.address(first_host + i), None))
    return Topology(name, image, mgmt, fabric, tuple(nodes))
