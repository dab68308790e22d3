# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's CPU communicator, its shared-memory path kept to groups whose ranks share one host.

vLLM's ``CpuCommunicator`` (``vllm/distributed/device_communicators/cpu_communicator.py:33-51`` in the 0.32.0 wheel)
moves a tensor-parallel group's tensors through shared memory (``_CPUSHMDistributed``) when every rank computes the
same group name (``_all_group_ranks_share_shm_group_name``, lines 71-82), a name made of ``VLLM_DIST_IDENT`` (the
port of the worker's ``distributed_init_method``: ``vllm/v1/worker/cpu_worker.py:147-152``), the group and its ranks
(lines 236-243): it takes ranks that agree on it to share one host, as vLLM's CPU platform supports (one node). In
mp mode across nodes the names differ and vLLM logs "CPU SHM communicator disabled ... falling back to
torch.distributed". Under Ray the ranks on both nodes get the same init method (the Ray executor's, on the head), so
the names agree and the worker on the other node fails to open the head's shared memory: "open shm in SHMManager
failed. errno: 2" (measured in the lab, 2026-12-07). Here the check also asks that every rank runs on one host (its
host name: each lab node is a container with its own UTS namespace and its own /dev/shm); a group across nodes then
falls back to torch.distributed (gloo over the fabric), as in mp mode.
"""

from __future__ import annotations

import socket

import torch
from vllm.distributed.device_communicators.cpu_communicator import CpuCommunicator


class CpuRayCommunicator(CpuCommunicator):
    """``CpuCommunicator`` that uses shared memory only for a group whose ranks share one host."""

    def _all_group_ranks_share_shm_group_name(self) -> bool:
        hosts: list[str] = [""] * self.world_size
        torch.distributed.all_gather_object(hosts, socket.gethostname(), group=self.device_group)
        return len(set(hosts)) == 1 and super()._all_group_ranks_share_shm_group_name()
