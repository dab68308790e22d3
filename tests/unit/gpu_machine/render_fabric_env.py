# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the fabric environment file nccl_env would write, on a machine without Ansible (the lent GPU machine).

python3 render_fabric_env.py INTERFACE DEST [--nccl-library bundled|system] [--system-nccl-path PATH]

It reads the interface from /sys with the role's own code (module utils _roce.roce_info and _fabric_env.fabric_env,
loaded from this checkout by path: they need nothing but the standard library) and writes DEST as the role's
env_file filter does. The interface's IPv4 address comes from the SIOCGIFADDR ioctl (that machine has no ``ip``);
it is both VLLM_HOST_IP and MASTER_ADDR (one machine). NCCL_DEBUG is INFO: the gate reads NCCL's log.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import socket
import struct
import sys
from pathlib import Path

UTILS = Path(__file__).resolve().parents[3] / "plugins" / "module_utils"


def load(name: str):  # noqa: ANN201 - a module object
    spec = importlib.util.spec_from_file_location(name, UTILS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def ipv4_of(interface: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", interface.encode()[:15]))  # SIOCGIFADDR
    return socket.inet_ntoa(packed[20:24])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("interface")
    parser.add_argument("dest")
    parser.add_argument("--nccl-library", default="bundled")
    parser.add_argument("--system-nccl-path")
    args = parser.parse_args(argv)
    roce = load("_roce")
    fabric = load("_fabric_env")
    address = ipv4_of(args.interface)
    info = roce.roce_info(Path("/sys"), {args.interface: [address]}, interface=args.interface)
    env = fabric.fabric_env(
        info.as_dict(),
        fabric_ip=address,
        master_addr=address,
        vllm_config_root="/tmp/sparkops/vllm",
        nccl_debug="INFO",
        nccl_library=args.nccl_library,
        system_nccl_path=args.system_nccl_path,
    )
    header = [f"Rendered by tests/unit/gpu_machine/render_fabric_env.py for {args.interface} ({address}); roce_info: {info.as_dict()}"]
    Path(args.dest).write_text(fabric.render_env_file(env, header), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
