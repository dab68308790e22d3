# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _benchmark_report and the benchmark_report module that writes its files."""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import typing as t
import zlib
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark import RequestRecord, level_metrics
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_report import (
    Baseline,
    Deployment,
    ReportError,
    build_document,
    check_name,
    fmt,
    render_files,
    render_markdown,
)
from ansible_collections.sparkops.inference.plugins.modules import benchmark_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def ok(ttft: float, latency: float, tokens: int = 128) -> RequestRecord:
    return RequestRecord(
        success=True, ttft=ttft, latency=latency, output_tokens=tokens, prompt_tokens=268, itl=[(latency - ttft) / (tokens - 1)] * (tokens - 1)
    )


def sweep() -> dict[str, t.Any]:
    """An openai_benchmark result as Ansible registers it (with the keys the report leaves out)."""
    levels = [
        level_metrics([ok(0.25, 5.0)] * 4, 20.0, 1),
        level_metrics([ok(0.30, 5.5)] * 7 + [RequestRecord(success=False, error_kind="http_status", error="HTTP 500: boom")], 22.0, 4),
    ]
    return {
        "changed": False,
        "invocation": {"module_args": {"api_key": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}},
        "measured": True,
        "url": "http://192.168.100.10:8000",
        "model": "qwen3.5-122b",
        "settings": {
            "concurrency": [1, 4],
            "requests_per_level": None,
            "prompt_tokens": 256,
            "output_tokens": 128,
            "warmup": True,
            "ignore_eos": True,
            "timeout": 300.0,
        },
        "started": "2026-12-01T18:00:00Z",
        "finished": "2026-12-01T18:00:45Z",
        "server_version": "0.30.0",
        "warmup": {"success": True, "ttft_ms": 900.0, "e2el_ms": 6000.0, "output_tokens": 128, "prompt_tokens": 268, "error": None},
        "levels": levels,
        "stopped": None,
    }


DEPLOYMENT = Deployment(
    model_repo="Qwen/Qwen3.5-122B-A10B-FP8",
    model_revision="main",
    model_commit=COMMIT,
    tensor_parallel_size=2,
    pipeline_parallel_size=1,
    versions={"vLLM": "0.30.0", "Ray": "2.60.0"},
    client="localhost",
)


def png_text(data: bytes) -> dict[str, str]:
    """The tEXt chunks of a PNG (checks the chunk structure and CRCs on the way)."""
    assert data.startswith(PNG_SIGNATURE)
    offset, texts, kinds = len(PNG_SIGNATURE), {}, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + body) == crc
        kinds.append(kind)
        if kind == b"tEXt":
            key, _nul, value = body.partition(b"\0")
            texts[key.decode()] = value.decode("latin-1")
        offset += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    return texts


# ---------------------------------------------------------------------------------------------------------------
# The document and the Markdown


def test_document_joins_the_sweep_and_the_deployment() -> None:
    document = build_document({**sweep(), "url": "http://user:secret@192.168.100.10:8000"}, DEPLOYMENT)
    assert document["schema_version"] == 1 and document["generator"] == "sparkops.inference.benchmark_report"
    assert "vllm/benchmarks/serve.py" in document["definitions"]
    header = document["header"]
    assert header == {
        "model": "qwen3.5-122b",
        "model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
        "model_revision": "main",
        "model_commit": COMMIT,
        "tensor_parallel_size": 2,
        "pipeline_parallel_size": 1,
        "versions": {"vLLM": "0.30.0", "Ray": "2.60.0"},
        "server_version": "0.30.0",
        "url": "http://192.168.100.10:8000",
        "client": "localhost",
        "started": "2026-12-01T18:00:00Z",
        "finished": "2026-12-01T18:00:45Z",
        "concurrency": [1, 4],
        "requests_per_level": None,
        "prompt_tokens": 256,
        "output_tokens": 128,
        "ignore_eos": True,
        "warmup": True,
        "timeout": 300.0,
    }
    assert [level["max_concurrency"] for level in document["levels"]] == [1, 4]
    assert "invocation" not in json.dumps(document) and "secret" not in json.dumps(document)


def test_the_servers_version_stands_in_for_a_missing_vllm_version() -> None:
    document = build_document(sweep(), Deployment(versions={"Ray": "2.60.0", "empty": ""}))
    assert document["header"]["versions"] == {"vLLM": "0.30.0", "Ray": "2.60.0"}


@pytest.mark.parametrize(
    "change,words",
    [
        ({"levels": []}, "benchmark has no levels"),
        ({"levels": [{"max_concurrency": 1}]}, "benchmark.levels[0] lacks num_prompts, completed, failed, output_throughput"),
        ({"levels": ["x"]}, "benchmark.levels[0] is not a dictionary"),
        ({"model": None}, "benchmark.model is missing"),
    ],
)
def test_a_result_that_is_not_a_sweep_is_refused(change: dict[str, t.Any], words: str) -> None:
    with pytest.raises(ReportError) as caught:
        build_document({**sweep(), **change}, DEPLOYMENT)
    assert words in str(caught.value)


def test_markdown_has_the_header_a_row_a_level_the_plot_and_the_failures() -> None:
    text = render_markdown(build_document(sweep(), DEPLOYMENT), "bench.png")
    lines = text.splitlines()
    assert lines[0] == "# Benchmark: qwen3.5-122b"
    assert f"| Model | `qwen3.5-122b`, `Qwen/Qwen3.5-122B-A10B-FP8` at `main`, commit `{COMMIT}` |" in lines
    assert "| Parallelism | tensor parallel 2, pipeline parallel 1 |" in lines
    assert "| Versions | vLLM 0.30.0, Ray 2.60.0 |" in lines
    assert "| Endpoint | http://192.168.100.10:8000 |" in lines
    assert "| Load generator | localhost |" in lines
    assert "| Date (UTC) | 2026-12-01T18:00:00Z to 2026-12-01T18:00:45Z |" in lines
    requests = next(line for line in lines if line.startswith("| Requests |"))
    assert "prompt about 256 tokens (the server counted 268 on average" in requests and "128 output tokens (ignore_eos)" in requests
    assert "one warm-up request first, not counted" in requests
    # throughput rows: 4 x 128 tokens in 20 s; 7 x 128 in 22 s; per request 1 / TPOT
    assert "| 1 | 4 | 0 | 20.00 | 25.6 | 26.7 | 0.200 | 128.0 |" in lines
    assert "| 4 | 8 | 1 | 22.00 | 40.7 | 24.4 | 0.318 | 128.0 |" in lines
    assert "| 1 | 250.0 | 250.0 | 250.0 | 37.4 | 37.4 | 37.4 | 37.4 | 5000.0 |" in lines
    assert "![Output tokens per second and time to first token against concurrency](bench.png)" in lines
    assert "- Concurrency 4: 1 of 8 failed (http_status 1): HTTP 500: boom" in lines
    assert "## Definitions" in lines


def test_markdown_shows_speculative_decoding_only_where_the_engine_speculated() -> None:
    plain = render_markdown(build_document(sweep(), DEPLOYMENT), None)
    assert "## Speculative decoding" not in plain and "acceptance rate" not in plain
    result = sweep()
    result["levels"][0]["speculative"] = {"drafts": 4, "draft_tokens": 12, "accepted_tokens": 6, "acceptance_rate": 0.5, "mean_acceptance_length": 2.5}
    result["levels"][1]["speculative"] = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0, "acceptance_rate": None, "mean_acceptance_length": None}
    lines = render_markdown(build_document(result, DEPLOYMENT), None).splitlines()
    assert "## Speculative decoding" in lines
    assert "| 1 | 4 | 12 | 6 | 50.0 % | 2.50 |" in lines and "| 4 | 0 | 0 | 0 | n/a | n/a |" in lines
    assert any("acceptance rate = accepted / draft" in line for line in lines)


def test_markdown_without_plot_or_commit() -> None:
    text = render_markdown(build_document(sweep(), Deployment()), None)
    assert ".png" not in text
    assert "| Model | `qwen3.5-122b`, commit unknown |" in text
    assert "| Parallelism | tensor parallel n/a, pipeline parallel n/a |" in text


@pytest.mark.parametrize("value,expected", [(None, "n/a"), (3, "3"), (2.345, "2.3"), (True, "True"), (float("nan"), "n/a")])
def test_fmt(value: object, expected: str) -> None:
    assert fmt(value) == expected


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", "", "-x"])
def test_names_that_are_not_a_base_name_are_refused(name: str) -> None:
    with pytest.raises(ReportError, match="must be a file base name"):
        check_name(name)


def test_the_png_is_matplotlibs_and_the_same_document_gives_the_same_bytes() -> None:
    document = build_document(sweep(), DEPLOYMENT)
    files = render_files(document, "bench", plot=True)
    assert sorted(files) == ["json", "md", "png"]
    assert png_text(files["png"])["Software"].startswith("Matplotlib version")
    assert render_files(document, "bench", plot=True) == files
    assert json.loads(files["json"]) == document


# ---------------------------------------------------------------------------------------------------------------
# The module


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> dict[str, t.Any]:
    with patch_module_args(args), pytest.raises(SystemExit):
        benchmark_report.main()
    return t.cast(dict[str, t.Any], json.loads(capsys.readouterr().out))


def module_args(dest: Path, **kwargs: t.Any) -> dict[str, t.Any]:
    args: dict[str, t.Any] = {
        "dest": str(dest),
        "name": "bench",
        "benchmark": sweep(),
        "model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
        "model_revision": "main",
        "model_commit": COMMIT,
        "tensor_parallel_size": 2,
        "pipeline_parallel_size": 1,
        "versions": {"vLLM": "0.30.0", "Ray": "2.60.0"},
        "client": "localhost",
    }
    args.update(kwargs)
    return args


def test_module_writes_the_three_files_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "deep" / "benchmarks"
    result = run_module(module_args(dest), capsys)
    assert not result.get("failed"), result["msg"]
    assert result["changed"] is True
    assert result["files"] == {suffix: str(dest / f"bench.{suffix}") for suffix in ("json", "png", "md")}
    markdown = (dest / "bench.md").read_text(encoding="utf-8")
    assert markdown == result["markdown"] and f"commit `{COMMIT}`" in markdown and "(bench.png)" in markdown
    assert json.loads((dest / "bench.json").read_text(encoding="utf-8")) == result["document"]
    assert png_text((dest / "bench.png").read_bytes())["Software"].startswith("Matplotlib version")
    assert oct(os.stat(dest / "bench.md").st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(dest)) == ["bench.json", "bench.md", "bench.png"]  # no temporary file left
    again = run_module(module_args(dest), capsys)
    assert again["changed"] is False and again["changed_files"] == []


def test_check_mode_writes_nothing_and_says_what_would_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "benchmarks"
    result = run_module({**module_args(dest), "_ansible_check_mode": True}, capsys)
    assert result["changed"] is True and len(result["changed_files"]) == 3 and result["msg"].startswith("would write ")
    assert not dest.exists()
    run_module(module_args(dest), capsys)
    result = run_module({**module_args(dest, client="spark-head"), "_ansible_check_mode": True}, capsys)
    assert result["changed_files"] == [str(dest / "bench.json"), str(dest / "bench.md")]  # the header, not the plot
    assert "spark-head" not in (dest / "bench.md").read_text(encoding="utf-8")


def test_missing_matplotlib_fails_naming_the_package(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # import matplotlib... raises ImportError, loaded or not
    result = run_module(module_args(tmp_path), capsys)
    assert result["failed"] is True
    assert "install the package 'matplotlib'" in result["msg"] and "plot=false" in result["msg"]
    assert os.listdir(tmp_path) == []
    result = run_module(module_args(tmp_path, plot=False), capsys)
    assert not result.get("failed") and sorted(result["files"]) == ["json", "md"]
    assert ".png" not in (tmp_path / "bench.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "changes,words",
    [
        ({"name": "../evil"}, "name '../evil' must be a file base name"),
        ({"benchmark": {"measured": False, "levels": []}}, "benchmark has no levels"),
        ({"tensor_parallel_size": 0}, "tensor_parallel_size must be at least 1"),
    ],
)
def test_module_refuses_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, t.Any], words: str) -> None:
    result = run_module(module_args(tmp_path, **changes), capsys)
    assert result["failed"] is True and words in result["msg"]
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------------------------
# benchmark_compare: a baseline sweep of the same load beside the reported one


def slower() -> dict[str, t.Any]:
    """The same load as sweep(), every request twice as slow once its first token is out (speculation off)."""
    levels = [level_metrics([ok(0.25, 9.75)] * 4, 40.0, 1), level_metrics([ok(0.30, 10.7)] * 8, 44.0, 4)]
    return {**sweep(), "levels": levels, "started": "2026-12-01T17:58:00Z", "finished": "2026-12-01T17:59:30Z"}


def test_a_baseline_is_compared_level_by_level_with_the_gain_as_a_ratio() -> None:
    document = build_document(sweep(), DEPLOYMENT, Baseline(slower(), "speculative decoding on", "speculative decoding off"))
    comparison = document["comparison"]
    assert comparison["label"] == "speculative decoding on" and comparison["baseline_label"] == "speculative decoding off"
    assert comparison["baseline"]["levels"] == slower()["levels"] and comparison["baseline"]["started"] == "2026-12-01T17:58:00Z"
    first = comparison["levels"][0]
    on, off = sweep()["levels"][0], slower()["levels"][0]
    assert first["max_concurrency"] == 1
    ratio = round(on["output_throughput"] / off["output_throughput"], 4)
    assert first["output_throughput"] == {"baseline": off["output_throughput"], "reported": on["output_throughput"], "ratio": ratio}
    assert first["output_throughput"]["ratio"] == pytest.approx(2.0)  # 512 tokens in 20 s against 40 s
    assert first["mean_tpot_ms"]["ratio"] == pytest.approx(on["mean_tpot_ms"] / off["mean_tpot_ms"], abs=1e-4) and first["mean_tpot_ms"]["ratio"] < 1
    markdown = render_markdown(document, "bench.png")
    section = markdown.split("## Compared with speculative decoding off")[1].split("## ")[0]
    assert "Off: speculative decoding off. On: speculative decoding on." in section
    row = [line for line in section.splitlines() if line.startswith("| 1 |")][0]
    assert row.split(" | ")[3] == "2.00", row  # output tok/s: off, on, on / off
    assert "## Compared with speculative" not in render_markdown(build_document(sweep(), DEPLOYMENT), "bench.png")


def test_a_level_in_one_sweep_only_is_shown_as_missing_in_the_other() -> None:
    settings = {key: value for key, value in sweep()["settings"].items() if key != "concurrency"}
    baseline = {**slower(), "levels": slower()["levels"][:1], "settings": settings}
    rows = build_document(sweep(), DEPLOYMENT, Baseline(baseline, "on", "off"))["comparison"]["levels"]
    assert [row["max_concurrency"] for row in rows] == [1, 4]
    assert rows[1]["output_throughput"]["baseline"] is None and rows[1]["output_throughput"]["ratio"] is None
    assert rows[1]["output_throughput"]["reported"] == sweep()["levels"][1]["output_throughput"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"levels": []}, "baseline has no levels"),
        ({"settings": {**sweep()["settings"], "output_tokens": 64}}, "baseline ran another load (output_tokens 64 against 128)"),
    ],
)
def test_a_baseline_of_another_load_is_refused(change: dict[str, t.Any], words: str) -> None:
    with pytest.raises(ReportError, match=re.escape(words)):
        build_document(sweep(), DEPLOYMENT, Baseline({**slower(), **change}, "on", "off"))


def test_the_module_writes_the_comparison_and_its_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = run_module(module_args(tmp_path / "plain"), capsys)
    result = run_module(module_args(tmp_path / "compared", baseline=slower(), label="on", baseline_label="off"), capsys)
    assert not result.get("failed"), result["msg"]
    assert result["document"]["comparison"]["baseline_label"] == "off" and "## Compared with off" in result["markdown"]
    assert (tmp_path / "compared" / "bench.png").read_bytes() != (tmp_path / "plain" / "bench.png").read_bytes()
    assert "comparison" not in plain["document"]
    refused = run_module(module_args(tmp_path / "refused", baseline={"levels": []}), capsys)
    assert refused["failed"] is True and "baseline has no levels" in refused["msg"]


def test_the_report_states_its_profile_as_llama_benchy_names_it() -> None:
    document = build_document(sweep(), DEPLOYMENT)
    profile = document["llama_benchy"]
    assert (profile["name"], profile["pp"], profile["tg"], profile["tool"]) == ("pp268 tg128", 268, 128, "llama-benchy 0.4.0")
    first = profile["levels"][0]
    assert first["exact"] is True and first["tg_tps"] == pytest.approx(1000 / sweep()["levels"][0]["median_tpot_ms"], abs=0.01)
    markdown = render_markdown(document, None)
    assert "Profile: pp268 tg128, as `llama-benchy --pp 268 --tg 128 --depth 0 --concurrency 1 4 --exact-tg --no-cache`" in markdown
    empty = build_document({**sweep(), "levels": [level_metrics([RequestRecord(success=False, error_kind="timeout", error="t")], 5.0, 1)]}, DEPLOYMENT)
    assert empty["llama_benchy"] is None and "## Compared with llama-benchy" not in render_markdown(empty, None)
