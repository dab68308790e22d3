"""The engine's own record of the requests it served (vLLM's /metrics on the head, read with prometheus_client from the
engine's venv there), and where a load generator's figures disagree with it: what the scenarios that run the real
engine check their benchmarks against (engine: mp, serve: Ray)."""

from __future__ import annotations

import json
import shlex
import shutil
import typing as t
from pathlib import Path

from .scenario import node, playbook

VENV = "/opt/sparkops/ray"  # vllm_serve_venv's default: the engine's own venv on every node
# One level of playbooks/benchmark.yml as the scenarios run it: short prompts and answers, a CPU engine's pace.
PROMPT_TOKENS = 32
OUTPUT_TOKENS = 16
REQUESTS = 16


def benchmark_level(address: str, api_key: str, output_dir: Path, concurrency: int, figures: Path, run_on: str | None = None) -> dict[str, t.Any]:
    """playbooks/benchmark.yml at one level (no warm-up) on the scenario's inventory, with no endpoint given: from the
    controller as the README runs it, or with ``run_on`` from that node; the report says it measured the head at
    ``address`` (the default for where the load ran: the head's management address, or its fabric address) from
    there. Its Markdown and plot are copied beside ``figures`` (named for it and the level)."""
    extra = {
        **({"benchmark_run_on": run_on} if run_on else {}),
        "benchmark_concurrency": [concurrency],
        "benchmark_prompt_tokens": PROMPT_TOKENS,
        "benchmark_output_tokens": OUTPUT_TOKENS,
        "benchmark_requests_per_level": REQUESTS,
        "benchmark_output_dir": str(output_dir),
        "benchmark_warmup": False,  # the engine's counters must see the measured requests only
    }
    run = playbook("playbooks/benchmark.yml", "-e", json.dumps(extra), env={"ANSIBLE_INTERNAL_POLL_INTERVAL": "0.1"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert api_key not in run.stdout + run.stderr
    report = json.loads((output_dir / "benchmark.json").read_text())
    header = report["header"]
    assert (header["client"], header["url"].rstrip("/")) == (run_on or "localhost", f"http://{address}:8000"), header
    for suffix in (".md", ".png"):  # beside the figures, for docs/ (the README shows the plot)
        shutil.copy(output_dir / f"benchmark{suffix}", figures.with_name(f"{figures.stem}-c{concurrency}{suffix}"))
    return dict(report["levels"][0])


# The engine's own records (vLLM 0.30: vllm/v1/metrics/loggers.py, the prometheus_client families of its /metrics;
# /metrics is not behind the API key, vllm/entrypoints/serve/middleware/authenticate.py GUARDED_PREFIX).
COUNTERS = {
    "requests": "vllm:request_success_total",
    "prompt_tokens": "vllm:prompt_tokens_total",
    "generation_tokens": "vllm:generation_tokens_total",
    "ttft_sum": "vllm:time_to_first_token_seconds_sum",
    "ttft_count": "vllm:time_to_first_token_seconds_count",
    "tpot_sum": "vllm:request_time_per_output_token_seconds_sum",
    "tpot_count": "vllm:request_time_per_output_token_seconds_count",
    "e2e_sum": "vllm:e2e_request_latency_seconds_sum",
    "e2e_count": "vllm:e2e_request_latency_seconds_count",
    # Speculative decoding (vLLM 0.32 vllm/v1/spec_decode/metrics.py:229-231); 0 when the engine does not speculate.
    "spec_drafts": "vllm:spec_decode_num_drafts_total",
    "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
}
READ_METRICS = f"""
import json, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen("http://127.0.0.1:8000/metrics", timeout=30).read().decode()
totals = {{}}
for family in text_string_to_metric_families(text):
    for sample in family.samples:
        totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
print(json.dumps({{key: totals.get(name, 0.0) for key, name in {COUNTERS!r}.items()}}))
"""
# How far a client's figure may be from the engine's record of the same requests: TTFT and TPOT as the client sees
# them include the way in and out (HTTP, the chat template, the stream's chunks) on a 2-core host that runs the
# engine too, never less than the engine's; throughput against the engine's own (its tokens over its requests'
# time, at `concurrency` in flight: the client's gaps between requests are not in it, so never more than it).
# SLACK_MS: the way in from the controller (serve's Ray benchmark runs there, through the management network) while
# the other lab's engine takes the same 2 cores: 35 ms over the engine's TTFT at 2 in flight in the fresh-clone run of
# 2026-12-07 (ours 147.6 ms, the engine's 112.4); 15 ms had been enough before.
TOLERANCE = 0.15
SLACK_MS = 40.0


def engine_records(head: str) -> dict[str, float]:
    """The engine's counters now, summed over their labels (prometheus_client from the engine's venv on ``head``)."""
    return dict(json.loads(node(head).check_output(f"{VENV}/bin/python -c {shlex.quote(READ_METRICS)}")))


def engine_view(before: dict[str, float], after: dict[str, float], concurrency: int) -> dict[str, float]:
    """What the engine recorded of the requests between two readings: counts, mean TTFT and TPOT (ms), throughput."""
    delta = {key: after[key] - before[key] for key in COUNTERS}
    busy = delta["e2e_sum"] / concurrency
    return {
        "completed": delta["requests"],
        "total_input_tokens": delta["prompt_tokens"],
        "total_output_tokens": delta["generation_tokens"],
        "mean_ttft_ms": 1000 * delta["ttft_sum"] / delta["ttft_count"] if delta["ttft_count"] else float("nan"),
        "mean_tpot_ms": 1000 * delta["tpot_sum"] / delta["tpot_count"] if delta["tpot_count"] else float("nan"),
        "output_throughput": delta["generation_tokens"] / busy if busy > 0 else float("nan"),
    }


def measured(head: str, run: t.Callable[[], dict[str, t.Any]], concurrency: int) -> tuple[dict[str, t.Any], dict[str, float]]:
    """A load generator's figures, and the engine on ``head``'s record of the same requests (nothing else runs
    meanwhile)."""
    before = engine_records(head)
    figures = run()
    return figures, engine_view(before, engine_records(head), concurrency)


def against_engine(who: str, client: dict[str, t.Any], engine: dict[str, float]) -> list[str]:
    """Where a client's figures disagree with the engine's record of its own requests."""
    found = []
    for key in ("completed", "total_input_tokens", "total_output_tokens"):
        if client[key] != engine[key]:
            found.append(f"{who}: {key} {client[key]}, the engine counted {engine[key]:g}")
    for key in ("mean_ttft_ms", "mean_tpot_ms"):  # the client's way in and out is on top of the engine's
        if not engine[key] * (1 - TOLERANCE) <= client[key] <= engine[key] * (1 + TOLERANCE) + SLACK_MS:
            found.append(f"{who}: {key} {client[key]:.1f}, the engine's {engine[key]:.1f}")
    if not engine["output_throughput"] * (1 - TOLERANCE) <= client["output_throughput"] <= engine["output_throughput"] * (1 + TOLERANCE):
        found.append(f"{who}: output_throughput {client['output_throughput']:.1f}, the engine's {engine['output_throughput']:.1f}")
    return found
