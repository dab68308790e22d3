# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Two sweeps of the same load side by side (playbooks/benchmark.yml's ``benchmark_compare``): the baseline (for
``speculative``: speculative decoding off) and the run reported (on), level by level, with the gain as a ratio.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`build_comparison` makes the report document's ``comparison`` key (docs/benchmark.md) from the baseline sweep's
result and the reported sweep's levels; :func:`markdown_lines` its section of the Markdown report. Standard library
only.
"""

from __future__ import annotations

import math
import typing as t

# The figures compared (key, column title); the ratio is the reported sweep's over the baseline's.
FIGURES: tuple[tuple[str, str], ...] = (("output_throughput", "Output tok/s"), ("mean_tpot_ms", "TPOT mean (ms)"))
BASELINE_KEYS = ("started", "finished", "warmup", "stopped", "server_version")


class ComparisonError(ValueError):
    """The baseline cannot be compared (not an openai_benchmark result, or another load); the message says why."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(float(value)):
        return None
    return float(value)


def _ratio(reported: float | None, baseline: float | None) -> float | None:
    return None if reported is None or baseline is None or baseline == 0 else round(reported / baseline, 4)


def _by_concurrency(levels: t.Sequence[t.Mapping[str, t.Any]]) -> dict[int, t.Mapping[str, t.Any]]:
    return {int(level["max_concurrency"]): level for level in levels if isinstance(level, dict) and "max_concurrency" in level}


def build_comparison(
    baseline: t.Mapping[str, t.Any],
    levels: t.Sequence[t.Mapping[str, t.Any]],
    settings: t.Mapping[str, t.Any],
    label: str,
    baseline_label: str,
) -> dict[str, t.Any]:
    """The ``comparison`` document: both labels, the baseline sweep (its levels unchanged) and, for each concurrency
    level of either sweep, each figure of :data:`FIGURES` in both and their ratio (reported / baseline; None where
    either is missing). ``settings`` are the reported sweep's: the baseline must have run the same load."""
    baseline_levels = baseline.get("levels")
    if not isinstance(baseline_levels, list) or not baseline_levels:
        raise ComparisonError("baseline has no levels: give the registered result of sparkops.inference.openai_benchmark (not run in check mode)")
    given = baseline.get("settings")
    if isinstance(given, dict):
        keys = ("prompt_tokens", "output_tokens", "ignore_eos", "concurrency")
        differing = [key for key in keys if key in given and key in settings and given[key] != settings[key]]
        if differing:
            shown = ", ".join(f"{key} {given[key]!r} against {settings[key]!r}" for key in differing)
            raise ComparisonError(f"baseline ran another load ({shown}): the two sweeps must run the same load to be compared")
    theirs, ours = _by_concurrency(baseline_levels), _by_concurrency(levels)
    rows = []
    for concurrency in sorted(set(theirs) | set(ours)):
        row: dict[str, t.Any] = {"max_concurrency": concurrency}
        for key, _title in FIGURES:
            before = _number(theirs.get(concurrency, {}).get(key))
            after = _number(ours.get(concurrency, {}).get(key))
            row[key] = {"baseline": before, "reported": after, "ratio": _ratio(after, before)}
        rows.append(row)
    return {
        "label": label,
        "baseline_label": baseline_label,
        "baseline": {**{key: baseline.get(key) for key in BASELINE_KEYS}, "levels": [dict(level) for level in baseline_levels]},
        "levels": rows,
    }


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown_lines(comparison: t.Mapping[str, t.Any]) -> list[str]:
    """The report's section: one table, a row a level, each figure in both sweeps and the ratio."""
    label, baseline_label = comparison["label"], comparison["baseline_label"]
    header = ["Concurrency"]
    for _key, title in FIGURES:
        header += [f"{title}, off", f"{title}, on", "on / off"]
    lines = [
        "",
        f"## Compared with {baseline_label}",
        "",
        f"Off: {baseline_label}. On: {label}. The same load, one sweep after the other, the engine restarted before",
        "each by the serving role. On / off above 1 is a gain for tok/s, a loss for TPOT.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---:|" * len(header),
    ]
    for row in comparison["levels"]:
        cells = [str(row["max_concurrency"])]
        for key, _title in FIGURES:
            figure = row[key]
            cells += [_fmt(figure["baseline"]), _fmt(figure["reported"]), _fmt(figure["ratio"], 2)]
        lines.append("| " + " | ".join(cells) + " |")
    baseline = comparison.get("baseline") or {}
    if baseline.get("started"):
        lines += ["", f"The {baseline_label} sweep ran from {baseline['started']} to {baseline.get('finished') or 'n/a'} (UTC)."]
    return lines
