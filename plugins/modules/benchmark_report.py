#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: benchmark_report
short_description: Write the report of a benchmark sweep as Markdown, JSON and a PNG plot
version_added: 1.0.0
description:
  - Writes C(<dest>/<name>.md), C(<dest>/<name>.json) and C(<dest>/<name>.png) on the host it runs on (the playbook
    delegates it to the controller) from the result of M(sparkops.inference.openai_benchmark) and what is known of the
    deployment.
  - "The header gives the model (served name, repository, revision and commit), the tensor and pipeline parallel
    sizes, the versions (vLLM, Ray), the endpoint URL without credentials, where the load was generated, the date
    (the sweep's start and end, UTC) and the prompt and output lengths. Then a throughput table and a latency table,
    with a row a concurrency level, the plot, the failures and the definitions."
  - The Markdown file shows the PNG, C(<name>.png), from the same folder.
  - "The PNG has two panels against concurrency: the aggregate output tokens per second and the per-request tokens
    per second (each on its own axis), and the time to first token, median and 99th percentile. It is drawn with
    matplotlib (the Agg backend, no display)."
  - "The JSON file holds the document: C(schema_version) (V(1)), C(generator), C(definitions), C(header) (the
    deployment and the settings), C(warmup), C(levels) (the sweep's RV(sparkops.inference.openai_benchmark#module:levels),
    unchanged) and C(stopped); docs/benchmark.md describes every key."
  - The same input gives the same bytes, so writing a report again reports no change.
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written; C(changed) and RV(changed_files) say whether and which files would be.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  dest:
    description:
      - The folder to write the files in; made, with its parents, when missing.
    type: path
    required: true
  name:
    description:
      - The base name of the files (letters, digits, V(.), V(_) and V(-)); files of that name are replaced.
    type: str
    default: benchmark
  benchmark:
    description:
      - The registered result of M(sparkops.inference.openai_benchmark), run outside check mode. Its C(levels),
        C(url), C(model), C(settings), C(warmup), C(server_version), C(started), C(finished) and C(stopped) are used.
    type: dict
    required: true
  model_repo:
    description:
      - The model's Hugging Face repository, for example V(Qwen/Qwen3.5-122B-A10B-FP8).
    type: str
  model_revision:
    description:
      - The revision deployed (a branch, tag or commit), as the inventory gives it.
    type: str
  model_commit:
    description:
      - The commit the revision resolved to on the head (M(sparkops.inference.hf_snapshot) RV(sparkops.inference.hf_snapshot#module:commit)).
    type: str
  tensor_parallel_size:
    description:
      - The tensor parallel size of the deployment.
    type: int
  pipeline_parallel_size:
    description:
      - The pipeline parallel size of the deployment.
    type: int
  versions:
    description:
      - "Software versions to show, name to version, for example V({vLLM: 0.30.0, Ray: 2.60.0}). Empty values are
        left out."
      - Without a C(vLLM) entry, the server's own version (C(server_version) of O(benchmark)) is shown.
    type: dict
    default: {}
  client:
    description:
      - Where the load was generated (the inventory name the benchmark was delegated to).
    type: str
  baseline:
    description:
      - The registered result of another M(sparkops.inference.openai_benchmark) sweep of the same load (the same
        prompt and output lengths and levels) to compare O(benchmark) with; C(playbooks/benchmark.yml) gives the sweep
        with speculative decoding off for C(benchmark_compare=speculative).
      - "The report then has a section C(Compared): each level's output tokens per second and mean TPOT in both sweeps
        and the ratio (O(benchmark)'s over O(baseline)'s); the plot has the baseline's lines beside; the JSON document a
        C(comparison) key (docs/benchmark.md)."
      - A baseline of another load is refused, naming the settings that differ.
    type: dict
  label:
    description:
      - What O(benchmark) measured, in the comparison (with O(baseline)).
    type: str
    default: this sweep
  baseline_label:
    description:
      - What O(baseline) measured, in the comparison.
    type: str
    default: baseline
  plot:
    description:
      - Whether to draw the PNG. With V(false), no PNG is written (nor needed by the Markdown) and matplotlib is not
        needed.
    type: bool
    default: true
requirements:
  - matplotlib (for the PNG), on the host the module runs on
notes:
  - Files are written whole to a temporary file in O(dest), then renamed over the old ones, mode C(0644).
seealso:
  - module: sparkops.inference.openai_benchmark
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Measure
  sparkops.inference.openai_benchmark:
    url: http://192.168.100.10:8000
    model: qwen3.5-122b
  delegate_to: localhost
  register: sweep

- name: Write benchmarks/benchmark.md, .json and .png on the controller
  sparkops.inference.benchmark_report:
    dest: "{{ playbook_dir }}/../benchmarks"
    benchmark: "{{ sweep }}"
    model_repo: Qwen/Qwen3.5-122B-A10B-FP8
    model_revision: main
    model_commit: 0123456789abcdef0123456789abcdef01234567
    tensor_parallel_size: 2
    pipeline_parallel_size: 1
    versions:
      vLLM: 0.30.0
      Ray: 2.60.0
    client: localhost
  delegate_to: localhost
  register: report

- name: Show the tables
  ansible.builtin.debug:
    msg: "{{ report.markdown.splitlines() }}"
"""

RETURN = r"""
files:
  description: The files' paths by kind (V(md), V(json), V(png); no V(png) with O(plot=false)).
  returned: always
  type: dict
  sample:
    md: /home/me/sparkops/benchmarks/benchmark.md
    json: /home/me/sparkops/benchmarks/benchmark.json
    png: /home/me/sparkops/benchmarks/benchmark.png
changed_files:
  description: The paths written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
  sample: [/home/me/sparkops/benchmarks/benchmark.md]
markdown:
  description: The Markdown report's text.
  returned: always
  type: str
  sample: "# Benchmark: qwen3.5-122b\n..."
document:
  description: The JSON document written to the C(.json) file (see the description and docs/benchmark.md).
  returned: always
  type: dict
  sample:
    schema_version: 1
    generator: sparkops.inference.benchmark_report
    header: {model: qwen3.5-122b, tensor_parallel_size: 2, pipeline_parallel_size: 1}
    levels: []
msg:
  description: What was written.
  returned: always
  type: str
  sample: "wrote /home/me/sparkops/benchmarks/benchmark.md, .json, .png"
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_report import (
    Baseline,
    Deployment,
    MatplotlibMissing,
    ReportError,
    build_document,
    check_name,
    differs,
    render_files,
    write_atomic,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "name": {"type": "str", "default": "benchmark"},
            "benchmark": {"type": "dict", "required": True},
            "model_repo": {"type": "str"},
            "model_revision": {"type": "str"},
            "model_commit": {"type": "str"},
            "tensor_parallel_size": {"type": "int"},
            "pipeline_parallel_size": {"type": "int"},
            "versions": {"type": "dict", "default": {}},
            "client": {"type": "str"},
            "baseline": {"type": "dict"},
            "label": {"type": "str", "default": "this sweep"},
            "baseline_label": {"type": "str", "default": "baseline"},
            "plot": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    for option in ("tensor_parallel_size", "pipeline_parallel_size"):
        if p[option] is not None and p[option] < 1:
            module.fail_json(msg=f"{option} must be at least 1, not {p[option]}")
    deployment = Deployment(
        model_repo=p["model_repo"],
        model_revision=p["model_revision"],
        model_commit=p["model_commit"],
        tensor_parallel_size=p["tensor_parallel_size"],
        pipeline_parallel_size=p["pipeline_parallel_size"],
        versions={str(key): "" if value is None else str(value) for key, value in (p["versions"] or {}).items()},
        client=p["client"],
    )
    try:
        check_name(p["name"])
        baseline = None if p["baseline"] is None else Baseline(p["baseline"], p["label"], p["baseline_label"])
        document = build_document(p["benchmark"], deployment, baseline)
        contents = render_files(document, p["name"], p["plot"])
    except ReportError as exc:
        module.fail_json(msg=str(exc))
    except MatplotlibMissing as exc:
        module.fail_json(
            msg=f"the plot needs matplotlib in the Python that runs this module ({exc}): install the package 'matplotlib' "
            "(pip install matplotlib, or python3-matplotlib), or set plot=false"
        )
    dest = p["dest"]
    files = {suffix: os.path.join(dest, f"{p['name']}.{suffix}") for suffix in contents}
    changed_files = [files[suffix] for suffix, data in contents.items() if differs(files[suffix], data)]
    if not module.check_mode and changed_files:
        try:
            os.makedirs(dest, exist_ok=True)
            for suffix, data in contents.items():
                if files[suffix] in changed_files:
                    write_atomic(files[suffix], data)
        except OSError as exc:
            module.fail_json(msg=f"cannot write the report in {dest}: {exc.strerror or exc}", files=files)
    verb = "would write" if module.check_mode else "wrote"
    msg = f"{verb} {', '.join(changed_files)}" if changed_files else f"{files['md']} and its companions are up to date"
    module.exit_json(
        changed=bool(changed_files),
        msg=msg,
        files=files,
        changed_files=changed_files,
        markdown=contents["md"].decode("utf-8"),
        document=document,
    )


if __name__ == "__main__":
    main()
