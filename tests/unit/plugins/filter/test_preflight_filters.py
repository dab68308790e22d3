# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight's filters: version_drift and model_fit, wired to module_utils, with errors naming the input."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.model_fit import FilterModule as FitFilters
from ansible_collections.sparkops.inference.plugins.filter.version_drift import FilterModule as DriftFilters

version_drift = DriftFilters().filters()["version_drift"]
model_fit = FitFilters().filters()["model_fit"]

GIB = 1024**3
HEAD = {"kernel": "6.11.0-1016-nvidia", "driver": "580.95.05", "cuda": "13.0", "nccl": "2.27.7", "python": "3.12.3", "ray": "2.52.1", "vllm": "0.30.0"}
# Qwen3-style: 32 heads, 4 KV heads, 48 layers, head_dim 128.
CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "max_position_embeddings": 32768,
}
METADATA = {"config": CONFIG, "weight_bytes": 60 * GIB, "snapshot_bytes": 61 * GIB}
NODES = {"spark-head": {"mem_total": 119 * GIB, "disk_free": 500 * GIB, "present_bytes": 0}, "spark-worker1": {"mem_total": 119 * GIB, "disk_free": 500 * GIB}}


def test_version_drift_names_host_component_and_both_values() -> None:
    drift = version_drift({"spark-head": HEAD, "spark-worker1": {**HEAD, "ray": "2.49.0", "vllm": None}}, "spark-head")
    assert drift["problems"] == ["host spark-worker1: ray 2.49.0, the head spark-head has 2.52.1"]
    assert drift["unknown"] == ["vllm: host spark-worker1 did not report it; not compared"]


def test_version_drift_allowed_components_are_not_problems() -> None:
    drift = version_drift({"spark-head": HEAD, "spark-worker1": {**HEAD, "kernel": "6.8.0"}}, "spark-head", ["kernel"])
    assert drift["problems"] == []
    assert drift["allowed"] == ["host spark-worker1: kernel 6.8.0, the head spark-head has 6.11.0-1016-nvidia"]


@pytest.mark.parametrize(
    ("value", "head", "allowed", "message"),
    [
        ({"h": HEAD}, "h", ["rays"], "sparkops_drift_allowed names rays"),
        ({"h": HEAD}, "h", "ray", "must be a list"),
        ({"h": HEAD}, "other", [], "the head other reported no versions"),
        (["h"], "h", [], "sparkops.inference.version_drift"),
    ],
)
def test_version_drift_bad_input(value: t.Any, head: str, allowed: t.Any, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        version_drift(value, head, allowed)


def test_model_fit_a_model_that_fits() -> None:
    fit = model_fit(METADATA, NODES, 2, 1, 0.85)
    assert fit["fits"] is True and fit["problems"] == []
    assert fit["figures"]["weights_per_node_bytes"] == 30 * GIB


def test_model_fit_tp_that_does_not_divide_the_heads_and_too_little_memory() -> None:
    fit = model_fit(METADATA, NODES, 3, 1, 0.2)
    assert not fit["fits"]
    text = " ".join(fit["problems"])
    assert "sparkops_tensor_parallel_size (3) must divide the model's 32 attention heads" in text
    assert "host spark-head: the weights take 20.0 GiB per node" in text and "host spark-worker1" in text


def test_model_fit_counts_what_is_present_against_disk() -> None:
    nodes = {
        "spark-head": {"mem_total": 119 * GIB, "disk_free": 10 * GIB, "present_bytes": 61 * GIB},
        "spark-worker1": {"mem_total": 119 * GIB, "disk_free": 10 * GIB},
    }
    fit = model_fit(METADATA, nodes, 2, 1, 0.85, max_model_len=4096)
    assert fit["problems"] == [
        f"host spark-worker1: 10.0 GiB free where the model goes, {61 * 1.05:.1f} GiB needed (the snapshot's 61.0 GiB plus 5%, less what is already there)"
    ]


@pytest.mark.parametrize(
    ("metadata", "nodes", "message"),
    [
        ({"weight_bytes": 1}, NODES, "model_metadata's result"),
        (METADATA, {}, "nodes must map"),
        (METADATA, {"h": {"mem_total": 1}}, "host h has no mem_total/disk_free"),
        ({**METADATA, "weight_bytes": -1}, NODES, "weight_bytes must be a whole number"),
        (METADATA, {"h": {"mem_total": "lots", "disk_free": 1}}, "host h's mem_total"),
    ],
)
def test_model_fit_bad_input(metadata: t.Any, nodes: t.Any, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        model_fit(metadata, nodes, 2, 1, 0.85)


@pytest.mark.parametrize(
    ("split", "message"),
    [
        ({"tensor_parallel_size": 0}, r"sparkops_tensor_parallel_size must be a whole number of at least 1, not 0"),
        ({"tensor_parallel_size": "two"}, r"sparkops_tensor_parallel_size must be a number, not 'two'"),
        ({"tensor_parallel_size": 2.5}, r"sparkops_tensor_parallel_size must be a whole number, not 2.5"),
        ({"tensor_parallel_size": True}, r"sparkops_tensor_parallel_size must be a number, not True"),
        ({"pipeline_parallel_size": -1}, r"sparkops_pipeline_parallel_size must be a whole number of at least 1, not -1"),
        ({"gpu_memory_utilization": 0}, r"sparkops_gpu_memory_utilization must be above 0 and at most 1, not 0.0"),
        ({"gpu_memory_utilization": "nan"}, r"sparkops_gpu_memory_utilization must be above 0 and at most 1, not nan"),
        ({"gpu_memory_utilization": 85}, r"sparkops_gpu_memory_utilization must be above 0 and at most 1, not 85.0"),
        ({"max_model_len": 0}, r"vllm_serve_max_model_len must be a whole number of at least 1, not 0"),
        ({"max_model_len": "inf"}, r"vllm_serve_max_model_len must be a number, not 'inf'"),
        ({"overhead_bytes": -5}, r"overhead_bytes must be a whole number of bytes, not -5"),
    ],
)
def test_model_fit_refuses_a_split_no_cluster_can_have_naming_the_variable(split: dict[str, t.Any], message: str) -> None:
    """Never a ZeroDivisionError or a quiet int(2.5) == 2: the preflight's contract catches these first, the filter
    on its own (a playbook of the user's) says the same."""
    arguments: dict[str, t.Any] = {"tensor_parallel_size": 2, "pipeline_parallel_size": 1, "gpu_memory_utilization": 0.85, **split}
    with pytest.raises(AnsibleFilterError, match=message):
        model_fit(METADATA, NODES, **arguments)


def test_model_fit_takes_numbers_an_inventory_writes_as_strings() -> None:
    assert model_fit(METADATA, NODES, "2", "1", "0.85", max_model_len="4096")["fits"]


def test_recon_filters_join_the_plan_and_take_the_fit_facts() -> None:
    from ansible_collections.sparkops.inference.plugins.filter.recon_fit_facts import FilterModule as FactsFilters
    from ansible_collections.sparkops.inference.plugins.filter.recon_nodes import FilterModule as NodesFilters

    recon = {
        "h": {"memory": {"total_bytes": 100}, "disk": {"free_bytes": 50, "model_present_bytes": 7}},
        "w": {"memory": {"total_bytes": 90}, "disk": {"free_bytes": 40}},
    }
    nodes = NodesFilters().filters()["recon_nodes"](recon, {"head": "h", "fabric_ips": {"h": "192.168.200.1", "w": "192.168.200.2"}})
    assert nodes["h"]["role"] == "head" and nodes["w"]["role"] == "worker" and nodes["w"]["fabric_ip"] == "192.168.200.2"
    facts = FactsFilters().filters()["recon_fit_facts"](recon)
    assert facts == {"h": {"mem_total": 100, "disk_free": 50, "present_bytes": 7}, "w": {"mem_total": 90, "disk_free": 40, "present_bytes": 0}}
    with pytest.raises(AnsibleFilterError, match="host w: the reconnaissance has no memory total"):
        FactsFilters().filters()["recon_fit_facts"]({"w": {"memory": {}, "disk": {"free_bytes": 1}}})
    with pytest.raises(AnsibleFilterError, match="cluster must be the cluster plan"):
        NodesFilters().filters()["recon_nodes"](recon, {"head": "h"})


# Speculative decoding's draft model (issue 35), as the preflight passes it: model_metadata's result and the
# speculative_draft filter's repo_id and tensor_parallel_size.
DRAFT_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
}
DRAFT = {"config": DRAFT_CONFIG, "weight_bytes": 4 * GIB, "snapshot_bytes": 4 * GIB + 10**6}


def test_model_fit_without_a_draft_model_is_unchanged() -> None:
    for draft in (None, ""):
        assert model_fit(METADATA, NODES, 2, 1, 0.85, draft=draft, draft_repo_id="org/drafter") == model_fit(METADATA, NODES, 2, 1, 0.85)


def test_model_fit_counts_a_draft_model_that_fits() -> None:
    fit = model_fit(METADATA, NODES, 2, 1, 0.85, draft=DRAFT, draft_repo_id="org/drafter", draft_method="draft_model")
    assert fit["fits"] is True, fit["problems"]
    figures = fit["figures"]
    assert figures["weights_per_node_bytes"] == 30 * GIB and figures["draft_weights_per_node_bytes"] == 2 * GIB
    assert figures["draft_tensor_parallel_size"] == 2 and figures["draft_repo_id"] == "org/drafter"
    assert figures["draft_kv_bytes_per_token"] == 2 * 28 * 4 * 128 * 2 and figures["draft_snapshot_bytes"] == DRAFT["snapshot_bytes"]
    one = model_fit(METADATA, NODES, 2, 1, 0.85, draft=DRAFT, draft_repo_id="org/drafter", draft_tensor_parallel_size="1", draft_method="eagle")
    assert one["fits"] and one["figures"]["draft_weights_per_node_bytes"] == 4 * GIB


def test_model_fit_a_draft_model_too_big_names_it_and_vllm_serve_speculative() -> None:
    big = {**DRAFT, "weight_bytes": 160 * GIB, "snapshot_bytes": 160 * GIB}
    fit = model_fit(METADATA, NODES, 2, 1, 0.85, draft=big, draft_repo_id="org/drafter")
    assert not fit["fits"]
    memory = [p for p in fit["problems"] if p.startswith("host spark-head: the weights")]
    assert memory and "plus the draft model org/drafter's 80.0 GiB per node (160.0 GiB over its TP 2)" in memory[0]
    assert memory[0].endswith("or choose a smaller draft model in vllm_serve_speculative")
    assert not any("free where the model goes" in p for p in fit["problems"])  # 500 GiB free: the disk is enough


def test_model_fit_counts_the_draft_models_snapshot_against_disk() -> None:
    nodes = {host: {**facts, "disk_free": 66 * GIB} for host, facts in NODES.items()}  # the model's 61 GiB + 5 % fits
    assert model_fit(METADATA, nodes, 2, 1, 0.85, max_model_len=4096)["fits"]
    fit = model_fit(METADATA, nodes, 2, 1, 0.85, max_model_len=4096, draft=DRAFT, draft_repo_id="org/drafter")
    assert [p.split(":")[0] for p in fit["problems"]] == ["host spark-head", "host spark-worker1"]
    assert "needed (the snapshot's 61.0 GiB and the draft model org/drafter's 4.0 GiB (vllm_serve_speculative) plus 5%" in fit["problems"][0]


def test_model_fit_a_corrupt_draft_config_is_a_problem_naming_it() -> None:
    fit = model_fit(METADATA, NODES, 2, 1, 0.85, draft={**DRAFT, "config": {**DRAFT_CONFIG, "head_dim": 1e400}}, draft_repo_id="org/drafter")
    assert fit["problems"] == ["vllm_serve_speculative: the draft model org/drafter's config.json is corrupt: head_dim is inf (a float), not an integer"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"draft": {"weight_bytes": 1}}, "draft must be model_metadata's result for the draft model"),
        ({"draft": {**DRAFT, "weight_bytes": -1}}, "the draft model's weight_bytes must be a whole number"),
        ({"draft": {**DRAFT, "snapshot_bytes": None}}, "the draft model's snapshot_bytes must be a whole number"),
        ({"draft": DRAFT, "draft_tensor_parallel_size": 0}, "vllm_serve_speculative.draft_tensor_parallel_size must be a whole number of at least 1, not 0"),
        ({"draft": DRAFT, "draft_tensor_parallel_size": 1.5}, "vllm_serve_speculative.draft_tensor_parallel_size must be a whole number, not 1.5"),
    ],
)
def test_model_fit_bad_draft_input(arguments: dict[str, t.Any], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        model_fit(METADATA, NODES, 2, 1, 0.85, draft_repo_id="org/drafter", **arguments)
