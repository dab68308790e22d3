#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_metadata
short_description: Read a Hugging Face model's config and size before it is downloaded
version_added: 1.0.0
description:
  - Reads what the fit check needs to know about a model before a byte of its weights is downloaded, its
    C(config.json) (layers, heads, context) and its sizes (the weights' bytes, the whole snapshot's bytes, and how
    much of it the hub cache already holds), from the hub cache when it can and else from the Hugging Face Hub.
  - "From the cache (RV(source=cache)), without the network: when O(cache_dir) holds a complete snapshot of the
    revision, that is the revision resolves through C(refs/<revision>) (or is a 40-hex commit), C(snapshots/<commit>/)
    has a C(config.json), every file resolves, the shards of C(model.safetensors.index.json) (or the single
    C(model.safetensors)) are there and every safetensors header matches its file, as the
    M(sparkops.inference.hf_snapshot) module's quick check judges it. The weight bytes are then the shards' tensor
    data, by their headers."
  - "Else from the Hub at O(endpoint) (RV(source=hub)), reading metadata only: the commit of the revision
    (C(GET /api/models/<repo_id>/revision/<revision>), its C(sha)), the files and their sizes (C(GET
    /api/models/<repo_id>/tree/<commit>?recursive=true), following the C(Link) header's C(rel=\"next\") pages),
    C(config.json) (C(GET /<repo_id>/resolve/<commit>/config.json)), and the weight bytes: the C(metadata.total_size)
    of C(model.safetensors.index.json) when there is one, else the tensor data of each safetensors file by its
    header, read with two C(Range) requests (bytes 0-7 for the header's length N, then bytes 8 to N+7). No weights
    file is ever downloaded."
  - "These are the endpoints huggingface_hub 2.4.0 (the version the C(model_sync) role installs) calls, read in its
    wheel: C(HfApi.model_info) (C(hf_api.py:3145), the URL at C(:3202-3206)), C(HfApi.list_repo_tree)
    (C(hf_api.py:3867), the URL and query at C(:4022-4026); pages in C(utils/_pagination.py:41-53); a file entry is
    C(RepoFile), C(hf_api.py:680-718)), C(hf_hub_url) (C(constants.py:70)), and the header ranges of
    C(HfApi.parse_safetensors_file_metadata) (C(hf_api.py:6882), C(:6944), C(:6954)), which C(get_safetensors_metadata)
    (C(hf_api.py:6669)) calls."
  - Never changes anything; it only reads, in check mode too.
options:
  repo_id:
    description:
      - The model repo, for example V(Qwen/Qwen3.5-122B-A10B-FP8).
    type: str
    required: true
  revision:
    description:
      - A branch, tag or pull-request ref (V(refs/pr/<n>)), or a full 40-hex commit.
      - In the cache it resolves through C(refs/<revision>), so a branch the cache knows is taken at the commit the
        cache has, without asking the Hub whether it moved.
    type: str
    default: main
  cache_dir:
    description:
      - The Hugging Face hub cache of the head (C(<cache_dir>/models--<org>--<name>/)), where a complete snapshot
        answers without the network and whose blobs count in RV(present_bytes). It need not exist.
    type: path
    required: true
  endpoint:
    description:
      - The Hub's base URL. The C(model_sync) role passes its C(model_sync_hf_endpoint) (what it sets E(HF_ENDPOINT) to)
        when it is set, for a mirror or a proxy.
    type: str
    default: https://huggingface.co
  token:
    description:
      - "A Hugging Face access token, sent as C(Authorization: Bearer <token>) to O(endpoint) only (never to a redirect's
        target, such as the storage of the LFS files, nor to another host). Needed for a gated or private repo."
      - It is never returned, and is masked in the messages.
    type: str
  timeout:
    description:
      - Seconds each HTTP request waits for the Hub (connecting, then each read).
    type: int
    default: 30
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
notes:
  - Run it on the head, the one node with access to the Hub. It needs nothing but Python there; it uses Ansible's own
    HTTP client (C(ansible.module_utils.urls)), through the proxy the module's environment sets (C(https_proxy)).
  - "Fails with a message that names the repo, the revision and the endpoint: for HTTP 401 or 403 that the repo is
    gated or private (give C(model_sync_hf_token)); for 404 that the repo or the revision is not found; for a failed
    connection that the endpoint is unreachable from this host. When the cache could not answer either, the message
    also says why."
  - Only safetensors weights are understood; a repo without them fails.
  - The index's C(metadata.total_size) is what the tool that saved the checkpoint counted, which may differ slightly
    from the shards' tensor data that RV(source=cache) sums. Without it, the shards' headers are read instead (with a
    warning).
  - "The Hub's answers and the model's files are untrusted input: a safetensors header of 64 MiB or more is refused
    without being fetched, as is one listing more than 524,288 tensors or a number past 64 bits, and a JSON answer
    nested more than 64 levels deep; each fails with a message naming the file (see M(sparkops.inference.hf_snapshot))."
seealso:
  - module: sparkops.inference.hf_snapshot
  - name: Hub API endpoints
    description: The Hub's HTTP API.
    link: https://huggingface.co/docs/hub/api
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Read the model's shape and size on the head, before it is downloaded
  sparkops.inference.model_metadata:
    repo_id: "{{ sparkops_model_repo }}"
    revision: "{{ sparkops_model_revision }}"
    cache_dir: "{{ model_sync_cache_dir }}"
    endpoint: "{{ model_sync_hf_endpoint | default('', true) or omit }}"
    token: "{{ model_sync_hf_token | default('', true) or omit }}"
  delegate_to: "{{ groups['spark_head'][0] }}"
  run_once: true
  register: model_metadata

- name: Show it
  ansible.builtin.debug:
    msg: >-
      {{ model_metadata.architecture }} at {{ model_metadata.commit }} ({{ model_metadata.source }}):
      {{ (model_metadata.weight_bytes / 1e9) | round(1) }} GB of weights,
      {{ model_metadata.config.num_hidden_layers }} layers,
      {{ ((model_metadata.snapshot_bytes - model_metadata.present_bytes) / 1e9) | round(1) }} GB to download
"""

RETURN = r"""
source:
  description: V(cache) when a complete snapshot in O(cache_dir) answered, V(hub) when the Hub did.
  returned: success
  type: str
  sample: hub
commit:
  description: The commit the revision is at.
  returned: success
  type: str
  sample: 0123456789abcdef0123456789abcdef01234567
config:
  description: The parsed C(config.json) of the model at RV(commit).
  returned: success
  type: dict
  sample: {architectures: [Qwen3MoeForCausalLM], model_type: qwen3_moe, num_hidden_layers: 48, num_attention_heads: 32}
architecture:
  description: The first of C(config.json)'s C(architectures); null when it names none.
  returned: success
  type: str
  sample: Qwen3MoeForCausalLM
weight_bytes:
  description:
    - The bytes of the model's weights, those of the shards that C(model.safetensors.index.json) names (or of
      C(model.safetensors), or without either of the top-level C(*.safetensors) files).
    - From the Hub, the index's C(metadata.total_size) when it has one; else, and from the cache, the tensor data by
      the safetensors headers.
  returned: success
  type: int
  sample: 126468718592
snapshot_bytes:
  description: The bytes of all the files of the snapshot, which a download writes.
  returned: success
  type: int
  sample: 126521073664
files:
  description: The number of files of the snapshot.
  returned: success
  type: int
  sample: 45
present_bytes:
  description:
    - The bytes of the snapshot's files already in O(cache_dir), whose blob (C(blobs/<etag>)) is there whole; a
      download does not fetch them again. 0 when there are none.
    - With RV(source=cache), all of them (RV(snapshot_bytes)).
  returned: success
  type: int
  sample: 0
"""

# Imports follow the documentation, as validate-modules requires.
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._model_metadata import (  # noqa: E402
    DEFAULT_ENDPOINT,
    DEFAULT_TIMEOUT,
    MetadataError,
    read_model_metadata,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "repo_id": {"type": "str", "required": True},
            "revision": {"type": "str", "default": "main"},
            "cache_dir": {"type": "path", "required": True},
            "endpoint": {"type": "str", "default": DEFAULT_ENDPOINT},
            "token": {"type": "str", "no_log": True},
            "timeout": {"type": "int", "default": DEFAULT_TIMEOUT},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg=f"timeout must be at least 1, not {p['timeout']}")
    if not p["endpoint"].startswith(("http://", "https://")):
        module.fail_json(msg=f"endpoint must be an http:// or https:// URL, not {p['endpoint']!r}")
    try:
        metadata = read_model_metadata(
            p["repo_id"],
            p["revision"],
            cache_dir=p["cache_dir"],
            endpoint=p["endpoint"],
            token=p["token"] or None,
            timeout=p["timeout"],
        )
    except MetadataError as exc:
        module.fail_json(msg=str(exc), changed=False)
    for warning in metadata.warnings:
        module.warn(warning)
    module.exit_json(changed=False, **metadata.as_dict())


if __name__ == "__main__":
    main()
