"""Speculative decoding on the real engine (vLLM 0.32.0's CPU build, mp, TP=2): vllm_serve_speculative set to n-gram
prompt lookup (the method the CPU build runs with no draft model) serves on both ranks, a rerun changes nothing, and
playbooks/benchmark.yml reports what speculation did from the engine's own counters, the same numbers the engine's
/metrics holds as prometheus_client reads it; its comparison (benchmark_compare=speculative) restarts the engine
without speculation, sweeps, restarts it as set, sweeps again and reports both with the gain. Then a draft model
(draft_model: a second, smaller random-weight model of the same vocabulary, seeded on the head only as the model
is): site.yml distributes it to the worker, the gate checks it, the engine speculates with it on both ranks.
Settings the pinned vLLM refuses (a method it does not know, no speculative tokens) stop the role before the unit
changes, with vLLM's own message and the variable. At the end the engine serves without speculation again, as the
next tests expect. The figures go to tests/output/ci/engine-speculative.json."""

from __future__ import annotations

import json
import os
import sys
import typing as t
from pathlib import Path

import pytest
from engine_bench import API_KEY, FIGURES, HEAD_IP, LEVELS, OUTPUT_TOKENS, PROMPT_TOKENS, REQUESTS
from engine_serving import HEAD, UNIT, WORKER, main_pid, serves, wait_serving

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab import engine_record, hf_model  # noqa: E402
from sparklab.scenario import node, playbook, recap  # noqa: E402

# prompt_lookup_min 1: the last generated token found earlier in the sequence is enough to draft (the benchmark's
# prompts are random words: longer matches are rare).
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
# Greedy by default (requests that set no temperature: the benchmark's, the role's readiness check, the liveness
# probe). Found here: with sampling (the lab model's generation_config: temperature 0.7, top_k 20, top_p 0.8), vLLM
# 0.32.0's CPU build dies in the rejection sampler on the first drafted step ("index 4096 is out of bounds for
# dimension 1 with size 4096", vllm/v1/sample/ops/topk_topp_sampler.py:495-500, from rejection_sampler.py:182 and
# apply_sampling_constraints, whose per-token top-k comes from expand_batch_to_tokens, a Triton kernel dispatcher,
# rejection_sampler.py:581-619, 990-1000, on a host whose Triton has no CPU backend); all-greedy batches skip that
# path (rejection_sampler.py:546-547). The scenario's own extra arguments (molecule.yml) are kept.
GREEDY = ["--enforce-eager", "--kv-cache-memory-bytes", "64M", "--override-generation-config", '{"temperature": 0.0}']
SPECULATIVE_FIGURES = FIGURES.with_name("engine-speculative.json")
# The draft model: 8 MB (hidden 128, head_dim 32; vLLM 0.32.0's CPU attention refuses head_dim 16: "Unsupported CPU
# attention configuration", found here), the lab model's vocabulary and tokenizer, other random weights (seed 1).
DRAFT = "sparkops-lab/tiny-draft"
DRAFTED = {"method": "draft_model", "model": DRAFT, "num_speculative_tokens": 2}


def unit_files() -> dict[str, str]:
    return {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)}


def serve(speculative: dict[str, t.Any], extra_args: list[str] | None = None) -> t.Any:
    extra: dict[str, t.Any] = {"vllm_serve_speculative": speculative}
    if extra_args is not None:
        extra["vllm_serve_extra_args"] = extra_args
    return playbook("site.yml", "--tags", "serve", "-e", json.dumps(extra))


@pytest.mark.parametrize(
    ("speculative", "said"),
    [
        ({"method": "ngrm", "num_speculative_tokens": 3}, "Input should be 'ngram'"),
        ({"method": "ngram", "num_speculative_tokens": 0}, "Input should be greater than 0"),
    ],
)
def test_a_speculative_setting_the_engine_refuses_stops_the_role_and_the_unit_stays(speculative: dict[str, t.Any], said: str) -> None:
    units, pids = unit_files(), (main_pid(HEAD), main_pid(WORKER))
    run = serve(speculative)
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "refuses the arguments the unit would run it with; nothing was changed" in output, output[-3000:]
    assert said in output and "refused; from vllm_serve_speculative" in output, output[-3000:]
    assert unit_files() == units and (main_pid(HEAD), main_pid(WORKER)) == pids and serves()


@pytest.mark.usefixtures("no_liveness_probe")
def test_ngram_speculation_serves_and_the_benchmark_reports_what_it_did_as_the_engine_counted_it(tmp_path: Path) -> None:
    run = serve(NGRAM, GREEDY)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    wait_serving(600)
    for text in unit_files().values():
        assert "--speculative-config '" + json.dumps(NGRAM, sort_keys=True, separators=(",", ":")) + "'" in text, text
    again = serve(NGRAM, GREEDY)
    assert again.returncode == 0 and all(s["changed"] == 0 for s in recap(again).values()), recap(again)
    figures: dict[str, t.Any] = {"speculative_config": NGRAM, "levels": {}}
    for level in LEVELS:
        before = engine_record.engine_records(HEAD)
        measured = engine_record.benchmark_level(HEAD_IP, API_KEY, tmp_path / f"c{level}", level, SPECULATIVE_FIGURES, run_on=HEAD)
        after = engine_record.engine_records(HEAD)
        engine = {key: round(after[f"spec_{key}"] - before[f"spec_{key}"]) for key in ("drafts", "draft_tokens", "accepted_tokens")}
        spec = measured["speculative"]
        assert spec is not None and {key: spec[key] for key in engine} == engine, (spec, engine)
        assert spec["drafts"] > 0 and spec["accepted_tokens"] <= spec["draft_tokens"] <= 3 * spec["drafts"], spec
        assert spec["acceptance_rate"] == pytest.approx(engine["accepted_tokens"] / engine["draft_tokens"], abs=1e-4), spec
        assert spec["mean_acceptance_length"] == pytest.approx(1 + engine["accepted_tokens"] / engine["drafts"], abs=1e-3), spec
        report = (tmp_path / f"c{level}" / "benchmark.md").read_text()
        assert "## Speculative decoding" in report, report
        figures["levels"][str(level)] = {"speculative": spec, "output_throughput": measured["output_throughput"], "mean_tpot_ms": measured["mean_tpot_ms"]}
    SPECULATIVE_FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


@pytest.mark.usefixtures("no_liveness_probe")
def test_the_comparison_sweeps_without_speculation_then_as_set_and_reports_the_gain(tmp_path: Path) -> None:
    pids = (main_pid(HEAD), main_pid(WORKER))
    extra = {
        "vllm_serve_speculative": NGRAM,
        "vllm_serve_extra_args": GREEDY,
        "benchmark_compare": "speculative",
        "benchmark_run_on": HEAD,
        "benchmark_concurrency": ",".join(str(level) for level in LEVELS),
        "benchmark_prompt_tokens": PROMPT_TOKENS,
        "benchmark_output_tokens": OUTPUT_TOKENS,
        "benchmark_requests_per_level": REQUESTS,
        "benchmark_output_dir": str(tmp_path),
    }
    run = playbook("playbooks/benchmark.yml", "-e", json.dumps(extra), env={"ANSIBLE_INTERNAL_POLL_INTERVAL": "0.1"})
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    assert API_KEY not in output
    # Served as set again, by a second restart of both ranks (the first served without speculation).
    for text in unit_files().values():
        assert "--speculative-config '" + json.dumps(NGRAM, sort_keys=True, separators=(",", ":")) + "'" in text, text
    assert serves() and all(new != old for new, old in zip((main_pid(HEAD), main_pid(WORKER)), pids, strict=True))
    report = json.loads((tmp_path / "benchmark.json").read_text())
    comparison, on = report["comparison"], report["levels"]
    off = comparison["baseline"]["levels"]
    assert [level["max_concurrency"] for level in off] == [level["max_concurrency"] for level in on] == list(LEVELS)
    assert all(level["completed"] == REQUESTS for level in off + on), (off, on)
    assert all(level["speculative"] is None for level in off), off  # the engine had no speculative counters
    assert all(level["speculative"]["drafts"] > 0 for level in on), on
    for row, before, after in zip(comparison["levels"], off, on, strict=True):
        assert row["output_throughput"]["ratio"] == pytest.approx(after["output_throughput"] / before["output_throughput"], abs=1e-3), row
        assert row["mean_tpot_ms"]["ratio"] == pytest.approx(after["mean_tpot_ms"] / before["mean_tpot_ms"], abs=1e-3), row
    markdown = (tmp_path / "benchmark.md").read_text()
    assert "## Compared with speculative decoding off" in markdown and "Off: speculative decoding off." in markdown, markdown
    for suffix in (".md", ".png"):
        (SPECULATIVE_FIGURES.with_name(f"engine-speculative-compare{suffix}")).write_bytes((tmp_path / f"benchmark{suffix}").read_bytes())
    figures = json.loads(SPECULATIVE_FIGURES.read_text()) if SPECULATIVE_FIGURES.exists() else {}
    figures["comparison"] = comparison["levels"]
    figures["comparison_speculative"] = {str(level["max_concurrency"]): level["speculative"] for level in on}
    SPECULATIVE_FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


@pytest.mark.usefixtures("no_liveness_probe")
def test_a_draft_model_is_distributed_checked_and_speculated_with(tmp_path: Path) -> None:
    info = hf_model.seed_node(HEAD, DRAFT, total_bytes=hf_model.parse_size("8MB"), shards=1, seed=1)
    snapshot = f"{hf_model.NODE_HUB_CACHE}/{hf_model.repo_folder(DRAFT)}/snapshots/{info.commit}"
    assert node(WORKER).run(f"test -e {snapshot}").rc != 0  # on the head only, as the model was
    run = playbook("site.yml", "--tags", "model,serve", "-e", json.dumps({"vllm_serve_speculative": DRAFTED, "vllm_serve_extra_args": GREEDY}))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    wait_serving(600)
    for host in (HEAD, WORKER):  # distributed, every file as the head has it
        listing = node(host).check_output(f"cd {snapshot} && sha256sum $(ls | sort)")
        assert listing == node(HEAD).check_output(f"cd {snapshot} && sha256sum $(ls | sort)"), host
        gate = json.loads(node(host).file("/etc/sparkops/vllm-gate.json").content_string)
        assert gate["draft_repo_id"] == DRAFT, gate
    said = node(HEAD).check_output(f"journalctl -u {UNIT} --no-pager -o cat | grep 'gate snapshot: ok' | tail -1")
    assert f"the draft model {DRAFT} at {info.commit} complete" in said, said
    again = playbook("site.yml", "--tags", "model,serve", "-e", json.dumps({"vllm_serve_speculative": DRAFTED, "vllm_serve_extra_args": GREEDY}))
    assert again.returncode == 0 and all(s["changed"] == 0 for s in recap(again).values()), recap(again)
    measured = engine_record.benchmark_level(HEAD_IP, API_KEY, tmp_path, 1, SPECULATIVE_FIGURES.with_name("engine-draft.json"), run_on=HEAD)
    spec = measured["speculative"]
    # A random-weight drafter: its guesses are rarely the model's (the mechanism is what is shown, not a gain).
    assert spec is not None and spec["drafts"] > 0 and spec["draft_tokens"] == 2 * spec["drafts"], spec
    figures = json.loads(SPECULATIVE_FIGURES.read_text()) if SPECULATIVE_FIGURES.exists() else {}
    figures["draft_model"] = {"speculative_config": DRAFTED, "speculative": spec, "output_throughput": measured["output_throughput"]}
    SPECULATIVE_FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


def test_without_speculation_again_the_engine_serves_as_before() -> None:
    run = serve({})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    wait_serving(600)
    assert not any("--speculative-config" in text for text in unit_files().values())
    assert engine_record.engine_records(HEAD)["spec_drafts"] == 0  # a fresh engine with no speculative counters
