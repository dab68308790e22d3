"""playbooks/benchmark.yml against the real engine, beside vLLM's own `vllm bench serve` on the same endpoint in the
same run: the same concurrency, prompt and output lengths, both load generators on the head. Output throughput and
mean TTFT agree within 15 %. The figures go to tests/output/ci/engine-benchmark.json, with our report's Markdown and plot beside it."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import typing as t
from pathlib import Path

import testinfra

HEAD = os.environ["ENGINE_LAB_HEAD"]
HEAD_IP = os.environ["ENGINE_LAB_HEAD_FABRIC_IP"]
PROJECT = os.environ["ENGINE_LAB_PROJECT"]
API_KEY = os.environ["ENGINE_LAB_API_KEY"]
MODEL = os.environ["ENGINE_LAB_MODEL"]
VENV = "/opt/sparkops/ray"  # vllm_serve_venv's default: the engine's own venv on every node
CACHE = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe/snapshots"
FIGURES = Path(os.environ.get("SPARKOPS_JUNIT_DIR", "/tmp")) / "engine-benchmark.json"
LEVELS = (1, 2)
PROMPT_TOKENS = 32
OUTPUT_TOKENS = 16
REQUESTS = 16
ATTEMPTS = 3  # runs per level by each load generator at most, while their medians disagree


def node(name: str) -> t.Any:
    return testinfra.get_host(f"podman://{name}")


def ours(output_dir: Path, concurrency: int) -> dict[str, t.Any]:
    extra = {
        "benchmark_run_on": HEAD,
        "benchmark_url": f"http://{HEAD_IP}:8000",
        "benchmark_concurrency": [concurrency],
        "benchmark_prompt_tokens": PROMPT_TOKENS,
        "benchmark_output_tokens": OUTPUT_TOKENS,
        "benchmark_requests_per_level": REQUESTS,
        "benchmark_output_dir": str(output_dir),
    }
    run = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], f"{PROJECT}/playbooks/benchmark.yml", "-e", json.dumps(extra)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": f"{PROJECT}/.collections", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.1"},
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert API_KEY not in run.stdout + run.stderr
    report = json.loads((output_dir / "benchmark.json").read_text())
    for suffix in (".md", ".png"):  # beside the figures, for docs/ (the README shows the plot)
        shutil.copy(output_dir / f"benchmark{suffix}", FIGURES.with_name(f"{FIGURES.stem}-c{concurrency}{suffix}"))
    return dict(report["levels"][0])


def vllm_bench(concurrency: int, requests: int = REQUESTS) -> dict[str, t.Any]:
    """`vllm bench serve` (vllm/benchmarks/serve.py, 0.30.0) on the head; the API key from the environment, as it reads it."""
    snapshot = node(HEAD).check_output(f"ls -d {CACHE}/* | head -1")
    argv = [
        "podman", "exec", "-e", "OPENAI_API_KEY", HEAD,
        f"{VENV}/bin/vllm", "bench", "serve", "--backend", "openai-chat", "--base-url", f"http://{HEAD_IP}:8000",
        "--endpoint", "/v1/chat/completions", "--model", snapshot, "--served-model-name", MODEL, "--dataset-name", "random",
        "--input-len", str(PROMPT_TOKENS), "--output-len", str(OUTPUT_TOKENS), "--num-prompts", str(requests),
        "--max-concurrency", str(concurrency), "--ignore-eos", "--disable-tqdm", "--num-warmups", "1",
        "--save-result", "--result-dir", "/tmp/vllm-bench", "--result-filename", f"c{concurrency}.json",
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, "OPENAI_API_KEY": API_KEY}, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return dict(json.loads(node(HEAD).check_output(f"cat /tmp/vllm-bench/c{concurrency}.json")))


KEYS = ("output_throughput", "median_ttft_ms", "mean_ttft_ms", "mean_tpot_ms", "total_input_tokens", "completed")


def disagreements(mine: dict[str, t.Any], theirs: dict[str, t.Any]) -> list[str]:
    found = []
    if mine["completed"] != REQUESTS or theirs["completed"] != REQUESTS:
        found.append(f"completed {mine['completed']} and {theirs['completed']} of {REQUESTS}")
    for key in ("output_throughput", "median_ttft_ms"):
        if abs(mine[key] - theirs[key]) > 0.15 * theirs[key]:
            found.append(f"{key}: ours {mine[key]:.1f}, vllm bench serve's {theirs[key]:.1f}")
    return found


def median_of(runs: list[dict[str, t.Any]]) -> dict[str, t.Any]:
    """Each figure's median over the runs of one load generator (completed: the fewest any run completed)."""
    merged = {key: statistics.median(run[key] for run in runs) for key in ("output_throughput", "median_ttft_ms")}
    return {**merged, "completed": min(run["completed"] for run in runs)}


def test_the_benchmark_agrees_with_vllm_bench_serve(tmp_path: Path) -> None:
    """Each level measured by both, one right after the other (the lab's 2-core host drifts from one minute to the
    next), TTFT compared by its median. On this host a run of 16 requests moves by up to 20 % from the same client's
    previous one (at two in flight a round's two requests either share the engine's step or queue one behind the
    other), so a level that disagrees is measured again by both, up to three times in all, and the medians of every
    run so far must agree (every run is recorded)."""
    # Not counted: the engine's first batches of two sequences are slow (kernels for a new shape); whoever ran first
    # would pay for them.
    vllm_bench(max(LEVELS), requests=4)
    attempts: dict[str, list[dict[str, t.Any]]] = {}
    problems: dict[int, list[str]] = {}
    for level in LEVELS:
        mine: list[dict[str, t.Any]] = []
        theirs: list[dict[str, t.Any]] = []
        for attempt in range(ATTEMPTS):
            mine.append(ours(tmp_path / f"c{level}-{attempt}", level))
            theirs.append(vllm_bench(level))
            attempts.setdefault(str(level), []).append({"ours": {k: mine[-1][k] for k in KEYS}, "vllm_bench_serve": {k: theirs[-1][k] for k in KEYS}})
            problems[level] = disagreements(median_of(mine), median_of(theirs))
            if not problems[level]:
                break
    figures = {"prompt_tokens": PROMPT_TOKENS, "output_tokens": OUTPUT_TOKENS, "requests": REQUESTS, "levels": attempts}
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")
    assert not any(problems.values()), (problems, attempts)
