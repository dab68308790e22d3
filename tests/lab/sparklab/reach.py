"""Who reaches which port of a lab node: a TCP connection from this machine (the management network), from a node at
a source address of its own, and a fabric address that is no node's, put on a container's interface for a while
(the scenarios' firewall and fence checks). Each connection says "open" or why not (errno's name, or "timeout")."""

from __future__ import annotations

import contextlib
import errno
import json
import socket
import subprocess
import textwrap
import typing as t

# Run on a node: connect from SOURCE to ADDRESS at each PORT (3 s each), print {port: state} as JSON.
_CONNECT = textwrap.dedent(
    """
    import errno, json, socket, sys
    source, address, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
    seen = {}
    for port in ports:
        s = socket.socket(); s.settimeout(3); s.bind((source, 0))
        try:
            s.connect((address, port)); seen[port] = "open"
        except OSError as exc:
            seen[port] = errno.errorcode.get(exc.errno, "timeout") if exc.errno else "timeout"
        s.close()
    print(json.dumps(seen))
    """
)


def connect_from_here(address: str, port: int) -> str:
    """A connection from this machine to ``address:port``."""
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((address, port))
        return "open"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, "timeout") if exc.errno else "timeout"
    finally:
        s.close()


def connect_from(host: t.Any, source: str, address: str, ports: list[int]) -> dict[int, str]:
    """Connections from a node (a testinfra host), bound to its ``source`` address, to ``address`` at each port."""
    out = host.check_output(" ".join(["python3 -c %s %s %s", *["%s"] * len(ports)]), _CONNECT, source, address, *map(str, ports))
    return {int(port): state for port, state in json.loads(out).items()}


@contextlib.contextmanager
def address_on(container: str, address: str, interface: str) -> t.Iterator[None]:
    """``address``/32 on the container's ``interface`` while the block runs (a host on that link that is no node)."""
    subprocess.run(["podman", "exec", container, "ip", "addr", "add", f"{address}/32", "dev", interface], check=True)
    try:
        yield
    finally:
        subprocess.run(["podman", "exec", container, "ip", "addr", "del", f"{address}/32", "dev", interface], check=True)
