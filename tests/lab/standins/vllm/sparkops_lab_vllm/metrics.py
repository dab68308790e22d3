# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's Prometheus metrics (a subset), written in the text format prometheus_client writes."""

from __future__ import annotations

import math
import threading

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
FINISHED_REASONS = ("stop", "length", "abort")


def number(value: float) -> str:
    """A sample value as prometheus_client writes it: ``1.0``, ``0.25``, ``+Inf``."""
    return "+Inf" if math.isinf(value) else repr(float(value))


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        for n, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[n] += 1
                break
        else:
            self.counts[-1] += 1
        self.sum += value

    def lines(self, name: str, labels: str) -> list[str]:
        out, total = [], 0
        for n, count in enumerate(self.counts):
            bound = self.buckets[n] if n < len(self.buckets) else math.inf
            total += count
            out.append(f'{name}_bucket{{{labels},le="{number(bound)}"}} {number(total)}')
        return [*out, f"{name}_count{{{labels}}} {number(total)}", f"{name}_sum{{{labels}}} {number(self.sum)}"]


class Metrics:
    """Gauges, counters and histograms of one engine (labels ``model_name`` and ``engine="0"``)."""

    def __init__(self, model_name: str, capacity_tokens: int) -> None:
        self.lock = threading.Lock()
        self.labels = f'model_name="{model_name}",engine="0"'
        self.capacity = max(capacity_tokens, 1)
        self.running = 0
        self.waiting = 0
        self.tokens_in_use = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = dict.fromkeys(FINISHED_REASONS, 0)
        self.ttft = Histogram(TTFT_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)

    def add(self, waiting: int = 0, running: int = 0, tokens: int = 0) -> None:
        with self.lock:
            self.waiting += waiting
            self.running += running
            self.tokens_in_use += tokens

    def finished(self, prompt_tokens: int, generation_tokens: int, reason: str, ttft: float, e2e: float) -> None:
        with self.lock:
            self.prompt_tokens += prompt_tokens
            self.generation_tokens += generation_tokens
            self.success[reason] = self.success.get(reason, 0) + 1
            self.ttft.observe(ttft)
            self.e2e.observe(e2e)

    def render(self) -> str:
        def family(name: str, kind: str, help_text: str, samples: list[str]) -> list[str]:
            return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]

        with self.lock:
            usage = min(1.0, self.tokens_in_use / self.capacity)
            lines = family(
                "vllm:num_requests_running",
                "gauge",
                "Number of requests in model execution batches.",
                [f"vllm:num_requests_running{{{self.labels}}} {number(self.running)}"],
            )
            lines += family(
                "vllm:num_requests_waiting",
                "gauge",
                "Number of requests waiting to be processed.",
                [f"vllm:num_requests_waiting{{{self.labels}}} {number(self.waiting)}"],
            )
            lines += family(
                "vllm:kv_cache_usage_perc",
                "gauge",
                "KV-cache usage. 1 means 100 percent usage.",
                [f"vllm:kv_cache_usage_perc{{{self.labels}}} {number(usage)}"],
            )
            lines += family(
                "vllm:prompt_tokens_total",
                "counter",
                "Number of prefill tokens processed.",
                [f"vllm:prompt_tokens_total{{{self.labels}}} {number(self.prompt_tokens)}"],
            )
            lines += family(
                "vllm:generation_tokens_total",
                "counter",
                "Number of generation tokens processed.",
                [f"vllm:generation_tokens_total{{{self.labels}}} {number(self.generation_tokens)}"],
            )
            success = [f'vllm:request_success_total{{{self.labels},finished_reason="{reason}"}} {number(count)}' for reason, count in self.success.items()]
            lines += family("vllm:request_success_total", "counter", "Count of successfully processed requests.", success)
            lines += family(
                "vllm:time_to_first_token_seconds",
                "histogram",
                "Histogram of time to first token in seconds.",
                self.ttft.lines("vllm:time_to_first_token_seconds", self.labels),
            )
            lines += family(
                "vllm:e2e_request_latency_seconds",
                "histogram",
                "Histogram of e2e request latency in seconds.",
                self.e2e.lines("vllm:e2e_request_latency_seconds", self.labels),
            )
        return "\n".join(lines) + "\n"
