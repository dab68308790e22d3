# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_model_fit: vLLM 0.30.0's split rules, memory and disk, every problem at once with its numbers."""

from __future__ import annotations

import signal
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._model_fit import (
    GIB,
    Cluster,
    Draft,
    Verdict,
    largest_stage_layers,
    plan_fit,
    shape_from_config,
)

# A Qwen3-MoE-like text model: 48 layers, 32 heads, 4 KV heads of 128.
CONFIG: dict[str, t.Any] = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 32768,
}
WEIGHTS = 119 * 10**9  # Qwen3.5-122B-A10B-FP8's ~119 GB
SPARK = int(119.61 * GIB)  # a GB10's CUDA-visible memory


def cluster(tp: int = 2, pp: int = 1, util: float = 0.8, **kwargs: t.Any) -> Cluster:
    hosts = [f"spark-{n}" for n in range(tp * pp)]
    values: dict[str, t.Any] = {
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "gpu_memory_utilization": util,
        "mem_total": dict.fromkeys(hosts, SPARK),
        "disk_free": dict.fromkeys(hosts, 1000 * GIB),
        "snapshot_bytes": WEIGHTS + 10**7,
    }
    values.update(kwargs)
    return Cluster(**values)


def test_the_shape_from_config_json() -> None:
    shape = shape_from_config(CONFIG, WEIGHTS)
    assert (shape.architecture, shape.num_layers, shape.attention_heads, shape.kv_heads, shape.head_dim, shape.kv_layers) == (
        "Qwen3MoeForCausalLM",
        48,
        32,
        4,
        128,
        48,
    )
    nested = shape_from_config({"architectures": ["X"], "text_config": {**CONFIG, "head_dim": None}}, WEIGHTS)
    assert nested.head_dim == 4096 // 32 and nested.kv_heads == 4  # head size from hidden_size / heads
    no_gqa = shape_from_config({**CONFIG, "num_key_value_heads": None}, WEIGHTS)
    assert no_gqa.kv_heads == 32
    hybrid = shape_from_config({**CONFIG, "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12}, WEIGHTS)
    assert hybrid.kv_layers == 12  # only the full-attention layers keep a KV cache


def test_the_deployment_we_automate_fits() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster())
    assert verdict.fits, verdict.problems
    assert verdict.figures["weights_per_node_bytes"] == WEIGHTS // 2 and verdict.figures["overhead_guessed"] is True
    assert verdict.figures["kv_bytes_per_token"] == 2 * 48 * 2 * 128 * 2  # K and V, 48 layers, 4 KV heads / TP 2, bf16


def test_one_spark_is_too_small_and_the_message_says_what_to_change() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(tp=1))
    assert not verdict.fits and len(verdict.problems) == 1
    problem = verdict.problems[0]
    assert problem.startswith("host spark-0: the weights take 110.8 GiB per node (110.8 GiB over TP 1 x PP 1)")
    assert "MemTotal 119.6 GiB x sparkops_gpu_memory_utilization 0.8" in problem and "more Sparks" in problem


def test_a_low_utilization_says_which_would_do() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(util=0.45))
    assert len(verdict.problems) == 2 and "raise the utilization to at least 0.50, or spread the model" in verdict.problems[0]


def test_a_max_model_len_beyond_the_kv_cache_gives_the_length_that_fits() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(max_model_len=2_000_000))
    assert len(verdict.problems) == 2  # both hosts, each named
    assert all("set vllm_serve_max_model_len to at most" in p and "one sequence of 2000000 tokens" in p for p in verdict.problems)
    most = int(verdict.problems[0].split("at most ")[1].split(",")[0])
    assert plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(max_model_len=most)).fits


@pytest.mark.parametrize(
    ("tp", "config", "expected"),
    [
        (3, CONFIG, "sparkops_tensor_parallel_size (3) must divide the model's 32 attention heads (vLLM refuses it); sizes that do: 1, 2, 4, 8, 16, 32"),
        (8, CONFIG, None),  # 4 KV heads replicated over 8 ranks: vLLM accepts it
        (4, {**CONFIG, "num_key_value_heads": 6, "num_attention_heads": 48}, "and the model's 6 KV heads"),
        (16, {**CONFIG, "num_key_value_heads": 6, "num_attention_heads": 48}, "(then 6 must divide 16)"),
    ],
)
def test_vllms_head_rules(tp: int, config: dict[str, t.Any], expected: str | None) -> None:
    small = cluster(tp=tp, mem_total={"h": 10**15}, disk_free={"h": 10**15})
    verdict = plan_fit(shape_from_config(config, 10**9), small)
    if expected is None:
        assert verdict.fits, verdict.problems
    else:
        assert any(expected in p for p in verdict.problems), verdict.problems


def test_pipeline_stages() -> None:
    assert [largest_stage_layers(48, pp) for pp in (1, 2, 5, 7)] == [48, 24, 10, 7]
    big = {"mem_total": {"h": 10**15}, "disk_free": {"h": 10**15}}
    assert (
        "sparkops_pipeline_parallel_size (64) is more than the model's 48 layers" in plan_fit(shape_from_config(CONFIG, 10**9), cluster(pp=64, **big)).problems
    )
    uneven = plan_fit(shape_from_config(CONFIG, 10**9), cluster(tp=1, pp=5, **big))
    assert uneven.fits and "48 layers over 5 pipeline stages: uneven, the largest stage has 10" in uneven.warnings[0]


def test_disk_free_on_every_node_less_what_is_there() -> None:
    short = cluster(disk_free={"spark-0": 200 * GIB, "spark-1": 100 * GIB})
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), short)
    assert len(verdict.problems) == 1 and verdict.problems[0].startswith("host spark-1: 100.0 GiB free where the model goes, 116.4 GiB needed")
    present = cluster(disk_free={"spark-0": 200 * GIB, "spark-1": 100 * GIB}, present_bytes={"spark-1": 60 * GIB})
    assert plan_fit(shape_from_config(CONFIG, WEIGHTS), present).fits


def test_every_problem_at_once() -> None:
    bad = cluster(tp=3, disk_free={"spark-0": GIB, "spark-1": GIB, "spark-2": GIB}, util=0.1)
    problems = plan_fit(shape_from_config(CONFIG, WEIGHTS), bad).problems
    assert len(problems) == 2 + 3 + 3, problems  # the heads, the KV heads, each host's memory, each host's disk


def test_an_unknown_architecture_warns_with_what_was_not_checked() -> None:
    verdict = plan_fit(shape_from_config({"model_type": "mystery"}, WEIGHTS), cluster())
    assert verdict.fits
    assert "config.json names no architecture" in verdict.warnings[0]
    assert any("the split was not checked" in w for w in verdict.warnings) and any("the KV cache was not sized" in w for w in verdict.warnings)


# --- hostile config.json (issue 15): a problem naming the field, found fast; never an exception ------------------------


def fit_fast(config: dict[str, t.Any], weights: int = WEIGHTS, seconds: float = 2.0, **kwargs: t.Any) -> Verdict:
    """plan_fit(shape_from_config(...)), which must return within ``seconds`` (an alarm ends a loop that would not)."""

    def too_long(signum: int, frame: t.Any) -> None:
        raise TimeoutError(f"plan_fit still running after {seconds}s")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return plan_fit(shape_from_config(config, weights), cluster(**kwargs))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


MAX = "(at most 9223372036854775807, 64 bits)"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"num_attention_heads": 10**30}, f"num_attention_heads is 1000000000000000000000000000000, more than any model has {MAX}"),
        ({"max_position_embeddings": 10**400}, f"max_position_embeddings is an integer of 1329 bits, more than any model has {MAX}"),
        ({"hidden_size": float("inf"), "head_dim": None}, "hidden_size is inf (a float), not an integer"),  # 1e400 in the JSON
        ({"head_dim": float("nan")}, "head_dim is nan (a float), not an integer"),
        ({"num_hidden_layers": "48"}, "num_hidden_layers is '48' (a string), not an integer"),
        ({"num_key_value_heads": [4]}, "num_key_value_heads is a JSON array, not an integer"),
        ({"num_attention_heads": {"q": 32}}, "num_attention_heads is a JSON object, not an integer"),
        ({"num_hidden_layers": True}, "num_hidden_layers is True (a bool), not an integer"),
        (
            {"num_hidden_layers": "x" * 10**6},
            "num_hidden_layers is 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (a string), not an integer",
        ),
    ],
    ids=[
        "heads-10e30",
        "context-10e400",
        "hidden-1e400",
        "head-dim-nan",
        "layers-a-string",
        "kv-heads-a-list",
        "heads-an-object",
        "layers-a-bool",
        "a-long-string",
    ],
)
def test_a_hostile_figure_is_a_problem_naming_it(change: dict[str, t.Any], problem: str) -> None:
    verdict = fit_fast({**CONFIG, **change})
    assert not verdict.fits
    assert verdict.problems == [f"config.json is corrupt: {problem}"]
    assert "the split and the memory were not checked: the model's figures are corrupt" in verdict.warnings


def test_a_hostile_figure_of_a_multimodal_model_names_text_config() -> None:
    verdict = fit_fast({"architectures": ["X"], "text_config": {**CONFIG, "num_attention_heads": -(10**30), "head_dim": 1e300}})
    assert verdict.problems == ["config.json is corrupt: text_config.head_dim is 1e+300 (a float), not an integer"]


def test_huge_heads_that_tp_does_not_divide_are_answered_at_once() -> None:
    """10**18 + 1 heads (a 64-bit integer): the divisors were looked for among all of them (a loop of 10**18)."""
    verdict = fit_fast({**CONFIG, "num_attention_heads": 10**18 + 1, "num_key_value_heads": 2}, mem_total={"spark-0": 10**15, "spark-1": 10**15})
    assert any(p.endswith("attention heads (vLLM refuses it); sizes that do: 1") for p in verdict.problems), verdict.problems


def test_weights_past_64_bits_are_a_problem() -> None:
    verdict = fit_fast(CONFIG, weights=10**400)
    assert verdict.problems == [f"the model's weight bytes are an integer of 1329 bits, more than any model has (at most {2**64 - 1}, 64 bits)"]


@pytest.mark.parametrize("architectures", [5, True, {"a": 1}, "LlamaForCausalLM", [["X"]]])
def test_architectures_that_are_not_a_list_of_names(architectures: t.Any) -> None:
    verdict = fit_fast({**CONFIG, "architectures": architectures})
    assert verdict.fits, verdict.problems
    assert "config.json names no architecture" in verdict.warnings[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tensor_parallel_size": 0}, "sparkops_tensor_parallel_size must be a whole number of at least 1, not 0"),
        ({"pipeline_parallel_size": 0}, "sparkops_pipeline_parallel_size must be a whole number of at least 1, not 0"),
        ({"tensor_parallel_size": True}, "sparkops_tensor_parallel_size must be a whole number of at least 1, not True"),
        ({"gpu_memory_utilization": 0.0}, "sparkops_gpu_memory_utilization must be above 0 and at most 1, not 0.0"),
        ({"gpu_memory_utilization": float("nan")}, "sparkops_gpu_memory_utilization must be above 0 and at most 1, not nan"),
        ({"gpu_memory_utilization": 1.01}, "sparkops_gpu_memory_utilization must be above 0 and at most 1, not 1.01"),
        ({"max_model_len": -1}, "vllm_serve_max_model_len must be a whole number of at least 1, not -1"),
        ({"overhead_bytes": -1}, "overhead_bytes must be a whole number of bytes, not -1"),
        ({"disk_margin": float("inf")}, "the disk margin must be a finite fraction of at least 0, not inf"),
    ],
)
def test_a_split_no_cluster_can_have_is_refused_naming_its_variable(change: dict[str, t.Any], message: str) -> None:
    """Before any arithmetic: TP 0 would divide by zero in the head rules, a NaN utilization would pass every check."""
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cluster(**change)


# Speculative decoding's draft model (issue 35): a Qwen3-1.7B-like one, 28 layers, 16 heads, 8 KV heads of 128, ~4 GB.
DRAFT_CONFIG: dict[str, t.Any] = {
    "architectures": ["Qwen3ForCausalLM"],
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 2048,
    "max_position_embeddings": 40960,
}
DRAFT_WEIGHTS = 4 * 10**9
DRAFT_REPO = "org/drafter"


def draft(config: dict[str, t.Any] | None = None, weights: int = DRAFT_WEIGHTS, **kwargs: t.Any) -> Draft:
    values: dict[str, t.Any] = {
        "repo_id": DRAFT_REPO,
        "shape": shape_from_config(DRAFT_CONFIG if config is None else config, weights),
        "snapshot_bytes": weights + 10**7,
        "method": "draft_model",
    }
    values.update(kwargs)
    return Draft(**values)


def test_without_a_draft_model_the_verdict_is_the_same() -> None:
    for split in (cluster(), cluster(tp=1), cluster(util=0.45), cluster(max_model_len=2_000_000)):
        alone, with_none = plan_fit(shape_from_config(CONFIG, WEIGHTS), split), plan_fit(shape_from_config(CONFIG, WEIGHTS), split, None)
        assert (alone.problems, alone.warnings, alone.figures) == (with_none.problems, with_none.warnings, with_none.figures)
        assert not any(key.startswith("draft_") for key in alone.figures)


def test_a_draft_model_that_fits_is_counted_per_node() -> None:
    alone = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster())
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft())
    assert verdict.fits, verdict.problems
    figures = verdict.figures
    assert figures["weights_per_node_bytes"] == WEIGHTS // 2 and figures["kv_bytes_per_token"] == alone.figures["kv_bytes_per_token"]
    # vLLM's default: the draft model's tensor-parallel size is the model's (2); never pipelined.
    assert figures["draft_tensor_parallel_size"] == 2 and figures["draft_repo_id"] == DRAFT_REPO
    assert figures["draft_weights_per_node_bytes"] == DRAFT_WEIGHTS // 2
    assert figures["draft_kv_bytes_per_token"] == 2 * 28 * (8 // 2) * 128 * 2  # its own layers, KV heads / its TP, bf16
    assert figures["draft_snapshot_bytes"] == DRAFT_WEIGHTS + 10**7
    # One budget: what is left for the KV cache is less by the draft model's weights.
    assert figures["kv_budget_bytes"]["spark-0"] == alone.figures["kv_budget_bytes"]["spark-0"] - DRAFT_WEIGHTS // 2


def test_the_draft_models_kv_cache_follows_the_kv_cache_dtype() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(kv_cache_dtype="fp8"), draft())
    assert verdict.figures["draft_kv_bytes_per_token"] == 2 * 28 * 4 * 128 * 1


def test_a_draft_model_on_one_rank_puts_all_its_weights_on_every_node() -> None:
    """draft_tensor_parallel_size 1 (eagle: vLLM takes 1 or the model's size): each rank holds the whole draft model."""
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft(tensor_parallel_size=1, method="eagle"))
    assert verdict.fits, verdict.problems
    assert verdict.figures["draft_tensor_parallel_size"] == 1
    assert verdict.figures["draft_weights_per_node_bytes"] == DRAFT_WEIGHTS
    assert verdict.figures["draft_kv_bytes_per_token"] == 2 * 28 * 8 * 128 * 2
    default = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft(method="eagle"))
    assert default.figures["draft_weights_per_node_bytes"] == DRAFT_WEIGHTS // 2


def test_the_draft_model_method_takes_only_the_models_tensor_parallel_size() -> None:
    """vLLM 0.32's DraftModelProposer refuses a draft TP other than the model's; any method refuses one other than 1 or it."""
    one = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft(tensor_parallel_size=1))
    assert one.problems == [
        "vllm_serve_speculative.draft_tensor_parallel_size (1) for the draft model org/drafter: vLLM's draft_model method runs "
        "the draft model with the model's tensor-parallel size only; remove draft_tensor_parallel_size or set it to 2"
    ]
    three = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(tp=4), draft(tensor_parallel_size=3, method="eagle"))
    assert (
        "vllm_serve_speculative.draft_tensor_parallel_size (3) for the draft model org/drafter must be 1 or sparkops_tensor_parallel_size (4) "
        "(vLLM refuses any other)"
    ) in three.problems
    assert plan_fit(shape_from_config(CONFIG, 10**9), cluster(tp=1), draft(tensor_parallel_size=1)).fits


def test_a_draft_model_whose_heads_its_split_does_not_divide_names_vllm_serve_speculative() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(tp=4), draft({**DRAFT_CONFIG, "num_attention_heads": 14, "num_key_value_heads": 2}))
    assert not verdict.fits
    assert (
        "vllm_serve_speculative: the draft model org/drafter's 14 attention heads are not divisible by its tensor-parallel size 4 "
        "(vLLM refuses it); sizes that do: 1, 2, 7, 14 (draft_tensor_parallel_size may be 1 or 4), or choose another draft model"
    ) in verdict.problems
    assert not any(p.startswith("sparkops_tensor_parallel_size") for p in verdict.problems)  # the model's own split is good
    kv = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(tp=4), draft({**DRAFT_CONFIG, "num_key_value_heads": 6}))
    assert any(p.startswith("vllm_serve_speculative: the draft model org/drafter's 6 KV heads and its tensor-parallel size 4") for p in kv.problems)


def test_a_draft_model_that_does_not_fit_names_it_and_the_variable() -> None:
    """The model alone fits at 0.8 on two Sparks (test_the_deployment_we_automate_fits); an 80 GB draft model does not."""
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft(weights=80 * 10**9))
    assert not verdict.fits and len(verdict.problems) == 2  # both hosts
    problem = verdict.problems[0]
    assert problem.startswith(
        "host spark-0: the weights take 55.4 GiB per node (110.8 GiB over TP 2 x PP 1) plus the draft model org/drafter's "
        "37.3 GiB per node (74.5 GiB over its TP 2) plus about 4.0 GiB of activations and runtime"
    ), problem
    assert problem.endswith("or choose a smaller draft model in vllm_serve_speculative"), problem


def test_the_draft_models_kv_cache_shortens_the_context_that_fits() -> None:
    shape = shape_from_config(CONFIG, WEIGHTS)
    alone = plan_fit(shape, cluster())
    per_token = alone.figures["kv_bytes_per_token"] + 2 * 28 * 4 * 128 * 2
    budget = alone.figures["kv_budget_bytes"]["spark-0"] - DRAFT_WEIGHTS // 2
    fits_alone = alone.figures["kv_budget_bytes"]["spark-0"] // alone.figures["kv_bytes_per_token"]
    verdict = plan_fit(shape, cluster(max_model_len=fits_alone), draft())
    assert plan_fit(shape, cluster(max_model_len=fits_alone)).fits and not verdict.fits
    problem = verdict.problems[0]
    assert problem.startswith(f"host spark-0: one sequence of {fits_alone} tokens needs ") and "(the draft model org/drafter's " in problem
    assert f"set vllm_serve_max_model_len to at most {budget // per_token}," in problem
    assert problem.endswith("or choose a smaller draft model in vllm_serve_speculative"), problem
    assert plan_fit(shape, cluster(max_model_len=budget // per_token), draft()).fits


def test_the_draft_model_is_not_pipelined() -> None:
    """PP 2: the model's weights are halved again, the draft model's are not (the whole of it on the last stage)."""
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(tp=1, pp=2), draft())
    assert verdict.figures["weights_per_node_bytes"] == WEIGHTS // 2
    assert verdict.figures["draft_weights_per_node_bytes"] == DRAFT_WEIGHTS
    assert verdict.figures["draft_kv_bytes_per_token"] == 2 * 28 * 8 * 128 * 2


def test_the_draft_models_snapshot_needs_disk_on_every_node() -> None:
    free = 130 * GIB  # the model's ~111 GiB + 5 % fits; with the drafter's ~3.7 GiB it does not
    split = cluster(disk_free={"spark-0": free, "spark-1": free})
    assert plan_fit(shape_from_config(CONFIG, WEIGHTS), split).fits
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), split, draft(weights=20 * 10**9))
    needed = (WEIGHTS + 10**7 + 20 * 10**9 + 10**7) * 1.05
    assert verdict.problems == [
        f"host spark-{n}: 130.0 GiB free where the model goes, {needed / GIB:.1f} GiB needed (the snapshot's 110.8 GiB and "
        f"the draft model org/drafter's 18.6 GiB (vllm_serve_speculative) plus 5%, less what of the model is already there)"
        for n in (0, 1)
    ]


def test_a_corrupt_draft_config_is_a_problem_naming_it() -> None:
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft({**DRAFT_CONFIG, "num_hidden_layers": "28"}))
    assert verdict.problems == [
        "vllm_serve_speculative: the draft model org/drafter's config.json is corrupt: num_hidden_layers is '28' (a string), not an integer"
    ]
    assert "the draft model org/drafter's weights and KV cache were not counted: its figures are corrupt" in verdict.warnings
    assert verdict.figures["weights_per_node_bytes"] == WEIGHTS // 2 and verdict.figures["draft_weights_per_node_bytes"] is None
    huge = plan_fit(shape_from_config(CONFIG, WEIGHTS), cluster(), draft(weights=10**400, snapshot_bytes=10**9))
    assert huge.problems == [
        "vllm_serve_speculative: the draft model org/drafter's weight bytes are an integer of 1329 bits, more than any model has "
        f"(at most {2**64 - 1}, 64 bits)"
    ]


def test_every_problem_at_once_with_a_draft_model() -> None:
    bad = cluster(tp=3, disk_free={"spark-0": GIB, "spark-1": GIB, "spark-2": GIB}, util=0.1)
    verdict = plan_fit(shape_from_config(CONFIG, WEIGHTS), bad, draft({**DRAFT_CONFIG, "num_key_value_heads": 4}))
    text = " | ".join(verdict.problems)
    assert "sparkops_tensor_parallel_size (3) must divide the model's 32 attention heads" in text
    assert "vllm_serve_speculative: the draft model org/drafter's 16 attention heads are not divisible by its tensor-parallel size 3" in text
    assert "plus the draft model org/drafter's" in text and "the draft model org/drafter's 3.7 GiB (vllm_serve_speculative)" in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tensor_parallel_size": 0}, "vllm_serve_speculative.draft_tensor_parallel_size must be a whole number of at least 1, not 0"),
        ({"tensor_parallel_size": True}, "vllm_serve_speculative.draft_tensor_parallel_size must be a whole number of at least 1, not True"),
        ({"snapshot_bytes": -1}, "the draft model's snapshot_bytes must be a whole number of bytes, not -1"),
        ({"snapshot_bytes": 2**64}, f"the draft model's snapshot_bytes must be a whole number of bytes, not {2**64}"),
    ],
)
def test_a_draft_split_no_cluster_can_have_is_refused_naming_its_variable(change: dict[str, t.Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        draft(**change)
