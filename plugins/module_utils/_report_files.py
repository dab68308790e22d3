# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two files of a report (JSON for tools, Markdown for people), written only when their content changes.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A report is a JSON document with a ``generated_at`` key and a Markdown rendering of it. :func:`plan` reads the old
files, keeps the old ``generated_at`` when nothing else in the document changed (so that a second run with the same
facts writes nothing) and says which file differs; :func:`write_changed` writes those, each whole to a temporary
file renamed over the old one. recon_report and status_report share this.
"""

from __future__ import annotations

import json
import os
import typing as t
from dataclasses import dataclass
from datetime import datetime, timezone

from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_report import write_atomic

# Turns the document into the Markdown report.
MarkdownRenderer = t.Callable[[t.Mapping[str, t.Any]], str]


def utc_now() -> str:
    """The time now, ISO 8601 in UTC to the second (``2026-01-31T12:00:00Z``)."""
    # datetime.UTC is Python 3.11+; modules also run on older Pythons.
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")  # noqa: UP017


def render_json(document: t.Mapping[str, t.Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def without_timestamp(document: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    return {key: value for key, value in document.items() if key != "generated_at"}


def keep_timestamp(document: dict[str, t.Any], old_json: bytes | None) -> dict[str, t.Any]:
    """``document`` with the old file's ``generated_at`` when the old file says the same otherwise."""
    if old_json is None:
        return document
    try:
        old = json.loads(old_json.decode("utf-8"))
    except ValueError:
        return document
    if isinstance(old, dict) and isinstance(old.get("generated_at"), str) and without_timestamp(old) == without_timestamp(document):
        return {**document, "generated_at": old["generated_at"]}
    return document


@dataclass
class Plan:
    """The document to write, the files' new contents and which differ from what is on disk."""

    document: dict[str, t.Any]
    json_bytes: bytes
    markdown_bytes: bytes
    json_changed: bool
    markdown_changed: bool
    markdown_before: str

    @property
    def changed(self) -> bool:
        return self.json_changed or self.markdown_changed


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def plan(document: dict[str, t.Any], json_path: str, markdown_path: str, render_markdown: MarkdownRenderer) -> Plan:
    """What to write at ``json_path`` and ``markdown_path``; only ``generated_at`` differing is no change."""
    old_json = read_bytes(json_path)
    old_markdown = read_bytes(markdown_path)
    document = keep_timestamp(document, old_json)
    json_bytes = render_json(document)
    markdown_bytes = render_markdown(document).encode("utf-8")
    return Plan(
        document=document,
        json_bytes=json_bytes,
        markdown_bytes=markdown_bytes,
        json_changed=old_json != json_bytes,
        markdown_changed=old_markdown != markdown_bytes,
        markdown_before="" if old_markdown is None else old_markdown.decode("utf-8", "replace"),
    )


def changed_paths(files: Plan, json_path: str, markdown_path: str) -> list[str]:
    """The paths whose content differs, JSON first."""
    return [path for path, changed in ((json_path, files.json_changed), (markdown_path, files.markdown_changed)) if changed]


def write_changed(files: Plan, json_path: str, markdown_path: str, dest_dir: str) -> list[str]:
    """Write the files that changed (making ``dest_dir`` when missing, mode 0644); the paths written.

    Raises OSError when the folder cannot be made or a file cannot be written.
    """
    writes = [
        (path, data)
        for path, data, changed in ((json_path, files.json_bytes, files.json_changed), (markdown_path, files.markdown_bytes, files.markdown_changed))
        if changed
    ]
    if writes:
        os.makedirs(dest_dir, exist_ok=True)
        for path, data in writes:
            write_atomic(path, data)
    return [path for path, _data in writes]


def write_report(module: t.Any, document: dict[str, t.Any], plan_report: t.Callable[[dict[str, t.Any], str, str], Plan]) -> tuple[Plan, dict[str, t.Any]]:
    """Plan and (outside check mode) write a report module's ``<dest_dir>/<basename>.json`` and ``.md``.

    ``module`` is the AnsibleModule (options ``dest_dir`` and ``basename``); ``plan_report`` is the report's plan
    (its Markdown renderer bound). Fails the module when the old report cannot be read or the new one cannot be
    written; returns the plan and the module result (:func:`module_result`).
    """
    dest = module.params["dest_dir"]
    json_path = os.path.join(dest, f"{module.params['basename']}.json")
    markdown_path = os.path.join(dest, f"{module.params['basename']}.md")
    try:
        files = plan_report(document, json_path, markdown_path)
    except OSError as exc:
        module.fail_json(msg=f"cannot read the old report in {dest}: {exc.strerror or exc}", json_path=json_path, markdown_path=markdown_path)
    written = changed_paths(files, json_path, markdown_path)
    if written and not module.check_mode:
        try:
            written = write_changed(files, json_path, markdown_path, dest)
        except OSError as exc:
            module.fail_json(msg=f"cannot write the report in {dest}: {exc.strerror or exc}", json_path=json_path, markdown_path=markdown_path)
    return files, module_result(files, json_path, markdown_path, written, module.check_mode, module._diff)


def module_result(files: Plan, json_path: str, markdown_path: str, written: list[str], check_mode: bool, diff: bool) -> dict[str, t.Any]:
    """The module result of a report: changed, both paths, the paths (that would be) written, generated_at, msg, diff."""
    verb = "would write" if check_mode else "wrote"
    result: dict[str, t.Any] = {
        "changed": bool(written),
        "json_path": json_path,
        "markdown_path": markdown_path,
        "changed_files": written,
        "generated_at": files.document["generated_at"],
        "msg": f"{verb} {', '.join(written)}" if written else f"{json_path} and {markdown_path} are up to date",
    }
    if diff:
        result["diff"] = {
            "before_header": markdown_path,
            "after_header": markdown_path,
            "before": files.markdown_before,
            "after": files.markdown_bytes.decode("utf-8"),
        }
    return result
