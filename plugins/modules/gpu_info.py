#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_info
short_description: List what holds GPU memory, who owns it, and how much memory a new GPU process can get
version_added: 1.0.0
description:
  - Runs C(nvidia-smi) on the host for its GPUs and GPU compute processes, and finds for each process the systemd unit
    and the container that own it, from C(/proc/<pid>/cgroup) (cgroup v2 and v1; docker, podman, containerd and
    CRI-O container scopes, docker's cgroupfs layout).
  - Container names and states come from C(docker ps -a) when the docker CLI is installed, so a process whose
    container is gone (a worker that outlived C(docker rm -f)) shows RV(processes[].container_running=false).
  - A cgroup's name is only a claim (a user may name a cgroup of their own C(docker-<id>.scope)). A process is taken
    for a running container's only when C(docker ps) lists that exact full id and the container's main process
    (C(docker container inspect), C(State.Pid)) is in the same container cgroup; otherwise
    RV(processes[].container_confirmed=false) and nothing is taken from docker. A container docker does not list is
    called gone only when its cgroup lies where docker's daemon puts containers (not in a user's service manager,
    not below a unit).
  - Each process carries its start time (RV(processes[].start_time)); with its pid it identifies the process, so that
    M(sparkops.inference.process_end) (O(sparkops.inference.process_end#module:expect_start_times)) never ends
    another process that got the pid since.
  - Command lines are returned with the values of secret flags (C(--api-key), C(--hf-token), C(--token),
    C(--password), any C(--*-key), C(--*-token), C(--*-secret), C(--*-password)) and of C(*_TOKEN=), C(*_KEY=),
    C(*_SECRET=), C(*_PASSWORD=) assignments replaced by C(********), so they stay out of Ansible's output.
  - "Unified memory: a DGX Spark's GB10 reports its memory size as C([N/A]) (NVIDIA DGX Spark known issues), since
    the GPU allocates from the host's memory. Then RV(available_mib) is C(MemAvailable) from C(/proc/meminfo). On
    discrete GPUs it is the free memory nvidia-smi reports, summed over the GPUs."
  - Per-process memory (RV(processes[].used_mib)) is reported on both kinds.
  - Run it on the host, not in a container; inside a container nvidia-smi lists no processes (PID namespace).
options:
  nvidia_smi:
    description:
      - Path of the C(nvidia-smi) command. By default it is looked up in E(PATH) and the usual sbin directories.
      - The module fails naming the host's missing command when it cannot be found.
    type: path
  docker_cli:
    description:
      - Path of the C(docker) command used to name containers. By default it is looked up; when there is none,
        container names and states are not reported (RV(docker_available=false)).
    type: path
  top_processes:
    description:
      - How many of the processes with the largest resident memory to report in RV(top_memory), to show what else
        holds memory on a unified-memory host. V(0) skips it.
    type: int
    default: 10
  proc_root:
    description:
      - Where procfs is mounted.
    type: path
    default: /proc
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
notes:
  - Reads only; never changes the host.
seealso:
  - module: sparkops.inference.container_remove
  - module: sparkops.inference.process_end
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Look at what holds GPU memory
  sparkops.inference.gpu_info:
  register: gpu

- name: Show the GPU processes and their owners
  ansible.builtin.debug:
    msg: "{{ item.pid }} {{ item.name }} {{ item.used_mib }} MiB in {{ item.unit }} {{ item.container_name or '' }}"
  loop: "{{ gpu.processes }}"
  loop_control:
    label: "{{ item.pid }}"

- name: Require 100 GiB for the model
  ansible.builtin.assert:
    that: gpu.available_mib >= 102400
    fail_msg: "only {{ gpu.available_mib }} MiB available ({{ 'MemAvailable' if gpu.unified_memory else 'GPU free' }})"
"""

RETURN = r"""
gpus:
  description: The GPUs nvidia-smi reports. Memory fields are null where the driver reports C([N/A]) (GB10).
  returned: success
  type: list
  elements: dict
  contains:
    index:
      description: The GPU index.
      type: int
    name:
      description: The product name.
      type: str
      sample: NVIDIA GB10
    uuid:
      description: The GPU UUID.
      type: str
    bus_id:
      description: The PCI bus id.
      type: str
      sample: 0000000F:01:00.0
    driver_version:
      description: The driver version.
      type: str
      sample: 580.95.05
    memory_total_mib:
      description: Total memory in MiB; null on unified memory.
      type: int
    memory_used_mib:
      description: Used memory in MiB; null on unified memory.
      type: int
    memory_free_mib:
      description: Free memory in MiB; null on unified memory.
      type: int
    compute_cap:
      description: The CUDA compute capability; null where nvidia-smi cannot report it.
      type: str
      sample: "12.1"
    unified_memory:
      description: Whether the driver reports no memory size for this GPU.
      type: bool
processes:
  description: The GPU compute processes with their owners.
  returned: success
  type: list
  elements: dict
  contains:
    pid:
      description: The host PID.
      type: int
    name:
      description: The process name nvidia-smi reports (argv[0]).
      type: str
      sample: VLLM::EngineCore
    used_mib:
      description: The memory the process holds on the GPU, in MiB; null when not reported.
      type: int
    gpu_uuid:
      description: The GPU the process runs on.
      type: str
    running:
      description: Whether the process still existed when its C(/proc) entry was read.
      type: bool
    start_time:
      description:
        - When the process started, in clock ticks after boot (field 22 of C(/proc/<pid>/stat)); with the pid it
          identifies the process. Null when it could not be read (the process is gone).
      type: int
      sample: 811042
    cmdline:
      description:
        - The command line, arguments joined with spaces, the values of secret flags and C(*_TOKEN=)-like
          assignments replaced by C(********).
      type: str
      sample: python3 -m vllm.entrypoints.openai.api_server --api-key ******** --port 8000
    cgroup:
      description: The systemd cgroup path.
      type: str
      sample: /system.slice/vllm-cluster.service
    unit:
      description: The innermost systemd unit (service or scope) of the process, null when none.
      type: str
      sample: docker-3f4e...scope
    user_unit:
      description: Whether RV(processes[].unit) belongs to a user's service manager (C(user@UID.service)).
      type: bool
    service:
      description: RV(processes[].unit) when it is a service, else null.
      type: str
    container_id:
      description: The container id from the cgroup, null when the process runs in no container.
      type: str
    container_runtime:
      description: C(docker), C(podman), C(containerd) or C(cri-o); null when in no container.
      type: str
    container_name:
      description: The container's name from C(docker ps -a); null when unknown, gone or not confirmed.
      type: str
    container_image:
      description: The container's image; null when unknown, gone or not confirmed.
      type: str
    container_running:
      description:
        - Whether the container is running; V(false) when it is gone or stopped while the process lives on;
          null when the process is in no container, when docker could not be asked, when docker did not confirm
          it (RV(processes[].container_confirmed=false)), or when the container is another runtime's (podman,
          containerd, CRI-O) that C(docker ps) does not list.
      type: bool
    container_confirmed:
      description:
        - V(true) when docker lists the container running and its main process is in the same container cgroup;
          V(false) when the cgroup is named like a docker container's but docker does not back it (another
          container cgroup than the main process's, docker inspect unanswered, or a cgroup docker's daemon does not
          make); null otherwise.
      type: bool
used_mib:
  description: The memory held by all GPU processes, in MiB.
  returned: success
  type: int
unified_memory:
  description: Whether GPU memory is the host's memory (GB10), so that RV(available_mib) comes from C(/proc/meminfo).
  returned: success
  type: bool
total_mib:
  description: MemTotal on unified memory, else the GPUs' total memory, in MiB.
  returned: success
  type: int
available_mib:
  description: MemAvailable on unified memory, else the GPUs' free memory, in MiB.
  returned: success
  type: int
meminfo:
  description: Host memory from C(/proc/meminfo), in MiB.
  returned: success
  type: dict
  contains:
    total_mib:
      description: MemTotal.
      type: int
    available_mib:
      description: MemAvailable.
      type: int
    free_mib:
      description: MemFree.
      type: int
    page_cache_mib:
      description: Cached + Buffers, which unified memory counts as used for CUDA until dropped.
      type: int
    shmem_mib:
      description: Shmem.
      type: int
    swap_free_mib:
      description: SwapFree.
      type: int
top_memory:
  description: The processes with the largest resident memory (see O(top_processes)).
  returned: success
  type: list
  elements: dict
  sample: [{"pid": 4242, "name": "python3", "rss_mib": 2048, "unit": "jupyter.service", "container_id": null}]
docker_available:
  description: Whether the docker CLI was found and answered.
  returned: success
  type: bool
"""

import typing as t
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import Container, DockerCli, DockerError
from ansible_collections.sparkops.inference.plugins.module_utils._gpu_info import GpuInfoError, collect

SBIN = ["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/local/nvidia/bin"]


def _docker(module: AnsibleModule) -> DockerCli | None:
    docker = module.params["docker_cli"] or module.get_bin_path("docker", opt_dirs=SBIN)
    if not docker:
        return None

    def run(argv: list[str]) -> tuple[int, str, str]:
        return t.cast("tuple[int, str, str]", module.run_command(argv))

    return DockerCli(docker, run)


def _containers(module: AnsibleModule, docker: DockerCli | None) -> list[Container] | None:
    if docker is None:
        return None
    try:
        return docker.ps()
    except DockerError as exc:
        module.warn(f"container names not reported: {exc}")
        return None


def _main_pids(module: AnsibleModule, docker: DockerCli | None, ids: list[str]) -> dict[str, int]:
    if docker is None:
        return {}
    try:
        return docker.main_pids(ids)
    except DockerError as exc:
        module.warn(f"containers not confirmed (a process is attributed to a container only when docker names its main process): {exc}")
        return {}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nvidia_smi": {"type": "path"},
            "docker_cli": {"type": "path"},
            "top_processes": {"type": "int", "default": 10},
            "proc_root": {"type": "path", "default": "/proc"},
        },
        supports_check_mode=True,
    )
    nvidia_smi = module.params["nvidia_smi"] or module.get_bin_path("nvidia-smi", opt_dirs=SBIN)
    if not nvidia_smi:
        module.fail_json(msg="nvidia-smi not found on this host: is the NVIDIA driver installed? (set nvidia_smi to its path)")
    found: list[list[Container] | None] = []
    clients: list[DockerCli | None] = []

    def containers() -> list[Container] | None:
        clients.append(_docker(module))
        found.append(_containers(module, clients[0]))
        return found[0]

    def main_pids(ids: list[str]) -> dict[str, int]:
        return _main_pids(module, clients[0] if clients else None, ids)

    def run(argv: list[str]) -> tuple[int, str, str]:
        return t.cast("tuple[int, str, str]", module.run_command(argv))

    try:
        report = collect(run, nvidia_smi, Path(module.params["proc_root"]), containers, top_count=module.params["top_processes"], main_pids=main_pids)
    except GpuInfoError as exc:
        if exc.rc is None:
            module.fail_json(msg=str(exc))
        module.fail_json(msg=str(exc), rc=exc.rc)
    module.exit_json(changed=False, docker_available=found[0] is not None, **report)


if __name__ == "__main__":
    main()
