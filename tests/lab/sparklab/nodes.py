"""Create, wait for and remove the lab's podman networks and node containers."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .run import LabError, log, out, run
from .topology import FABRIC_IFNAME, LAB_LABEL, MGMT_IFNAME, Network, Node, Topology

HEAD_WHEELHOUSE = "/srv/sparkops/wheelhouse"
# The real vLLM engine's wheelhouse (engine_wheelhouse.py), read-only on every node: the index a Spark's pip would
# reach (a worker Spark has no internet); the role installs vLLM from it with pip, its own install path.
ENGINE_WHEELHOUSE = "/opt/sparkops/engine-wheels"
# What the lab cannot run (GPU, docker engine) gets a stand-in from tests/lab/standins, mounted read-only on every
# node where the real command would be. They exist in the lab only.
STANDINS_DIR = Path(__file__).resolve().parent.parent / "standins"
STANDINS = ("nvidia-smi", "docker", "gpu-holder")


def standin_volumes() -> list[str]:
    """podman --volume options that put the stand-ins on a node's PATH (/usr/local/bin)."""
    return [f"--volume={STANDINS_DIR / name}:/usr/local/bin/{name}:ro" for name in STANDINS]


def _host_rules(net: Network) -> list[list[str]]:
    """iptables rules that keep the controller off the fabric: no host<->fabric traffic either way."""
    tag = ["-m", "comment", "--comment", f"{LAB_LABEL}:{net.name}"]
    return [
        ["OUTPUT", "-d", net.subnet, *tag, "-j", "REJECT", "--reject-with", "icmp-net-unreachable"],
        ["INPUT", "-s", net.subnet, *tag, "-j", "REJECT", "--reject-with", "icmp-net-unreachable"],
    ]


def _safety_route(net: Network) -> list[str]:
    # While the lab exists, its subnets never leave through the host's default route, bridge up or not.
    return ["unreachable", net.subnet, "metric", "4242"]


def ensure_network(net: Network, lab: str) -> None:
    """Create ``net`` (labelled as the lab's) unless it exists, and fence the host off it (idempotent)."""
    if run(["podman", "network", "exists", net.name], check=False).returncode == 0:
        subnets = [s["subnet"] for s in json.loads(out(["podman", "network", "inspect", net.name]))[0]["subnets"]]
        if net.subnet not in subnets:
            raise LabError(f"podman network {net.name} exists with subnets {subnets}, expected {net.subnet}; run 'make lab-down'")
    else:
        argv = ["podman", "network", "create", "--label", f"{LAB_LABEL}={lab}", "--subnet", net.subnet]
        if net.internal:
            # The fabric: no NAT, no egress, no DNS, like a back-to-back CX-7 link.
            argv += ["--internal", "--disable-dns"]
        run([*argv, net.name], capture=True)
        log(f"created network {net.name} ({net.subnet}{', internal' if net.internal else ''})")
    if run(["ip", "route", "show", "table", "main", "type", "unreachable", net.subnet], capture=True).stdout.strip() == "":
        run(["ip", "route", "add", *_safety_route(net)])
    if net.internal:
        for rule in _host_rules(net):
            if run(["iptables", "-C", *rule], check=False, capture=True).returncode != 0:
                run(["iptables", "-I", *rule])


def _release_host(net: Network) -> None:
    for rule in _host_rules(net):
        while run(["iptables", "-C", *rule], check=False, capture=True).returncode == 0:
            run(["iptables", "-D", *rule])
    while run(["ip", "route", "show", "table", "main", "type", "unreachable", net.subnet], capture=True).stdout.strip():
        run(["ip", "route", "del", *_safety_route(net)])


def mac_address(network_index: int, ip: str) -> str:
    """A stable MAC per node and network, so a restarted node keeps its address like a rebooted Spark."""
    octets = [int(part) for part in ip.split(".")]
    return ":".join(f"{b:02x}" for b in (0x02, network_index, *octets))


def container_names(lab: str) -> list[str]:
    listing = out(["podman", "ps", "-a", "--filter", f"label={LAB_LABEL}={lab}", "--format", "{{.Names}}"])
    return [name for name in listing.splitlines() if name]


def start_node(topo: Topology, node: Node, wheelhouse: Path | None, engine_wheelhouse: Path | None = None) -> None:
    argv = [
        "podman", "run", "-d", "--name", node.name, "--hostname", node.name,
        "--label", f"{LAB_LABEL}={topo.name}", "--label", f"{LAB_LABEL}.role={node.role}",
        "--systemd=always", "--restart=always", "--shm-size=1g",
    ]  # fmt: skip
    argv += standin_volumes()
    if node.mgmt_ip:
        argv.append(f"--network={topo.mgmt.name}:ip={node.mgmt_ip},mac={mac_address(0x3A, node.mgmt_ip)},interface_name={MGMT_IFNAME}")
    argv.append(f"--network={topo.fabric.name}:ip={node.fabric_ip},mac={mac_address(0xFA, node.fabric_ip)},interface_name={FABRIC_IFNAME}")
    if wheelhouse is not None and node.role == "head":
        # Only the head sees the host's wheelhouse: workers get what the head gives them, as on real Sparks.
        argv.append(f"--volume={wheelhouse}:{HEAD_WHEELHOUSE}:ro")
    if engine_wheelhouse is not None:
        argv.append(f"--volume={engine_wheelhouse}:{ENGINE_WHEELHOUSE}:ro")
    run([*argv, topo.image, "/sbin/init"], capture=True)


def wait_running(name: str, timeout_s: float = 90.0) -> None:
    """Wait until systemd in ``name`` reports 'running' (or fail naming its failed units)."""
    deadline = time.monotonic() + timeout_s
    state = "unknown"
    while time.monotonic() < deadline:
        proc = run(["podman", "exec", name, "systemctl", "is-system-running"], check=False, capture=True)
        state = proc.stdout.strip() or proc.stderr.strip()
        if state == "running":
            return
        if state == "degraded":
            failed = out(["podman", "exec", name, "systemctl", "--failed", "--no-legend", "--plain"])
            raise LabError(f"node {name}: systemd is degraded, failed units:\n{failed}")
        time.sleep(0.5)
    raise LabError(f"node {name}: systemd not running after {timeout_s:.0f}s (last state: {state})")


def authorize_key(name: str, public_key: Path) -> None:
    run(["podman", "exec", name, "install", "-d", "-m", "0700", "/root/.ssh"])
    run(["podman", "cp", str(public_key), f"{name}:/root/.ssh/authorized_keys"])
    run(["podman", "exec", name, "chmod", "0600", "/root/.ssh/authorized_keys"])
    run(["podman", "exec", name, "chown", "root:root", "/root/.ssh/authorized_keys"])


def remove_lab(lab: str, networks: tuple[Network, ...]) -> None:
    """Remove the lab's containers, then its networks unless something else still uses them."""
    names = container_names(lab)
    if names:
        run(["podman", "rm", "-f", "-t", "5", *names], capture=True)
        log(f"removed containers: {' '.join(names)}")
    remove_networks(lab, networks)


def remove_networks(lab: str, networks: tuple[Network, ...]) -> None:
    """Remove the networks the lab created, and their host fences, unless a container still uses them."""
    for net in networks:
        if run(["podman", "network", "exists", net.name], check=False).returncode != 0:
            _release_host(net)
            continue
        labels = json.loads(out(["podman", "network", "inspect", net.name]))[0].get("labels") or {}
        if labels.get(LAB_LABEL) != lab:
            log(f"left network {net.name}: the lab did not create it")
            continue
        users = out(["podman", "ps", "-a", "--filter", f"network={net.name}", "--format", "{{.Names}}"])
        if users:
            log(f"left network {net.name}: still used by {' '.join(users.split())}")
            continue
        run(["podman", "network", "rm", net.name], capture=True)
        _release_host(net)
        log(f"removed network {net.name}")
