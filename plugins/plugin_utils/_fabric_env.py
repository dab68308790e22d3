# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment that keeps NCCL, Gloo, UCX, MPI, Ray and vLLM on the fabric, from roce_info's facts.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import ipaddress
import re
import typing as t

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IFNAME = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
_TRANSPORTS = ("auto", "ib", "socket")
NCCL_LIBRARIES = ("bundled", "system")


class FabricEnvError(ValueError):
    """Bad input; the message names the value."""


def _ipv4(name: str, value: t.Any) -> str:
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        raise FabricEnvError(f"{name} must be an IPv4 address, got {value!r}") from None


def _env_value(name: str, value: t.Any) -> str:
    text = str(value)
    if "\n" in text or "\r" in text or "\x00" in text:
        raise FabricEnvError(f"environment value for {name} must be one line, got {text!r}")
    return text


def fabric_env(
    roce: t.Mapping[str, t.Any],
    *,
    fabric_ip: str,
    master_addr: str,
    vllm_config_root: str,
    transport: str = "auto",
    interface: str | None = None,
    ib_hca: t.Sequence[str] | None = None,
    ib_gid_index: int | str | None = None,
    nccl_debug: str = "WARN",
    extra: t.Mapping[str, t.Any] | None = None,
    nccl_library: str = "bundled",
    system_nccl_path: str | None = None,
) -> dict[str, str]:
    """Environment variables for one host, in the order they are written.

    ``roce`` is what sparkops.inference.roce_info returned for the host's fabric address. Every other argument
    overrides what was detected: ``transport`` (auto, ib, socket), ``interface``, ``ib_hca``, ``ib_gid_index``.

    ``nccl_library`` ``system`` makes the engine use ``system_nccl_path`` instead of the NCCL of the pip wheels:
    ``LD_PRELOAD`` for torch (its libtorch_cuda.so links ``libnccl.so.2``, found through its RPATH in the
    nvidia-nccl wheel; a preloaded library of that soname is used instead) and ``VLLM_NCCL_SO_PATH`` for vLLM's own
    ctypes wrapper (vLLM 0.30: ``vllm/utils/nccl.py``, ``find_nccl_library``). ``bundled`` sets neither.
    """
    if transport not in _TRANSPORTS:
        raise FabricEnvError(f"transport must be one of {', '.join(_TRANSPORTS)}, got {transport!r}")
    if nccl_library not in NCCL_LIBRARIES:
        raise FabricEnvError(f"nccl_library must be one of {', '.join(NCCL_LIBRARIES)}, got {nccl_library!r}")
    if nccl_library == "system" and (not isinstance(system_nccl_path, str) or not system_nccl_path.startswith("/")):
        raise FabricEnvError(f"nccl_library system needs the absolute path of the system's libnccl.so.2, got {system_nccl_path!r}")
    netdev = interface or roce.get("interface")
    if not isinstance(netdev, str) or not _IFNAME.fullmatch(netdev):
        raise FabricEnvError(f"fabric interface must be a network interface name, got {netdev!r}")
    hcas = list(ib_hca) if ib_hca else [str(h) for h in roce.get("hca_list") or []]
    detected = "ib" if hcas and roce.get("transport", "ib") == "ib" else "socket"
    use = detected if transport == "auto" else transport
    if use == "ib" and not hcas:
        raise FabricEnvError(f"transport ib needs RDMA devices, but none were found for {netdev}; set the HCA list or use transport socket")

    env: dict[str, str] = {
        "NCCL_SOCKET_IFNAME": netdev,
        "GLOO_SOCKET_IFNAME": netdev,
        "TP_SOCKET_IFNAME": netdev,
        "UCX_NET_DEVICES": netdev,
        "OMPI_MCA_btl_tcp_if_include": netdev,
        "NCCL_IB_DISABLE": "0" if use == "ib" else "1",
    }
    if use == "ib":
        env["NCCL_IB_HCA"] = ",".join(hcas)
        gid = ib_gid_index if ib_gid_index not in (None, "") else roce.get("gid_index")
        if gid is not None:
            if isinstance(gid, bool) or not str(gid).isdigit():
                raise FabricEnvError(f"NCCL_IB_GID_INDEX must be a non-negative integer, got {gid!r}")
            env["NCCL_IB_GID_INDEX"] = str(int(gid))
    env["NCCL_DEBUG"] = _env_value("NCCL_DEBUG", nccl_debug)
    env["VLLM_HOST_IP"] = _ipv4("fabric_ip", fabric_ip)
    env["MASTER_ADDR"] = _ipv4("master_addr", master_addr)
    env["VLLM_CONFIG_ROOT"] = _env_value("VLLM_CONFIG_ROOT", vllm_config_root)
    if nccl_library == "system":
        path = _env_value("system_nccl_path", system_nccl_path)
        if any(c in path for c in " :;'"):
            raise FabricEnvError(f"system_nccl_path must be one path without spaces, colons or quotes (LD_PRELOAD), got {path!r}")
        env["LD_PRELOAD"] = path
        env["VLLM_NCCL_SO_PATH"] = path
    for name, value in (extra or {}).items():
        if not _NAME.fullmatch(str(name)):
            raise FabricEnvError(f"extra environment variable name {name!r} is not a valid name")
        env[str(name)] = _env_value(str(name), value)
    return env


def render_env_file(env: t.Mapping[str, str], header: t.Sequence[str] = ()) -> str:
    """systemd EnvironmentFile syntax, which a shell reads the same way: ``NAME=value``, single-quoted when needed."""
    # A line break in a header line would end the comment and make the rest a line of its own (an assignment, or a
    # command to a shell that reads the file): each line of a header line is a comment line.
    for line in header:
        if "\0" in line:
            raise FabricEnvError(f"a header line of the environment file must not hold a NUL, got {line!r}")
    lines = [f"# {part}".rstrip() for line in header for part in (line.splitlines() or [""])]
    for name, value in env.items():
        if not _NAME.fullmatch(name):
            raise FabricEnvError(f"environment variable name {name!r} is not a valid name")
        _env_value(name, value)
        # Single quotes are literal for both systemd and a shell: no escapes, no $ expansion.
        if "'" in value:
            raise FabricEnvError(f"environment value for {name} must not contain a single quote, got {value!r}")
        needs_quotes = value == "" or any(c in value for c in ' \t"\\#$;`&|<>(){}*?[]~')
        lines.append(f"{name}='{value}'" if needs_quotes else f"{name}={value}")
    return "\n".join(lines) + "\n"
