#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_recon
short_description: Describe a node before deploying on it (OS, GPU, fabric link, memory, disk, inference stacks, versions)
version_added: 1.0.0
description:
  - Gathers, read-only and in a few seconds, what a node is before vLLM is deployed on it, as one dictionary
    RV(recon) that M(sparkops.inference.recon_report) turns into a report of all nodes.
  - "OS from C(/etc/os-release); architecture and kernel from the module's Python (C(platform)); GPU names, driver
    and CUDA version from C(nvidia-smi) (the CUDA version is the one its table header prints); the netdev that holds
    O(fabric_ip), its link (C(/sys/class/net)) and RDMA devices, found by address as
    M(sparkops.inference.roce_info) finds it; host memory from C(/proc/meminfo) and the processes holding the most
    resident memory; free space for O(model_dir) (C(statvfs)); the enabled or active systemd units and the docker
    containers of inference stacks; the installed Ray, vLLM and NCCL versions read from the O(venvs)' C(*.dist-info)."
  - "Nothing is installed or imported (no pip, no import of ray, vllm or torch): the venvs' versions are read from
    their C(lib/python*/site-packages/*.dist-info/METADATA) files."
  - A source that is missing or fails (no C(nvidia-smi), no C(docker), no netdev with O(fabric_ip), a venv not yet
    made, ...) gives null or an empty list and a line in RV(recon.notes); the module fails only for bad options.
  - docs/recon.md describes every key and where it comes from.
options:
  fabric_ip:
    description:
      - The node's fabric IPv4 address (its C(sparkops_fabric_ip)), without prefix length.
      - The netdev that holds it is described in RV(recon.fabric).
    type: str
    required: true
  model_dir:
    description:
      - The absolute path the model will be stored in, for example C(/root/.cache/huggingface/hub).
      - It may not exist yet; then the free space of its nearest existing ancestor is reported and
        RV(recon.disk.measured_path) names it.
    type: path
    required: true
  venvs:
    description:
      - Absolute paths of the virtual environments to read the installed Ray, vLLM and NCCL versions from, in order;
        the first one that has a package gives its version.
      - A venv that does not exist is a note, not an error.
    type: list
    elements: path
    default: [/opt/sparkops/ray, /opt/sparkops/hf]
  unit_patterns:
    description:
      - Names of inference stacks to look for in systemd unit names and docker container names and images,
        case-insensitively.
      - A pattern with C(*), C(?) or C([) is a glob over the whole name; any other pattern must start the name or
        follow a character that is not a letter or a digit (V(ray) matches C(ray-head.service) and
        C(sparkops-raylet.service), not C(xray.service)).
    type: list
    elements: str
    default: [vllm, ray, sglang, trtllm, tensorrt, triton, llama, ollama, tgi, text-generation, sparkops]
  top_processes:
    description:
      - How many of the processes with the largest resident memory to report in RV(recon.memory.top_processes).
        V(0) skips them.
    type: int
    default: 5
  repo_id:
    description:
      - The model's Hugging Face repo id (C(org/name)); when given, RV(recon.disk.model_present_bytes) says how many bytes
        of its blobs are already in O(model_dir), so that a check of free space counts what is already there.
    type: str
  nvidia_smi:
    description:
      - Path of the C(nvidia-smi) command. By default it is looked up in E(PATH) and the usual sbin directories;
        when there is none, the GPU is not reported (a note says so).
    type: path
  docker_cli:
    description:
      - Path of the C(docker) command. By default it is looked up; when there is none, containers are not reported
        (a note says so).
    type: path
  proc_root:
    description:
      - Where procfs is mounted.
    type: path
    default: /proc
  sys_root:
    description:
      - Where sysfs is mounted.
    type: path
    default: /sys
  os_release:
    description:
      - The os-release file to read.
    type: path
    default: /etc/os-release
  fabric_env:
    description:
      - The fabric environment file the C(nccl_env) role writes (its C(nccl_env_file)). C(LD_PRELOAD) or
        C(VLLM_NCCL_SO_PATH) there mean the engine's units load the system's NCCL (RV(recon.fabric.nccl_library)).
      - A file that does not exist means the wheel's NCCL.
    type: path
    default: /etc/sparkops/fabric.env
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
notes:
  - Reads only; never changes the host.
  - Runs C(nvidia-smi) (three times), C(ip -j -4 addr show), C(systemctl list-unit-files) and C(systemctl list-units),
    and C(docker ps -a), each when found.
seealso:
  - module: sparkops.inference.recon_report
  - module: sparkops.inference.gpu_info
  - module: sparkops.inference.roce_info
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Describe the node
  sparkops.inference.node_recon:
    fabric_ip: "{{ sparkops_fabric_ip }}"
    model_dir: /root/.cache/huggingface/hub
  register: node

- name: Show what could not be read
  ansible.builtin.debug:
    var: node.recon.notes

- name: Require 300 GiB free for the model
  ansible.builtin.assert:
    that: node.recon.disk.free_bytes >= 300 * 1024 ** 3
    fail_msg: "only {{ (node.recon.disk.free_bytes / 1024 ** 3) | round(1) }} GiB free at {{ node.recon.disk.measured_path }}"
"""

RETURN = r"""
recon:
  description: What the node is. Every key is always there; what could not be read is null or empty, and RV(recon.notes) says why.
  returned: success
  type: dict
  contains:
    os:
      description: From the os-release file (O(os_release)).
      type: dict
      contains:
        id:
          description: C(ID), for example C(ubuntu).
          type: str
          sample: ubuntu
        version_id:
          description: C(VERSION_ID).
          type: str
          sample: "24.04"
        pretty_name:
          description: C(PRETTY_NAME).
          type: str
          sample: Ubuntu 24.04.3 LTS
    architecture:
      description: The machine architecture (C(platform.machine())).
      type: str
      sample: aarch64
    kernel:
      description: The kernel release (C(platform.release())).
      type: str
      sample: 6.11.0-1016-nvidia
    gpu:
      description: The GPUs, from nvidia-smi.
      type: dict
      contains:
        driver:
          description: The driver version; null without nvidia-smi.
          type: str
          sample: 580.95.05
        cuda:
          description: The CUDA version nvidia-smi's table prints (the highest the driver supports); null without nvidia-smi.
          type: str
          sample: "13.0"
        names:
          description: The GPUs' product names, by index; empty without nvidia-smi.
          type: list
          elements: str
          sample: [NVIDIA GB10]
        count:
          description: The number of GPUs; null without nvidia-smi.
          type: int
          sample: 1
        compute_caps:
          description: The GPUs' CUDA compute capabilities, each once (C(12.1) on a GB10); empty without nvidia-smi.
          type: list
          elements: str
          sample: ["12.1"]
    fabric:
      description: The netdev that holds O(fabric_ip).
      type: dict
      contains:
        ip:
          description: O(fabric_ip), normalized.
          type: str
          sample: 192.168.200.11
        interface:
          description: The netdev that holds the address; null when none does.
          type: str
          sample: enp1s0f1np1
        state:
          description: Its operstate (C(up), C(down), C(unknown), ...); null when no netdev holds the address.
          type: str
          sample: up
        speed_mbps:
          description: Its link speed in Mb/s from C(/sys/class/net/<interface>/speed); null when unknown (link down).
          type: int
          sample: 200000
        mtu:
          description: Its MTU.
          type: int
          sample: 9000
        gid_index:
          description: The RoCE v2 GID index of the address (C(NCCL_IB_GID_INDEX)); null when there is none.
          type: int
          sample: 3
        rdma_devices:
          description: The ports of the netdev's RDMA devices, then those of its twin netdev (the other PCIe half of the same port).
          type: list
          elements: dict
          contains:
            name:
              description: The RDMA device.
              type: str
              sample: rocep1s0f1
            port:
              description: The port number.
              type: int
              sample: 1
            state:
              description: The port state (C(ACTIVE), C(DOWN), ...); null when unreadable.
              type: str
              sample: ACTIVE
            interface:
              description: The netdev the RDMA device belongs to.
              type: str
              sample: enp1s0f1np1
        nccl_library:
          description: Which NCCL the engine's units load, read from O(fabric_env).
          type: dict
          contains:
            library:
              description: C(system) when O(fabric_env) preloads a C(libnccl) or sets C(VLLM_NCCL_SO_PATH), else C(bundled) (the wheel's).
              type: str
              sample: system
            path:
              description: The library's path as O(fabric_env) names it; null when bundled.
              type: str
              sample: /usr/lib/aarch64-linux-gnu/libnccl.so.2
            version:
              description: The version in the name of the file the path resolves to (C(libnccl.so.2.28.3)); null when bundled or not in the name.
              type: str
              sample: 2.28.3
    memory:
      description: Host memory and what holds it.
      type: dict
      contains:
        total_bytes:
          description: C(MemTotal) (MiB precision); null when C(/proc/meminfo) cannot be read.
          type: int
        available_bytes:
          description: C(MemAvailable) (MiB precision); null when C(/proc/meminfo) cannot be read.
          type: int
        top_processes:
          description: The O(top_processes) processes with the largest resident memory, largest first.
          type: list
          elements: dict
          contains:
            pid:
              description: The PID.
              type: int
            name:
              description: The process name (C(Name) of C(/proc/<pid>/status)).
              type: str
            rss_bytes:
              description: The resident memory (C(VmRSS), MiB precision).
              type: int
            unit:
              description: The innermost systemd unit of the process; null when none.
              type: str
        gpu_processes:
          description: The GPU compute processes nvidia-smi lists (a compact form of M(sparkops.inference.gpu_info)'s).
          type: list
          elements: dict
          contains:
            pid:
              description: The host PID.
              type: int
            name:
              description: The process name nvidia-smi reports.
              type: str
            used_mib:
              description: The GPU memory it holds, in MiB; null when not reported.
              type: int
            unit:
              description: Its innermost systemd unit; null when none.
              type: str
            container_name:
              description: The docker container it runs in; null when none or unknown.
              type: str
    disk:
      description: Free space where the model goes.
      type: dict
      contains:
        path:
          description: O(model_dir).
          type: str
          sample: /root/.cache/huggingface/hub
        measured_path:
          description: The path measured, O(model_dir) or its nearest existing ancestor.
          type: str
          sample: /root
        model_present_bytes:
          description: Bytes of O(repo_id)'s whole blobs already in O(model_dir) (downloads in progress not counted); null without O(repo_id).
          type: int
          sample: 0
        free_bytes:
          description: Space an unprivileged user can still write (C(f_bavail)); null when it cannot be measured.
          type: int
        total_bytes:
          description: The file system's size; null when it cannot be measured.
          type: int
    inference:
      description: Inference stacks already on the node.
      type: dict
      contains:
        enabled_units:
          description: The systemd units, enabled or active, whose names match O(unit_patterns), by name.
          type: list
          elements: dict
          contains:
            unit:
              description: The unit name.
              type: str
              sample: vllm-cluster.service
            enabled:
              description: Whether C(systemctl list-unit-files --state=enabled) lists it.
              type: bool
            active:
              description: Whether C(systemctl list-units --state=active) lists it.
              type: bool
        containers:
          description: Every docker container (C(docker ps -a)); empty when docker is missing or fails.
          type: list
          elements: dict
          contains:
            name:
              description: The container name.
              type: str
              sample: vllm
            image:
              description: The image.
              type: str
              sample: nvcr.io/nvidia/vllm:25.09-py3
            state:
              description: The state (C(running), C(exited), ...).
              type: str
              sample: running
            inference:
              description: Whether the name or the image (without registry) matches O(unit_patterns).
              type: bool
    versions:
      description:
        - The components M(sparkops.inference.recon_report) and the drift check compare across nodes, each a string
          or null when unknown.
        - Exactly the keys C(kernel), C(driver), C(cuda), C(nccl), C(python), C(ray), C(vllm).
      type: dict
      contains:
        kernel:
          description: The kernel release.
          type: str
        driver:
          description: The NVIDIA driver version.
          type: str
        cuda:
          description: The CUDA version of the driver.
          type: str
        nccl:
          description: The version of the C(nvidia-nccl-cu13) or C(nvidia-nccl-cu12) wheel in the first venv that has one (cu13 first).
          type: str
        python:
          description: The version of the Python that runs the module.
          type: str
        ray:
          description: The version of C(ray) in the first venv that has it.
          type: str
        vllm:
          description: The version of C(vllm) in the first venv that has it.
          type: str
      sample: {kernel: 6.11.0-1016-nvidia, driver: 580.95.05, cuda: "13.0", nccl: 2.27.3, python: 3.12.3, ray: 2.49.1, vllm: 0.30.0}
    notes:
      description: What could not be read and why, and what looks wrong on the fabric (link down, port not active).
      type: list
      elements: str
      sample: ["gpu: nvidia-smi not found (no NVIDIA driver?): driver, CUDA and GPUs not reported"]
"""

import typing as t
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._node_recon import (
    DEFAULT_UNIT_PATTERNS,
    DEFAULT_VENVS,
    Options,
    ReconError,
    Sources,
    recon,
)

SBIN = ["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/local/nvidia/bin"]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "fabric_ip": {"type": "str", "required": True},
            "model_dir": {"type": "path", "required": True},
            "venvs": {"type": "list", "elements": "path", "default": list(DEFAULT_VENVS)},
            "unit_patterns": {"type": "list", "elements": "str", "default": list(DEFAULT_UNIT_PATTERNS)},
            "top_processes": {"type": "int", "default": 5},
            "repo_id": {"type": "str"},
            "nvidia_smi": {"type": "path"},
            "docker_cli": {"type": "path"},
            "proc_root": {"type": "path", "default": "/proc"},
            "sys_root": {"type": "path", "default": "/sys"},
            "os_release": {"type": "path", "default": "/etc/os-release"},
            "fabric_env": {"type": "path", "default": "/etc/sparkops/fabric.env"},
        },
        supports_check_mode=True,
    )
    p = module.params
    options = Options(
        fabric_ip=p["fabric_ip"],
        model_dir=p["model_dir"],
        venvs=tuple(p["venvs"]),
        unit_patterns=tuple(p["unit_patterns"]),
        top_processes=p["top_processes"],
        repo_id=p["repo_id"],
    )
    sources = Sources(
        proc_root=Path(p["proc_root"]),
        sys_root=Path(p["sys_root"]),
        os_release=Path(p["os_release"]),
        nvidia_smi=p["nvidia_smi"] or module.get_bin_path("nvidia-smi", opt_dirs=SBIN),
        docker=p["docker_cli"] or module.get_bin_path("docker", opt_dirs=SBIN),
        systemctl=module.get_bin_path("systemctl", opt_dirs=SBIN),
        ip=module.get_bin_path("ip", opt_dirs=SBIN),
        fabric_env=Path(p["fabric_env"]),
    )

    def run(argv: list[str]) -> tuple[int, str, str]:
        try:
            return t.cast("tuple[int, str, str]", module.run_command(argv, handle_exceptions=False))
        except OSError as exc:  # a command given by path that is not there: a note, not a failure
            return 127, "", f"cannot run {argv[0]}: {exc.strerror or exc}"

    try:
        result = recon(options, sources, run)
    except ReconError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, recon=result)


if __name__ == "__main__":
    main()
