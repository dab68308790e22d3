# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a benchmark sweep (sparkops.inference.openai_benchmark): Markdown, JSON and a PNG plot.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`build_document` joins the sweep's result and the deployment (model, commit, parallelism, versions) into the
JSON document (:data:`SCHEMA_VERSION`, described in docs/benchmark.md); :func:`render_markdown`,
:func:`render_json` and :func:`render_png` turn it into the three files' bytes. The same document gives the same
bytes (the date is the sweep's, not the time of writing), so writing a report again changes nothing. The plot needs
matplotlib, imported only by :func:`render_png` (Agg, no display); the rest is standard library.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import tempfile
import typing as t
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_compare import ComparisonError, build_comparison, markdown_lines
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_profile import markdown_lines as profile_lines
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_profile import profile_document

SCHEMA_VERSION = 1
GENERATOR = "sparkops.inference.benchmark_report"
DEFINITIONS = (
    "vllm bench serve, vLLM 0.30.0: vllm/benchmarks/serve.py calculate_metrics, "
    "vllm/benchmarks/lib/endpoint_request_func.py async_request_openai_chat_completions"
)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MISSING = "n/a"
SUFFIXES = ("md", "json", "png")
LEVEL_REQUIRED = ("max_concurrency", "num_prompts", "completed", "failed", "output_throughput")


class ReportError(ValueError):
    """The sweep's result cannot be reported (not an openai_benchmark result); the message says why."""


class MatplotlibMissing(ImportError):
    """matplotlib cannot be imported where the report is written."""


@dataclass
class Deployment:
    """What the header says about the deployment besides what the sweep's result carries."""

    model_repo: str | None = None
    model_revision: str | None = None
    model_commit: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    client: str | None = None


@dataclass
class Baseline:
    """Another sweep of the same load to compare with (playbooks/benchmark.yml's benchmark_compare), and the labels."""

    benchmark: t.Mapping[str, t.Any]
    label: str
    baseline_label: str


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "<an invalid URL>"
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def check_name(name: str) -> None:
    if not NAME_PATTERN.match(name):
        raise ReportError(f"name {name!r} must be a file base name: letters, digits, '.', '_' and '-', not starting with '.', '_' or '-'")


def _text(value: object) -> str | None:
    return None if value is None or str(value).strip() == "" else str(value)


def build_document(benchmark: t.Mapping[str, t.Any], deployment: Deployment, baseline: Baseline | None = None) -> dict[str, t.Any]:
    """The JSON document of the report (see docs/benchmark.md for its schema).

    ``benchmark`` is the result of openai_benchmark; other keys it has (``changed``, ``invocation``, ...) are left
    out. ``deployment.versions`` are shown as given; without a ``vLLM`` entry, the server's ``/version`` is used.
    With ``baseline``, the document's ``comparison`` holds it beside ``benchmark`` (_benchmark_compare).
    """
    levels = benchmark.get("levels")
    if not isinstance(levels, list) or not levels:
        raise ReportError("benchmark has no levels: give the registered result of sparkops.inference.openai_benchmark (not run in check mode)")
    for n, level in enumerate(levels):
        if not isinstance(level, dict):
            raise ReportError(f"benchmark.levels[{n}] is not a dictionary")
        missing = [key for key in LEVEL_REQUIRED if key not in level]
        if missing:
            raise ReportError(f"benchmark.levels[{n}] lacks {', '.join(missing)}: not an openai_benchmark result")
    for key in ("url", "model"):
        if not isinstance(benchmark.get(key), str):
            raise ReportError(f"benchmark.{key} is missing: not an openai_benchmark result")
    given = benchmark.get("settings")
    settings: t.Mapping[str, t.Any] = given if isinstance(given, dict) else {}
    versions = {str(name): str(value) for name, value in deployment.versions.items() if _text(value) is not None}
    if not any(name.lower() == "vllm" for name in versions) and _text(benchmark.get("server_version")):
        versions = {"vLLM": str(benchmark["server_version"]), **versions}
    header = {
        "model": benchmark["model"],
        "model_repo": _text(deployment.model_repo),
        "model_revision": _text(deployment.model_revision),
        "model_commit": _text(deployment.model_commit),
        "tensor_parallel_size": deployment.tensor_parallel_size,
        "pipeline_parallel_size": deployment.pipeline_parallel_size,
        "versions": versions,
        "server_version": _text(benchmark.get("server_version")),
        "url": public_url(benchmark["url"]),
        "client": _text(deployment.client),
        "started": _text(benchmark.get("started")),
        "finished": _text(benchmark.get("finished")),
        "concurrency": settings.get("concurrency", [level["max_concurrency"] for level in levels]),
        "requests_per_level": settings.get("requests_per_level"),
        "prompt_tokens": settings.get("prompt_tokens"),
        "output_tokens": settings.get("output_tokens"),
        "ignore_eos": settings.get("ignore_eos"),
        "warmup": settings.get("warmup"),
        "timeout": settings.get("timeout"),
    }
    document = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "definitions": DEFINITIONS,
        "header": header,
        "warmup": benchmark.get("warmup"),
        "prompt_calibration": benchmark.get("prompt_calibration"),
        "levels": [dict(level) for level in levels],
        "stopped": _text(benchmark.get("stopped")),
        "llama_benchy": profile_document(header, levels),
    }
    if baseline is not None:
        try:
            document["comparison"] = build_comparison(baseline.benchmark, levels, settings, baseline.label, baseline.baseline_label)
        except ComparisonError as exc:
            raise ReportError(str(exc)) from None
    return document


# ---------------------------------------------------------------------------------------------------------------
# Markdown


def fmt(value: object, digits: int = 1) -> str:
    """A number with ``digits`` decimals (a whole number as is); :data:`MISSING` for None."""
    if value is None or isinstance(value, bool):
        return MISSING if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return MISSING if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _model_line(header: t.Mapping[str, t.Any]) -> str:
    line = f"`{header['model']}`"
    if header.get("model_repo"):
        line += f", `{header['model_repo']}`"
        if header.get("model_revision"):
            line += f" at `{header['model_revision']}`"
    line += f", commit `{header['model_commit']}`" if header.get("model_commit") else ", commit unknown"
    return line


def _requests_line(document: t.Mapping[str, t.Any]) -> str:
    header = document["header"]
    parts = ["streamed chat completions"]
    completed = sum(int(level.get("completed") or 0) for level in document["levels"])
    total_input = sum(int(level.get("total_input_tokens") or 0) for level in document["levels"])
    prompt = f"prompt about {fmt(header.get('prompt_tokens'))} tokens"
    if completed and total_input:
        prompt += f" (the server counted {total_input / completed:.0f} on average, chat template included)"
    parts.append(prompt)
    parts.append(f"{fmt(header.get('output_tokens'))} output tokens" + (" (ignore_eos)" if header.get("ignore_eos") else " at most"))
    if header.get("requests_per_level"):
        parts.append(f"{header['requests_per_level']} requests per level")
    else:
        parts.append("4 rounds of the concurrency per level, 8 requests at least")
    if header.get("warmup"):
        parts.append("one warm-up request first, not counted")
    if header.get("timeout") is not None:
        parts.append(f"timeout {fmt(header['timeout'], 0)} s per request")
    return "; ".join(parts)


def render_markdown(document: t.Mapping[str, t.Any], png_name: str | None) -> str:
    """The Markdown report: the header, a throughput table and a latency table with a row a level, the plot, the failures."""
    header = document["header"]
    levels = document["levels"]
    versions = ", ".join(f"{name} {value}" for name, value in header["versions"].items()) or MISSING
    parallel = f"tensor parallel {fmt(header.get('tensor_parallel_size'))}, pipeline parallel {fmt(header.get('pipeline_parallel_size'))}"
    when = header.get("started") or MISSING
    if header.get("finished"):
        when += f" to {header['finished']}"
    rows = [
        ("Model", _model_line(header)),
        ("Parallelism", parallel),
        ("Versions", versions),
        ("Endpoint", header["url"]),
        ("Load generator", header.get("client") or MISSING),
        ("Date (UTC)", when),
        ("Requests", _requests_line(document)),
    ]
    lines = [f"# Benchmark: {header['model']}", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in rows]
    lines += [
        "",
        "## Throughput",
        "",
        "| Concurrency | Requests | Failed | Duration (s) | Output tok/s | Per-request tok/s | Requests/s | Output tokens per request |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in levels:
        lines.append(
            f"| {fmt(level['max_concurrency'])} | {fmt(level['num_prompts'])} | {fmt(level['failed'])} | {fmt(level.get('duration'), 2)} "
            f"| {fmt(level.get('output_throughput'))} | {fmt(level.get('per_request_output_throughput'))} "
            f"| {fmt(level.get('request_throughput'), 3)} | {fmt(level.get('mean_output_tokens'))} |"
        )
    lines += [
        "",
        "## Latency (ms)",
        "",
        "| Concurrency | TTFT mean | TTFT p50 | TTFT p99 | ITL mean | ITL p50 | ITL p99 | TPOT mean | E2E latency p50 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in levels:
        cells = [
            level.get(key)
            for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_tpot_ms", "median_e2el_ms")
        ]
        lines.append(f"| {fmt(level['max_concurrency'])} | " + " | ".join(fmt(value) for value in cells) + " |")
    speculating = [level for level in levels if isinstance(level.get("speculative"), dict)]
    if speculating:
        lines += [
            "",
            "## Speculative decoding",
            "",
            "| Concurrency | Drafts | Draft tokens | Accepted tokens | Acceptance rate | Mean acceptance length |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for level in speculating:
            spec = level["speculative"]
            rate = spec.get("acceptance_rate")
            lines.append(
                f"| {fmt(level['max_concurrency'])} | {fmt(spec.get('drafts'))} | {fmt(spec.get('draft_tokens'))} "
                f"| {fmt(spec.get('accepted_tokens'))} | {MISSING if rate is None else fmt(100 * rate) + ' %'} "
                f"| {fmt(spec.get('mean_acceptance_length'), 2)} |"
            )
    lines += profile_lines(header, levels)
    if isinstance(document.get("comparison"), dict):
        lines += markdown_lines(document["comparison"])
    if png_name:
        lines += ["", f"![Output tokens per second and time to first token against concurrency]({png_name})"]
    failures = [level for level in levels if level.get("failed")]
    warmup = document.get("warmup")
    if failures or document.get("stopped") or (isinstance(warmup, dict) and not warmup.get("success", True)):
        lines += ["", "## Failures", ""]
        if isinstance(warmup, dict) and not warmup.get("success", True):
            lines.append(f"- Warm-up: {warmup.get('error')}")
        for level in failures:
            kinds = ", ".join(f"{kind} {count}" for kind, count in (level.get("error_kinds") or {}).items())
            messages = "; ".join(str(message) for message in level.get("error_messages") or [])
            lines.append(f"- Concurrency {level['max_concurrency']}: {level['failed']} of {level['num_prompts']} failed ({kinds}): {messages}")
        if document.get("stopped"):
            lines.append(f"- Stopped: {document['stopped']}")
    lines += [
        "",
        "## Definitions",
        "",
        "As `vllm bench serve` of vLLM 0.30.0 defines them (`vllm/benchmarks/serve.py`, `calculate_metrics`;",
        "`vllm/benchmarks/lib/endpoint_request_func.py`, `async_request_openai_chat_completions`):",
        "",
        "- Output tok/s: the output tokens of the completed requests (the final usage chunk's `completion_tokens`)",
        "  over the level's duration, with exactly *concurrency* requests in flight.",
        "- TTFT: from sending a request to the first stream chunk with choices.",
        "- ITL: the gaps between a request's following chunks. TPOT: (latency - TTFT) / (output tokens - 1).",
        "- Per-request tok/s: 1 / mean TPOT, the rate of one request once its first token is out.",
        "- p50 is the median, p99 the 99th percentile (linear interpolation, as numpy's).",
    ]
    if speculating:
        lines += [
            "- Speculative decoding: the engine's own counters (its `/metrics`, vLLM 0.32",
            "  `vllm/v1/spec_decode/metrics.py`) read before and after each level: acceptance rate = accepted / draft",
            "  tokens; mean acceptance length = 1 + accepted / drafts (tokens a step, the bonus token included).",
            "  Other requests the engine served during the level count too.",
        ]
    lines.append("")
    return "\n".join(lines)


def render_json(document: t.Mapping[str, t.Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------------------------------------------
# The plot


def _values(levels: t.Sequence[t.Mapping[str, t.Any]], key: str) -> list[float]:
    return [float(level[key]) if isinstance(level.get(key), (int, float)) else math.nan for level in levels]


def _top(values: t.Sequence[float]) -> float:
    """An axis top 15 % above the highest value, so that no line runs along the frame."""
    finite = [value for value in values if not math.isnan(value)]
    return max(finite) * 1.15 if finite and max(finite) > 0 else 1.0


def render_png(document: t.Mapping[str, t.Any]) -> bytes:
    """Two panels against concurrency: output tokens/s (aggregate, and per request on its own axis), TTFT p50 and p99.

    Raises :class:`MatplotlibMissing` when matplotlib cannot be imported.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, NullLocator
    except ImportError as exc:
        raise MatplotlibMissing(str(exc)) from None
    header = document["header"]
    levels = sorted(document["levels"], key=lambda level: level["max_concurrency"])
    xs = [int(level["max_concurrency"]) for level in levels]
    figure = Figure(figsize=(12, 4.8), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    per_request = left.twinx()
    aggregate = _values(levels, "output_throughput")
    rates = _values(levels, "per_request_output_throughput")
    ttft_p50, ttft_p99 = _values(levels, "median_ttft_ms"), _values(levels, "p99_ttft_ms")
    comparison = document.get("comparison")
    suffix = " (on)" if isinstance(comparison, dict) else ""
    lines = left.plot(xs, aggregate, marker="o", color="tab:blue", label="aggregate output tok/s" + suffix)
    lines += per_request.plot(xs, rates, marker="s", linestyle="--", color="tab:orange", label="per-request tok/s (1 / TPOT)" + suffix)
    if isinstance(comparison, dict):
        # The baseline's lines in the same colours, lighter (benchmark_compare: speculative decoding off).
        before = sorted(comparison["baseline"]["levels"], key=lambda level: level["max_concurrency"])
        bxs = [int(level["max_concurrency"]) for level in before]
        off_aggregate, off_rates = _values(before, "output_throughput"), _values(before, "per_request_output_throughput")
        lines += left.plot(bxs, off_aggregate, marker="o", color="tab:blue", alpha=0.45, linestyle=":", label="aggregate output tok/s (off)")
        lines += per_request.plot(bxs, off_rates, marker="s", color="tab:orange", alpha=0.45, linestyle=":", label="per-request tok/s (off)")
        aggregate, rates = aggregate + off_aggregate, rates + off_rates
    left.set_ylabel("aggregate output tokens/s")
    per_request.set_ylabel("per-request output tokens/s")
    left.set_ylim(0, _top(aggregate))
    per_request.set_ylim(0, _top(rates))
    left.legend(lines, [str(line.get_label()) for line in lines], loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    left.set_title("Output throughput")
    right.plot(xs, ttft_p50, marker="o", color="tab:green", label="TTFT p50")
    right.plot(xs, ttft_p99, marker="^", linestyle="--", color="tab:red", label="TTFT p99")
    right.set_ylabel("time to first token (ms)")
    right.set_ylim(0, _top(ttft_p50 + ttft_p99))
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    right.set_title("Time to first token")
    for axes in (left, right):
        axes.set_xlabel("concurrency (requests in flight)")
        if len(xs) > 1 and min(xs) > 0:
            axes.set_xscale("log", base=2)
        axes.xaxis.set_major_locator(FixedLocator([float(x) for x in xs]))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xticklabels([str(x) for x in xs])
        axes.grid(True, alpha=0.3)
    parallel = f"TP {fmt(header.get('tensor_parallel_size'))} x PP {fmt(header.get('pipeline_parallel_size'))}"
    versions = ", ".join(f"{name} {value}" for name, value in header["versions"].items())
    tokens = f"{fmt(header.get('prompt_tokens'))} prompt / {fmt(header.get('output_tokens'))} output tokens"
    title = " | ".join(part for part in (header["model"], parallel, versions, tokens, header.get("started") or "") if part)
    figure.suptitle(title, fontsize=10)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# The files


def render_files(document: t.Mapping[str, t.Any], name: str, plot: bool) -> dict[str, bytes]:
    """The files' contents by suffix (``md``, ``json`` and, with ``plot``, ``png``)."""
    check_name(name)
    files = {"json": render_json(document)}
    if plot:
        files["png"] = render_png(document)
    files["md"] = render_markdown(document, f"{name}.png" if plot else None).encode("utf-8")
    return files


def differs(path: str, data: bytes) -> bool:
    """Whether ``path`` does not hold exactly ``data``."""
    try:
        with open(path, "rb") as handle:
            return handle.read() != data
    except FileNotFoundError:
        return True


def write_atomic(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to a temporary file next to ``path``, then rename it over ``path``."""
    directory = os.path.dirname(path) or "."
    descriptor, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
