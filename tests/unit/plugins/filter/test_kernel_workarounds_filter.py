# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GB10 workaround filters: kernel_workarounds (the preflight's choice from the nodes' reconnaissance and the
model's metadata) and kernel_workarounds_apply (the role's environment), with errors naming the input."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.kernel_workarounds import FilterModule as ChooseFilters
from ansible_collections.sparkops.inference.plugins.filter.kernel_workarounds_apply import FilterModule as ApplyFilters

kernel_workarounds = ChooseFilters().filters()["kernel_workarounds"]
kernel_workarounds_apply = ApplyFilters().filters()["kernel_workarounds_apply"]

METADATA = {"config": {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}, "weight_bytes": 1}
# What node_recon returns, less what the filter does not read.
RECON = {
    "spark-head": {"gpu": {"names": ["NVIDIA GB10"], "compute_caps": ["12.1"]}, "versions": {"vllm": "0.32.0"}},
    "spark-worker1": {"gpu": {"names": ["NVIDIA GB10"], "compute_caps": ["12.1"]}},
}


def test_the_choice_reads_each_nodes_compute_capability() -> None:
    choice = kernel_workarounds(METADATA, RECON, vllm_version="0.32.0", model="Qwen/Qwen3.5-122B-A10B-FP8")
    assert [row["name"] for row in choice["rows"]] == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    assert choice["family_hosts"] == ["spark-head", "spark-worker1"] and choice["model"] == "Qwen/Qwen3.5-122B-A10B-FP8"


def test_a_node_without_a_gpu_section_counts_as_unread() -> None:
    choice = kernel_workarounds(METADATA, {**RECON, "spark-worker1": {}}, vllm_version="0.30.0")
    assert choice["unread_hosts"] == ["spark-worker1"]
    assert [row["name"] for row in choice["rows"]] == ["cutlass_fp8_block_scaled"]


@pytest.mark.parametrize(
    ("metadata", "recon", "version", "words"),
    [
        ({"weight_bytes": 1}, RECON, "0.32.0", "the model's metadata with its config.json as 'config'"),
        (METADATA, ["spark-head"], "0.32.0", "recon must map each host to node_recon's recon"),
        (METADATA, RECON, 0.32, "vllm_version must be a string"),
        (METADATA, {"spark-head": {"gpu": {"compute_caps": "12.1"}}}, "0.32.0", "host spark-head: the compute capabilities must be a list"),
    ],
)
def test_bad_input_is_refused_naming_it(metadata: t.Any, recon: t.Any, version: t.Any, words: str) -> None:
    with pytest.raises(AnsibleFilterError, match=words):
        kernel_workarounds(metadata, recon, vllm_version=version)


def test_apply_takes_the_choice_and_the_roles_switches() -> None:
    choice = kernel_workarounds(METADATA, RECON, vllm_version="0.32.0")
    result = kernel_workarounds_apply(choice, enabled=True, skip=["deep_gemm_fp8"], extra_env={"OTHER": "1"})
    assert result["env"] == {"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel"}
    assert kernel_workarounds_apply(None)["note"].startswith("not chosen")


@pytest.mark.parametrize(
    ("choice", "kwargs", "words"),
    [
        ({"rows": []}, {"enabled": "yes"}, "vllm_serve_kernel_workarounds must be true or false"),
        ("rows", {}, "the input must be the kernel_workarounds filter's result or null"),
        ({"rows": []}, {"skip": "deep_gemm_fp8"}, "vllm_serve_kernel_workarounds_skip must be a list of row names"),
        ({"rows": []}, {"skip": ["nope"]}, "vllm_serve_kernel_workarounds_skip names nope"),
        ({"rows": []}, {"extra_env": ["A=1"]}, "vllm_serve_extra_env must be a dict"),
        ({"rows": [{"name": "x"}]}, {}, "no list of rows with an env each"),
    ],
)
def test_apply_refuses_bad_input_naming_the_variable(choice: t.Any, kwargs: dict[str, t.Any], words: str) -> None:
    with pytest.raises(AnsibleFilterError, match=words):
        kernel_workarounds_apply(choice, **kwargs)
