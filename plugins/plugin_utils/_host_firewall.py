# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host firewall of a Spark (nftables): what other hosts may reach on a node of the cluster.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

Ray binds its servers to every interface and picks most of its ports at random (``ray start``'s node manager, object
manager, runtime env and dashboard agent ports, its workers' 10002-19999); vLLM opens rendezvous ports (mp mode's
master port, torch's and NCCL's bootstrap) and its API port; a container with host networking (the docker runtime)
listens on the host's interfaces as well. A list of ports to close would miss some, so the firewall admits, from
any host that is not a node of the cluster, only what it names, and turns the rest away:

- localhost, and answers to what the node itself opened (``ct state established,related``);
- everything from the nodes' fabric addresses (Ray, NCCL, vLLM's ranks, model distribution);
- ICMP and ICMPv6 (ping, path MTU discovery, IPv6 neighbour discovery), and DHCP's answers;
- ssh (``ssh_ports``), from anyone: how Ansible reaches the node;
- the vLLM API port (``serve_port``) from the ``client_networks`` only (none: the nodes and localhost only);
- ``open_ports`` (``11000/tcp``, ``5353/udp``), from anyone: whatever else the node serves;
- the metrics ports (``metrics_ports``: node exporter's 9100, and the vLLM port for its ``/metrics``) from the
  ``metrics_networks`` only (Prometheus);
- anything else is rejected (``icmpx admin-prohibited``: a client sees "no route to host" at once, not a closed
  port, and not a hang).

The rules live in a table of their own (``inet sparkops_firewall``), replaced in one transaction (``table``,
``delete table``, ``table {...}``: nft applies a file atomically), and leave every other table (a distribution's
``nftables.conf``, ufw's, docker's) as it is. A packet must pass every base chain on its hook: this table can only
turn away more, never admit what another table drops.
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TABLE = "sparkops_firewall"
# A table name nft takes bare.
_TABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,30}")
_PORT_SPEC = re.compile(r"(\d{1,5})(?:-(\d{1,5}))?/(tcp|udp)")
# DHCP's answers (v4 client port 68, v6 546): DHCPv4 clients read raw sockets, DHCPv6 answers are not tracked replies.
DHCP_CLIENT_PORTS = (68, 546)


class HostFirewallError(ValueError):
    """A value the firewall cannot be built from; the message names its variable."""


Network = t.Union[ipaddress.IPv4Network, ipaddress.IPv6Network]  # noqa: UP007 - a runtime alias, for Python 3.8 targets


def _address_set(name: str, version: int, elements: list[str], interval: bool = True) -> list[str]:
    """The lines of the nft set ``name`` of IPv``version`` ``elements`` (networks when ``interval``); none when empty."""
    if not elements:
        return []
    flags = ["\t\tflags interval"] if interval else []
    return [f"\tset {name} {{", f"\t\ttype ipv{version}_addr", *flags, f"\t\telements = {{ {', '.join(elements)} }}", "\t}"]


@dataclass(frozen=True)
class Ruleset:
    """What the firewall admits; :meth:`render` writes it as an nft file."""

    nodes: tuple[tuple[str, Network], ...]  # (host, its fabric address as a /32 or /128)
    client_networks: tuple[Network, ...]
    serve_port: int
    ssh_ports: tuple[int, ...]
    open_ports: tuple[tuple[str, int, int], ...]  # (protocol, first, last)
    table: str = TABLE
    metrics_networks: tuple[Network, ...] = ()
    metrics_ports: tuple[int, ...] = ()  # with serve_port, admitted from metrics_networks

    def render(self, header: Iterable[str] = ()) -> str:
        lines = [f"# {line}" for line in header]
        lines += [f"table inet {self.table}", f"delete table inet {self.table}", f"table inet {self.table} {{"]
        for version in (4, 6):
            nodes = [str(net.network_address) for _host, net in self.nodes if net.version == version]
            lines += _address_set(f"nodes_v{version}", version, nodes, interval=False)
            lines += _address_set(f"clients_v{version}", version, [str(net) for net in self.client_networks if net.version == version])
            lines += _address_set(f"metrics_v{version}", version, [str(net) for net in self.metrics_networks if net.version == version])
        lines += [
            "\tchain input {",
            "\t\ttype filter hook input priority filter; policy accept;",
            '\t\tiif "lo" accept comment "localhost"',
            '\t\tct state established,related accept comment "answers to what this node opened"',
        ]
        for version in (4, 6):
            family = "ip" if version == 4 else "ip6"
            if any(net.version == version for _host, net in self.nodes):
                lines.append(f'\t\t{family} saddr @nodes_v{version} accept comment "the cluster\'s nodes (fabric addresses)"')
        # ICMP (1) and ICMPv6 (58) by number: nft resolves protocol names through /etc/protocols, which a minimal
        # system may lack (netbase): "Could not resolve protocol name".
        lines.append('\t\tmeta l4proto { 1, 58 } accept comment "ICMP and ICMPv6: ping, path MTU, IPv6 neighbour discovery"')
        lines.append(f'\t\tudp dport {{ {", ".join(str(p) for p in DHCP_CLIENT_PORTS)} }} accept comment "DHCP answers"')
        lines.append(f'\t\ttcp dport {{ {", ".join(str(p) for p in self.ssh_ports)} }} accept comment "ssh, from anyone"')
        for version in (4, 6):
            family = "ip" if version == 4 else "ip6"
            if any(net.version == version for net in self.client_networks):
                lines.append(f'\t\ttcp dport {self.serve_port} {family} saddr @clients_v{version} accept comment "the vLLM API, from its clients"')
        scraped = ", ".join(str(port) for port in sorted({self.serve_port, *self.metrics_ports}))
        for version in (4, 6):
            family = "ip" if version == 4 else "ip6"
            if any(net.version == version for net in self.metrics_networks):
                comment = "metrics (node exporter, vLLM /metrics), from Prometheus"
                lines.append(f'\t\ttcp dport {{ {scraped} }} {family} saddr @metrics_v{version} accept comment "{comment}"')
        for protocol in ("tcp", "udp"):
            ports = [str(first) if first == last else f"{first}-{last}" for proto, first, last in self.open_ports if proto == protocol]
            if ports:
                lines.append(f'\t\t{protocol} dport {{ {", ".join(ports)} }} accept comment "open ports, from anyone"')
        lines += [
            '\t\tcounter reject with icmpx admin-prohibited comment "anything else from another host: Ray, rendezvous, NCCL, ..."',
            "\t}",
            "}",
            "",
        ]
        return "\n".join(lines)


def _one_line(value: t.Any, name: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise HostFirewallError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    text = str(value).strip()
    if not text or any(ch in text for ch in "\n\r\0\t ;{}#\"'"):
        raise HostFirewallError(f"{name} must be one address, network or port, got {value!r}")
    return text


def _port(value: t.Any, name: str) -> int:
    if isinstance(value, bool):
        raise HostFirewallError(f"{name} must be a port number (1-65535), got {value!r}")
    try:
        port = int(str(value).strip()) if isinstance(value, (int, str)) else -1
    except ValueError:
        port = -1
    if not 1 <= port <= 65535 or (isinstance(value, str) and not value.strip().isdigit()):
        raise HostFirewallError(f"{name} must be a port number (1-65535), got {value!r}")
    return port


def _list(value: t.Any, name: str) -> list[t.Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise HostFirewallError(f"{name} must be a list, got {type(value).__name__} {value!r}")
    return list(value)


def node_addresses(nodes: t.Any, name: str) -> tuple[tuple[str, Network], ...]:
    """The nodes (host name to fabric address) as host routes, sorted by host; an address that is not one host's is
    refused, naming the host."""
    if not isinstance(nodes, Mapping) or not nodes:
        raise HostFirewallError(f"{name} must map each node to its fabric address, got {nodes!r}")
    out: list[tuple[str, Network]] = []
    for host in sorted(nodes, key=str):
        text = _one_line(nodes[host], f"{name} of host {host}")
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise HostFirewallError(f"{name} of host {host} must be an IP address, got {text!r}") from None
        if address.is_unspecified or address.is_multicast or address.is_loopback:
            raise HostFirewallError(f"{name} of host {host} must be a node's own address, got {text}")
        out.append((str(host), ipaddress.ip_network(address)))
    return tuple(out)


def client_networks(value: t.Any, name: str) -> tuple[Network, ...]:
    """Networks (or single addresses) as written, host bits clear; ``0.0.0.0/0`` and ``::/0`` (anyone: the API key is
    then the only guard) only when written so."""
    out: list[Network] = []
    for index, item in enumerate(_list(value, name)):
        text = _one_line(item, f"{name}[{index}]")
        try:
            network = ipaddress.ip_network(text, strict=True)
        except ValueError as exc:
            raise HostFirewallError(f"{name}[{index}] must be an IP network such as 10.0.0.0/24 or an address, got {text!r} ({exc})") from None
        if network.network_address.is_multicast:
            raise HostFirewallError(f"{name}[{index}] must not be a multicast network, got {text}")
        if network not in out:
            out.append(network)
    return tuple(out)


def ports(value: t.Any, name: str) -> tuple[int, ...]:
    out: list[int] = []
    for index, item in enumerate(_list(value, name)):
        port = _port(item, f"{name}[{index}]")
        if port not in out:
            out.append(port)
    return tuple(sorted(out))


def open_ports(value: t.Any, name: str) -> tuple[tuple[str, int, int], ...]:
    """``11000/tcp``, ``5353/udp``, ``9000-9010/tcp``, or a bare number (TCP)."""
    out: list[tuple[str, int, int]] = []
    for index, item in enumerate(_list(value, name)):
        label = f"{name}[{index}]"
        if isinstance(item, int) and not isinstance(item, bool):
            entry = ("tcp", _port(item, label), _port(item, label))
        else:
            text = _one_line(item, label).lower()
            if text.isdigit():
                text += "/tcp"
            match = _PORT_SPEC.fullmatch(text)
            if match is None:
                raise HostFirewallError(f"{label} must be PORT/tcp, PORT/udp or FIRST-LAST/tcp (a port 1-65535), got {item!r}")
            first = _port(match.group(1), label)
            last = _port(match.group(2), label) if match.group(2) else first
            if last < first:
                raise HostFirewallError(f"{label} is a range that ends before it starts: {item!r}")
            entry = (match.group(3), first, last)
        if entry not in out:
            out.append(entry)
    return tuple(sorted(out))


def build(
    nodes: t.Any,
    *,
    client_networks_value: t.Any = (),
    serve_port: t.Any,
    ssh_ports_value: t.Any = (22,),
    open_ports_value: t.Any = (),
    table: str = TABLE,
    names: Mapping[str, str] | None = None,
    metrics_networks_value: t.Any = (),
    metrics_ports_value: t.Any = (),
) -> Ruleset:
    """The ruleset, every value checked; errors name the variable (``names`` maps ``nodes``, ``client_networks``,
    ``serve_port``, ``ssh_ports``, ``open_ports``, ``table``, ``metrics_networks`` and ``metrics_ports`` to the
    variables they come from)."""
    label = {key: key for key in ("nodes", "client_networks", "serve_port", "ssh_ports", "open_ports", "table", "metrics_networks", "metrics_ports")}
    label.update(names or {})
    if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
        raise HostFirewallError(f"{label['table']} must be a name of letters, digits and _ (up to 31), got {table!r}")
    ssh = ports(ssh_ports_value, label["ssh_ports"])
    if not ssh:
        raise HostFirewallError(f"{label['ssh_ports']} must name at least one port: without ssh, Ansible cannot reach the node again")
    serve = _port(serve_port, label["serve_port"])
    if serve in ssh:
        raise HostFirewallError(f"{label['serve_port']} {serve} is also an ssh port ({label['ssh_ports']})")
    opened = open_ports(open_ports_value, label["open_ports"])
    for protocol, first, last in opened:
        if protocol == "tcp" and first <= serve <= last:
            raise HostFirewallError(
                f"{label['open_ports']} opens the vLLM port {serve} to anyone: name its clients in {label['client_networks']} instead (0.0.0.0/0 for anyone)"
            )
    scraped = ports(metrics_ports_value, label["metrics_ports"])
    if set(scraped) & set(ssh):
        raise HostFirewallError(f"{label['metrics_ports']} names an ssh port ({label['ssh_ports']}): ssh is open to anyone already")
    return Ruleset(
        nodes=node_addresses(nodes, label["nodes"]),
        client_networks=client_networks(client_networks_value, label["client_networks"]),
        serve_port=serve,
        ssh_ports=ssh,
        open_ports=opened,
        table=table,
        metrics_networks=client_networks(metrics_networks_value, label["metrics_networks"]),
        metrics_ports=tuple(port for port in scraped if port != serve),
    )
