# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A few of vLLM's counters from its ``GET /metrics`` (Prometheus' text format), read with the standard library: the
modules that read them run on nodes and load generators whose Python has no prometheus_client.

``/metrics`` is not behind vLLM's API key (0.32 vllm/entrypoints/serve/middleware/authenticate.py:11, GUARDED_PREFIX
is /v1, /v2, /inference, /cohere): the readers send no key there.

The speculative decoding counters and what is made of them are vLLM 0.32's (vllm/v1/spec_decode/metrics.py):
``vllm:spec_decode_num_drafts``, ``..._num_draft_tokens``, ``..._num_accepted_tokens`` (lines 229-231, counters:
``_total`` in the text); the acceptance rate is accepted over draft tokens, the mean acceptance length 1 + accepted
over drafts, "conventionally including the bonus token" (lines 107-114, as its log line and its PromQL in the
docstring at 180-191 compute them).

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import math
import re
import typing as t

# Grows while the engine generates for anyone (vllm/v1/metrics/loggers.py).
GENERATION_TOKENS = "vllm:generation_tokens_total"
# Counted when a request's prefill ends (vllm/v1/metrics/loggers.py:1262, vllm/v1/metrics/stats.py:453-457).
PROMPT_TOKENS = "vllm:prompt_tokens_total"
# A gauge: the requests the scheduler runs now (vllm/v1/metrics/loggers.py:528).
REQUESTS_RUNNING = "vllm:num_requests_running"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens_total"
SPECULATION = (SPEC_DRAFTS, SPEC_DRAFT_TOKENS, SPEC_ACCEPTED_TOKENS)

# One sample line: the name, its labels (quoted values may hold any character, escaped quotes too), the value and
# an optional timestamp.
_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?[ \t]+(\S+)(?:[ \t]+\S+)?[ \t]*$', re.M)


def counter_totals(text: str, names: t.Iterable[str]) -> dict[str, float]:
    """Each of ``names`` in ``text`` summed over its label sets (several engines, several models); a name with no
    sample, or none with a finite value, is left out."""
    wanted = set(names)
    totals: dict[str, float] = {}
    for name, raw in _SAMPLE.findall(text):
        if name not in wanted:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value):
            totals[name] = totals.get(name, 0.0) + value
    return totals


def speculation(before: t.Mapping[str, float] | None, after: t.Mapping[str, float] | None) -> dict[str, t.Any] | None:
    """What speculative decoding did between two readings of the counters: drafts, draft and accepted tokens, the
    acceptance rate and the mean acceptance length (None where nothing was drafted). None when either reading is
    missing or the engine has no speculative counters (it does not speculate)."""
    if before is None or after is None or not all(name in after for name in SPECULATION):
        return None
    drafts, draft_tokens, accepted = (int(round(after[name] - before.get(name, 0.0))) for name in SPECULATION)
    return {
        "drafts": drafts,
        "draft_tokens": draft_tokens,
        "accepted_tokens": accepted,
        "acceptance_rate": round(accepted / draft_tokens, 4) if draft_tokens > 0 else None,
        "mean_acceptance_length": round(1 + accepted / drafts, 3) if drafts > 0 else None,
    }
