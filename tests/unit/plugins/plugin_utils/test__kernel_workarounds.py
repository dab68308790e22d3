# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GB10 workaround table (plugin_utils/_kernel_workarounds.py): which rows the facts call for, and what the role
applies of them."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.plugin_utils._kernel_workarounds import (
    BLOCK_FP8,
    NEWEST_CHECKED,
    ROW_NAMES,
    ROWS,
    WorkaroundInputError,
    apply,
    choose,
    parse_release,
    quantization,
)

REPO = Path(__file__).resolve().parents[4]
# Qwen/Qwen3.5-122B-A10B-FP8's kind of config: FP8 with 128 x 128 weight blocks.
BLOCK_FP8_CONFIG: dict[str, t.Any] = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
}
NVFP4_CONFIG: dict[str, t.Any] = {"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}
GB10 = {"spark-head": ["12.1"], "spark-worker1": ["12.1"]}
H200 = {"gpu-host": ["9.0"]}
MODEL = "Qwen/Qwen3.5-122B-A10B-FP8"


def names(choice: t.Any) -> list[str]:
    return [row.name for row in choice.rows]


def test_block_fp8_on_gb10_with_vllm_032_gets_both_rows() -> None:
    choice = choose(MODEL, BLOCK_FP8_CONFIG, GB10, "0.32.0")
    assert names(choice) == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    assert choice.family_hosts == ["spark-head", "spark-worker1"]
    assert choice.warnings == []
    document = choice.as_dict()
    assert document["quantization"] == {"quant_method": "fp8", "kind": BLOCK_FP8, "config_key": "quantization_config"}
    assert [row["env"] for row in document["rows"]] == [{"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel"}, {"VLLM_USE_DEEP_GEMM": "0"}]
    assert all(row["sources"] and row["why"] and row["failure"] and row["checked"] for row in document["rows"])


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.30.0+cpu"])
def test_deep_gemm_row_only_from_the_release_whose_wheel_carries_it(version: str) -> None:
    # 0.30.0 and 0.31.0 have no vllm/third_party/deep_gemm in their wheels: PyPI's builds never run DeepGEMM.
    assert names(choose(MODEL, BLOCK_FP8_CONFIG, GB10, version)) == ["cutlass_fp8_block_scaled"]


def test_other_gpus_get_nothing() -> None:
    choice = choose(MODEL, BLOCK_FP8_CONFIG, H200, "0.32.0")
    assert (choice.rows, choice.warnings, choice.family_hosts) == ([], [], [])


def test_one_gb10_among_other_gpus_is_enough() -> None:
    choice = choose(MODEL, BLOCK_FP8_CONFIG, {"a": ["9.0"], "b": ["12.1"]}, "0.32.0")
    assert choice.family_hosts == ["b"]
    assert names(choice) == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]


def test_a_model_that_is_not_quantized_gets_nothing_and_no_warning() -> None:
    choice = choose("acme/tiny", {"architectures": ["X"]}, {"h": []}, "0.32.0")
    assert (choice.rows, choice.warnings) == ([], [])
    assert choice.as_dict()["quantization"]["quant_method"] is None


def test_an_unknown_quantization_on_gb10_is_a_warning_naming_model_method_and_capability() -> None:
    choice = choose("nvidia/Some-NVFP4", NVFP4_CONFIG, GB10, "0.32.0")
    assert choice.rows == []
    (warning,) = choice.warnings
    assert "nvidia/Some-NVFP4" in warning and "quant_method modelopt" in warning and "compute capability 12.1" in warning


def test_fp8_without_blocks_is_not_block_scaled() -> None:
    config = {"quantization_config": {"quant_method": "fp8", "activation_scheme": "static"}}
    choice = choose(MODEL, config, GB10, "0.32.0")
    assert choice.quantization.kind is None and choice.rows == []
    assert "quant_method fp8" in choice.warnings[0]


@pytest.mark.parametrize("block", [[128], [128, 128, 1], ["128", "128"], [True, 128], "128x128"])
def test_a_weight_block_size_vllm_would_refuse_is_not_taken_as_blocks(block: t.Any) -> None:
    config = {"quantization_config": {"quant_method": "fp8", "weight_block_size": block}}
    assert quantization(config).kind is None


def test_quantization_is_read_where_vllm_reads_it() -> None:
    # vLLM 0.32.0 weight_utils.py:235-242: quantization_config, then text_config's, then compression_config.
    nested = {"text_config": {"quantization_config": {"quant_method": "FP8", "weight_block_size": [128, 128]}}}
    assert quantization(nested).as_dict() == {"quant_method": "fp8", "kind": BLOCK_FP8, "config_key": "text_config.quantization_config"}
    assert quantization({"compression_config": {"quant_method": "compressed-tensors"}}).where == "compression_config"
    top_wins = {**nested, "quantization_config": {"quant_method": "awq"}}
    assert quantization(top_wins).method == "awq"
    assert quantization({"quantization_config": {}}).method == "unknown"


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ([], "must be a JSON object, got list"),
        ({"quantization_config": "fp8"}, "quantization_config that is not a JSON object"),
        ({"text_config": {"quantization_config": 3}}, "text_config.quantization_config that is not a JSON object"),
    ],
)
def test_a_malformed_config_is_refused_naming_the_key(config: t.Any, words: str) -> None:
    with pytest.raises(WorkaroundInputError, match=words):
        choose(MODEL, config, GB10, "0.32.0")


@pytest.mark.parametrize(
    ("caps", "words"),
    [
        (["12.1"], "must map each host to a list"),
        ({"h": "12.1"}, "host h: the compute capabilities must be a list"),
        ({"h": ["sm_121"]}, "host h: 'sm_121' is not a compute capability"),
    ],
)
def test_malformed_capabilities_are_refused_naming_the_host(caps: t.Any, words: str) -> None:
    with pytest.raises(WorkaroundInputError, match=words):
        choose(MODEL, BLOCK_FP8_CONFIG, caps, "0.32.0")


def test_a_host_whose_capability_was_not_read_is_warned_about() -> None:
    choice = choose(MODEL, BLOCK_FP8_CONFIG, {"spark-head": ["12.1"], "spark-worker1": None}, "0.32.0")
    assert choice.unread_hosts == ["spark-worker1"]
    assert names(choice) == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    assert any("spark-worker1" in warning and "could not be read" in warning for warning in choice.warnings)


@pytest.mark.parametrize("version", ["0.35.0", None, "", "latest"])
def test_a_release_the_table_was_not_checked_against_takes_the_newest_rows_with_a_warning(version: str | None) -> None:
    choice = choose(MODEL, BLOCK_FP8_CONFIG, GB10, version)
    assert names(choice) == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    (warning,) = choice.warnings
    assert "checked up to 0.34.0" in warning


def test_parse_release() -> None:
    assert parse_release("0.32.0+cpu") == (0, 32, 0)
    assert parse_release("v0.31") == (0, 31, 0)
    assert parse_release("nightly") is None
    assert parse_release(None) is None
    assert NEWEST_CHECKED == (0, 34, 0)


def apply_to(choice_doc: t.Any, enabled: bool = True, skip: t.Sequence[str] = (), extra_env: t.Mapping[str, t.Any] | None = None) -> dict[str, t.Any]:
    return apply(choice_doc, enabled, list(skip), extra_env or {}).as_dict()


BOTH = choose(MODEL, BLOCK_FP8_CONFIG, GB10, "0.32.0").as_dict()


def test_apply_sets_every_row() -> None:
    result = apply_to(BOTH)
    assert result["env"] == {"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel", "VLLM_USE_DEEP_GEMM": "0"}
    assert [row["name"] for row in result["applied"]] == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    assert result["skipped"] == [] and result["note"] == "2 applied, 0 skipped"


def test_apply_off_skips_every_row_saying_why() -> None:
    result = apply_to(BOTH, enabled=False)
    assert result["env"] == {} and result["applied"] == []
    assert {row["because"] for row in result["skipped"]} == {"vllm_serve_kernel_workarounds is false"}


def test_apply_skips_a_named_row() -> None:
    result = apply_to(BOTH, skip=["deep_gemm_fp8"])
    assert result["env"] == {"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel"}
    assert [(row["name"], row["because"]) for row in result["skipped"]] == [("deep_gemm_fp8", "named in vllm_serve_kernel_workarounds_skip")]


def test_the_inventorys_environment_wins_over_a_row() -> None:
    result = apply_to(BOTH, extra_env={"VLLM_USE_DEEP_GEMM": "1"})
    assert "VLLM_USE_DEEP_GEMM" not in result["env"]
    assert result["skipped"][0]["because"] == "vllm_serve_extra_env sets VLLM_USE_DEEP_GEMM"


def test_two_rows_disabling_kernels_are_joined_as_vllm_splits_them() -> None:
    doubled = {**BOTH, "rows": [BOTH["rows"][0], {**BOTH["rows"][0], "name": "other", "env": {"VLLM_DISABLED_KERNELS": "OtherKernel"}}]}
    assert apply_to(doubled)["env"] == {"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel,OtherKernel"}


def test_an_unknown_row_name_is_refused_naming_the_variable_and_the_rows() -> None:
    with pytest.raises(WorkaroundInputError, match=r"vllm_serve_kernel_workarounds_skip names cutlass, not a row .*cutlass_fp8_block_scaled, deep_gemm_fp8"):
        apply_to(BOTH, skip=["cutlass"])


@pytest.mark.parametrize(
    ("choice", "note"),
    [
        (None, "not chosen: the preflight did not read the model's config.json"),
        (choose("m", {}, GB10, "0.32.0").as_dict(), "none needed: the model is not quantized"),
        (choose("m", BLOCK_FP8_CONFIG, H200, "0.32.0").as_dict(), "none needed: no node has a GPU of compute capability 12.x"),
        (choose("m", NVFP4_CONFIG, GB10, "0.32.0").as_dict(), "none known for quant_method modelopt"),
    ],
)
def test_the_note_says_why_nothing_was_applied(choice: t.Any, note: str) -> None:
    result = apply_to(choice)
    assert result["env"] == {} and result["applied"] == []
    assert result["note"].startswith(note)


def test_the_row_names_are_the_ones_the_role_documents() -> None:
    specs = yaml.safe_load((REPO / "roles" / "vllm_serve" / "meta" / "argument_specs.yml").read_text())
    description = " ".join(specs["argument_specs"]["main"]["options"]["vllm_serve_kernel_workarounds_skip"]["description"])
    assert tuple(row.name for row in ROWS) == ROW_NAMES
    assert all(f"V({name})" in description for name in ROW_NAMES)
