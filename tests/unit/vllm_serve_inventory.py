# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inventory the vllm_serve role tests run against (tests/unit/roles/test_vllm_serve_*.py): a head and a worker on
this machine (local connection), the contract's cluster variables of a 122B model at TP=2. Test modules import it as
``vllm_serve_inventory`` (tests/unit/conftest.py puts tests/unit on ``sys.path``)."""

from __future__ import annotations

import sys
import typing as t


def inventory(**connection: t.Any) -> dict[str, t.Any]:
    """``connection``: more variables for every host (``ansible_become=False``...)."""
    return {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                **connection,
                "sparkops_model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
                "sparkops_model_revision": "main",
                "sparkops_served_model_name": "qwen3.5-122b",
                "sparkops_tensor_parallel_size": 2,
                "sparkops_pipeline_parallel_size": 1,
                "sparkops_gpus_per_node": 1,
                "sparkops_serve_port": 8000,
                "sparkops_gpu_memory_utilization": 0.8,
            },
            "children": {
                "spark_head": {"hosts": {"spark-head": {"sparkops_fabric_ip": "192.168.100.10"}}},
                "spark_workers": {"hosts": {"spark-worker1": {"sparkops_fabric_ip": "192.168.100.11"}}},
            },
        }
    }
