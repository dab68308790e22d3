#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_info
short_description: Find the RoCE interface, RDMA devices and NCCL GID index for a fabric address
version_added: 1.0.0
description:
  - Finds the netdev that holds a fabric IPv4 address (or takes the netdev given), and reads from sysfs its link,
    its PCI address, its RDMA devices with their port state, and the RoCE v2 GID index of the address, which is
    what C(NCCL_IB_GID_INDEX) must be (commonly 3, sometimes 5; it differs per host).
  - "On a DGX Spark each ConnectX-7 port appears as two twin netdevs with an RDMA device each, on two PCIe domains
    (for example C(enp1s0f1np1)/C(rocep1s0f1) at C(0000:01:00.1) and C(enP2p1s0f1np1)/C(roceP2p1s0f1) at C(0002:01:00.1)).
    The module finds the twin and returns both RDMA devices in RV(hca_list) for C(NCCL_IB_HCA)."
  - The netdev is found by address, never by the default route. IPv4 addresses come from C(ip -j -4 addr show);
    when C(ip) is missing or fails, from the IPv4-mapped RoCE v2 GIDs in sysfs.
  - Warns when the link or an RDMA port is not up, when an RDMA device has no RoCE v2 GID for the address, and when
    the twins use different GID indices.
  - Fails, naming the address or interface, when no netdev holds the address or the interface does not exist.
options:
  address:
    description:
      - The IPv4 address (without prefix length) of the netdev to describe, normally the host's C(sparkops_fabric_ip).
      - Mutually exclusive with O(interface); one of them is required.
    type: str
  interface:
    description:
      - The name of the netdev to describe, for example C(enp1s0f1np1).
      - Its first IPv4 address with a RoCE v2 GID (else its first IPv4 address) gives the GID index.
      - Mutually exclusive with O(address); one of them is required.
    type: str
  sysfs_root:
    description:
      - Where sysfs is mounted. Only sysfs reads use it; IPv4 addresses still come from C(ip).
    type: path
    default: /sys
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
notes:
  - Reads only; never changes the host.
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Find the RoCE interface of the fabric address
  sparkops.inference.roce_info:
    address: "{{ sparkops_fabric_ip }}"
  register: roce

- name: Show the NCCL settings it implies
  ansible.builtin.debug:
    msg: >-
      NCCL_SOCKET_IFNAME={{ roce.interface }}
      NCCL_IB_HCA={{ roce.hca_list | join(',') }}
      NCCL_IB_GID_INDEX={{ roce.gid_index }}
  when: roce.transport == 'ib'

- name: Describe a netdev by name
  sparkops.inference.roce_info:
    interface: enp1s0f1np1
"""

RETURN = r"""
interface:
  description: The netdev that holds O(address), or O(interface).
  returned: success
  type: str
  sample: enp1s0f1np1
address:
  description: The IPv4 address the GID index is for; null when O(interface) has no IPv4 address.
  returned: success
  type: str
  sample: 192.168.200.11
pci_address:
  description: The PCI address of the netdev; null for a virtual netdev such as a veth.
  returned: success
  type: str
  sample: "0000:01:00.1"
link:
  description: The link of the netdev, from C(/sys/class/net/<interface>).
  returned: success
  type: dict
  contains:
    operstate:
      description: The operational state, for example C(up), C(down), C(unknown).
      type: str
      returned: success
      sample: up
    up:
      description: Whether the link is up (operstate C(up), or C(unknown) with carrier).
      type: bool
      returned: success
      sample: true
    carrier:
      description: Whether the link has carrier; null when unreadable (an administratively down netdev).
      type: bool
      returned: success
      sample: true
    mtu:
      description: The MTU.
      type: int
      returned: success
      sample: 9000
    mac:
      description: The MAC address.
      type: str
      returned: success
      sample: 4c:bb:47:2c:1d:a1
    speed_mbps:
      description:
        - The link speed in Mb/s, from C(/sys/class/net/<interface>/speed).
        - Null where the kernel gives none (C(-1), or unreadable as on a down link).
      type: int
      returned: success
      sample: 200000
rdma_devices:
  description: The RDMA devices of the netdev, one entry per port; empty when it has none.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The RDMA device name.
      type: str
      returned: success
      sample: rocep1s0f1
    port:
      description: The port number.
      type: int
      returned: success
      sample: 1
    state:
      description: The port state, for example C(ACTIVE) or C(DOWN); null when unreadable.
      type: str
      returned: success
      sample: ACTIVE
    active:
      description: Whether the port state is C(ACTIVE).
      type: bool
      returned: success
      sample: true
    gid_index:
      description: The index of the RoCE v2 GID of the netdev for RV(address) on this port; null when there is none.
      type: int
      returned: success
      sample: 3
gid_index:
  description:
    - The RoCE v2 GID index of RV(address) on the netdev's RDMA device, for C(NCCL_IB_GID_INDEX).
    - Null when the netdev has no RDMA device or no such GID (then leave C(NCCL_IB_GID_INDEX) to NCCL).
  returned: success
  type: int
  sample: 3
twin:
  description:
    - The twin netdev, at the same PCI bus, device and function on another PCIe domain, with an RDMA device.
    - Null when the netdev has none.
  returned: success
  type: dict
  contains:
    interface:
      description: The twin netdev.
      type: str
      returned: success
      sample: enP2p1s0f1np1
    pci_address:
      description: The PCI address of the twin.
      type: str
      returned: success
      sample: "0002:01:00.1"
    address:
      description: The twin's own IPv4 address its GID index is for; null when it has none.
      type: str
      returned: success
      sample: 192.168.201.11
    link:
      description: The link of the twin, with the same keys as RV(link).
      type: dict
      returned: success
      sample: {operstate: up, up: true, carrier: true, mtu: 9000, mac: "4c:bb:47:2c:1d:a5", speed_mbps: 200000}
    rdma_devices:
      description: The RDMA devices of the twin, with the same keys as RV(rdma_devices).
      type: list
      elements: dict
      returned: success
      sample: [{name: roceP2p1s0f1, port: 1, state: ACTIVE, active: true, gid_index: 3}]
    gid_index:
      description: The RoCE v2 GID index of the twin's own IPv4 address; null when it has none.
      type: int
      returned: success
      sample: 3
hca_list:
  description: The RDMA devices of the netdev, then those of its twin, for C(NCCL_IB_HCA).
  returned: success
  type: list
  elements: str
  sample: [rocep1s0f1, roceP2p1s0f1]
transport:
  description: V(ib) when the netdev has an RDMA device (NCCL's IB/RoCE transport), else V(socket).
  returned: success
  type: str
  choices: [ib, socket]
  sample: ib
"""

# Imports follow the documentation, as validate-modules requires.
from pathlib import Path  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._roce import RoceError, addresses_from_gids, addresses_from_ip, roce_info  # noqa: E402


def _addresses(module: AnsibleModule, sysfs_root: Path) -> dict[str, list[str]]:
    """Map each netdev to its IPv4 addresses: from ``ip -j -4 addr show``, else from the RoCE v2 GIDs."""
    ip = module.get_bin_path("ip")
    if ip is None:
        return addresses_from_gids(sysfs_root)
    addresses, failed = addresses_from_ip(module.run_command, ip, sysfs_root)
    if failed is not None:
        module.warn(f"ip -j -4 addr show failed (rc {failed[0]}: {failed[1].strip()}); IPv4 addresses taken from the RoCE v2 GIDs in sysfs")
    return addresses


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "address": {"type": "str"},
            "interface": {"type": "str"},
            "sysfs_root": {"type": "path", "default": "/sys"},
        },
        mutually_exclusive=[("address", "interface")],
        required_one_of=[("address", "interface")],
        supports_check_mode=True,
    )
    sysfs_root = Path(module.params["sysfs_root"])
    try:
        info = roce_info(sysfs_root, _addresses(module, sysfs_root), address=module.params["address"], interface=module.params["interface"])
    except RoceError as exc:
        module.fail_json(msg=str(exc))
    for warning in info.warnings:
        module.warn(warning)
    module.exit_json(changed=False, **info.as_dict())


if __name__ == "__main__":
    main()
