#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: snapshot_distribute
short_description: Copy a model's Hugging Face hub cache folder from the head to the workers over the fabric, fast
version_added: 1.0.0
description:
  - Runs on the head (the node that downloaded the model) and copies the repo folder O(repo_dir) of its hub cache
    (C(models--<org>--<name>)) to the same path on every O(targets), over ssh and rsync only, keeping the cache layout
    C(blobs/<etag>), C(snapshots/<commit>/<path>) (relative symlinks C(../../blobs/<etag>)) and C(refs/<revision>).
  - "First the blobs. The module lists the head's blobs (regular files in C(blobs/), without C(*.incomplete)
    downloads and hidden files) and asks each target, with one ssh command, which it holds; a blob is sent to a
    target that lacks it or holds it at another size. Blobs go largest first, up to O(streams) at once on each link,
    since one stream over ssh is far slower than the link."
  - "With O(topology=chain) the links are C(head -> targets[0]), C(targets[0] -> targets[1]), and so on, and the
    blobs go cut-through (O(cut_through)): each blob is one stream along the chain, which every worker writes to
    disk while it passes it on (a small relay program of the collection, run with O(python) on each node, started
    over ssh), so a worker never waits for a whole blob and the total time hardly grows with the number of workers.
    A target that already holds a blob is skipped (the blob goes to the targets after it from it). With
    O(topology=star) the head sends to every target itself, sharing its link among them."
  - "Each node writes a blob into C(blobs/.sparkops-partial/) and renames it into place, with the head's mtime and
    permission bits (never setuid, setgid or sticky: a blob goes as a plain file, with C(rsync -rt) or the relay, no
    symlink, device, owner or group), only once it holds all of its bytes; no file ever appears half written under its
    final name. A cut-through stream that fails is not lost: its complete copies stay, and each link of its path is
    sent again with rsync, which resumes the partial files it left. A target that keeps a partial file from an
    interrupted run gets that blob with rsync too (C(--partial-dir)), resuming it. Without O(cut_through) every blob
    goes link by link with rsync (a worker passes a blob on once it holds it whole). A failed rsync is tried again
    O(retries) times; then the module fails, naming the file, the link and rsync's error, and blobs already sent
    stay."
  - Then the metadata. Once every blob is on every target, the head sends C(snapshots/) and then C(refs/) to each
    target with C(rsync -a), symlinks as symlinks; refs last, so that a ref never names a snapshot a target lacks.
  - A run that finds everything in place sends no blob and changes nothing.
  - Blob contents are not compared, only names and sizes. Verify the copies (for example with
    M(sparkops.inference.hf_snapshot) in O(sparkops.inference.hf_snapshot#module:mode=full)) and delete a bad blob
    before running this module again.
options:
  repo_dir:
    description:
      - The model's folder in the hub cache on the head, for example
        C(/var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8).
      - It is copied to the same path on every target. An absolute path.
    type: path
    required: true
  targets:
    description:
      - The workers' fabric addresses (or names that resolve to them), in chain order.
      - With O(topology=chain) each one must reach the next over ssh.
    type: list
    elements: str
    required: true
  topology:
    description:
      - V(chain) sends from the head to the first target and from each target to the next.
      - V(star) sends from the head to every target, as a baseline to compare with.
    type: str
    choices: [chain, star]
    default: chain
  streams:
    description:
      - How many rsyncs run at once on each link (each sending one blob).
    type: int
    default: 4
  retries:
    description:
      - How many times a failed rsync is tried again (it resumes the partial file) before the module fails.
    type: int
    default: 3
  bwlimit_kbps:
    description:
      - Limit each rsync stream to this many KiB/s (C(rsync --bwlimit)); V(0) for no limit. For sharing a link with
        other traffic, and for tests that need a transfer slow enough to interrupt.
    type: int
    default: 0
  ssh_user:
    description:
      - The user ssh logs in as on the targets; it must be able to write O(repo_dir).
      - A POSIX user name (letters, digits, C(.), C(_), C(-), not first, at most 32 characters); anything else fails
        the module before any command runs (ssh reads a word starting with C(-) as an option).
    type: str
    default: root
  ssh_key:
    description:
      - The private key ssh uses (with C(IdentitiesOnly=yes)).
      - The same path must hold the key on the head and on every target, since a target relays to the next one with it.
      - Default ssh's own choice of keys.
    type: path
  ssh_known_hosts:
    description:
      - The known hosts file ssh uses, the same path on every node (the role model_sync writes the workers' host keys
        there, read over Ansible's own connection).
      - Default ssh's own.
    type: path
  ssh_host_key_checking:
    description:
      - C(strict) - a target whose host key is not in O(ssh_known_hosts) is refused (C(StrictHostKeyChecking=yes));
        pin the keys there first.
      - C(accept-new) - an unknown host key is accepted and added on first contact (trust on first use; whoever answers
        on a target's address first is trusted from then on).
      - A changed host key fails with both.
    type: str
    choices: [strict, accept-new]
    default: strict
    version_added: 1.1.0
  ssh_port:
    description:
      - The ssh port of the targets.
    type: int
    default: 22
  ssh_multiplex:
    description:
      - Keep one ssh connection open per stream of each link for all its files (OpenSSH connection sharing, a
        C(ControlMaster) per stream), so that a file costs no ssh handshake (a relayed file costs two without it).
        Each stream keeps its own connection and ssh process, so the streams still encrypt in parallel.
      - The masters are closed at the end; one left by an interrupted run ends after 60 idle seconds.
      - A master that cannot start only costs the handshakes back (the commands then connect directly).
      - Needs O(ssh_control_dir), or O(ssh_key) whose folder is then used; without either, no connection is shared.
    type: bool
    default: true
  ssh_control_dir:
    description:
      - Where the ssh control sockets go, the same path on every node (a relay keeps its own masters there). It must
        be a folder only the O(ssh_user) can write, since a socket there is trusted with the connection.
      - Default the folder of O(ssh_key).
    type: path
  rsync:
    description:
      - The rsync program on the head and on every target (also passed as C(--rsync-path) when not V(rsync)).
    type: str
    default: rsync
  cut_through:
    description:
      - Send each blob as one stream along the whole chain (or to a star's target), every worker writing it while it
        passes it on, instead of link by link with rsync (store and forward, where each worker waits for the whole
        blob before passing it on; about one blob's time more per hop).
      - rsync still resumes partial files and replaces a failed stream.
    type: bool
    default: true
  python:
    description:
      - The Python 3 interpreter on every target, which runs the cut-through relay (standard library only).
      - The head runs it with the interpreter of this module.
    type: str
    default: python3
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - Lists what each target holds and returns the plan in RV(would_transfer); sends nothing.
      - The metadata of a target that needs no blob is compared with a C(--dry-run) rsync.
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - Needs C(rsync) on every node (3.2.4 or later where O(repo_dir) has spaces), C(ssh) on the head and, with
    O(topology=chain), on every target but the last.
  - With O(cut_through), needs Python 3 (O(python)) on every target; the relay's source goes with its command line,
    base64-encoded, and its processes are named C(sparkops-blob-relay) (C(pkill -f sparkops-blob-relay) stops them).
  - Uses C(ssh) options C(BatchMode=yes) and C(ConnectTimeout=30); the key must have no passphrase.
  - Leaves in place the blobs, snapshots and refs a target has and the head lacks.
seealso:
  - module: sparkops.inference.hf_snapshot
  - name: Understand caching (huggingface_hub)
    description: The layout of the hub cache.
    link: https://huggingface.co/docs/huggingface_hub/guides/manage-cache
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Send the model from the head to the workers over the fabric, passing it along the chain
  sparkops.inference.snapshot_distribute:
    repo_dir: /var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
    targets: "{{ groups['spark_workers'] | map('extract', hostvars, 'sparkops_fabric_ip') | list }}"
    ssh_key: /etc/sparkops/ssh/id_ed25519
    ssh_known_hosts: /etc/sparkops/ssh/known_hosts
  register: model_copy
  when: inventory_hostname in groups['spark_head']

- name: Show how fast it went
  ansible.builtin.debug:
    msg: >-
      {{ model_copy.transferred | length }} blobs, {{ (model_copy.bytes / 1e9) | round(1) }} GB in
      {{ model_copy.seconds | round(1) }} s
  when: model_copy is changed

- name: The baseline, the head sending to every worker itself with 8 rsyncs each
  sparkops.inference.snapshot_distribute:
    repo_dir: /var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
    targets: [192.168.100.11, 192.168.100.12, 192.168.100.13]
    topology: star
    streams: 8
    ssh_key: /etc/sparkops/ssh/id_ed25519

- name: What would be sent
  sparkops.inference.snapshot_distribute:
    repo_dir: /var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
    targets: [192.168.100.11]
  check_mode: true
  register: model_plan
"""

RETURN = r"""
changed:
  description: Whether a blob was sent or rsync changed a snapshot or ref (in check mode, would).
  returned: always
  type: bool
  sample: true
transferred:
  description:
    - The blobs sent, in the order they started; empty in check mode.
    - On a failure, those sent before it.
  returned: always
  type: list
  elements: dict
  contains:
    file:
      description: The blob's name in C(blobs/).
      type: str
      returned: always
      sample: 5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c
    source:
      description: The node that sent it, V(head) or a target.
      type: str
      returned: always
      sample: head
    target:
      description: The target that received it.
      type: str
      returned: always
      sample: 192.168.100.11
    bytes:
      description: Its size.
      type: int
      returned: always
      sample: 3992001072
    started:
      description:
      - When it started, in seconds since the distribution started (the timeline of the fan-out).
      - A cut-through stream gives every link of its path the same start and time.
      type: float
      returned: always
      sample: 12.031
    seconds:
      description: How long it took, retries included.
      type: float
      returned: always
      sample: 4.812
bytes:
  description: The bytes of the blobs sent over all links (a resumed blob counts whole).
  returned: always
  type: int
  sample: 378000000000
seconds:
  description: How long the module took, from the listing to the last metadata rsync.
  returned: always
  type: float
  sample: 102.5
per_target:
  description: Per target, the blobs it received and their bytes.
  returned: always
  type: dict
  sample:
    192.168.100.11: {files: [5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c], bytes: 3992001072}
plan:
  description: Per target, the blobs it needed at the start (largest first) and their bytes.
  returned: always
  type: dict
  sample:
    192.168.100.11: {files: [5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c], bytes: 3992001072}
would_transfer:
  description: In check mode, RV(plan), what a run would send to each target.
  returned: check mode
  type: dict
  sample:
    192.168.100.11: {files: [5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c], bytes: 3992001072}
metadata:
  description:
    - Per target, the changes to C(snapshots/) and C(refs/) rsync itemized (C(--itemize-changes)); empty when none.
    - In check mode, those a C(--dry-run) found for the targets that need no blob.
  returned: always
  type: dict
  sample:
    192.168.100.11: ["cd+++++++++ snapshots/0123456789abcdef0123456789abcdef01234567/", ">f+++++++++ refs/main"]
relay_failures:
  description:
    - The cut-through streams that failed and were replaced by rsync, link by link, each with the relay's error (the
      node and what it saw). Empty when none.
  returned: always
  type: list
  elements: str
  sample: []
topology:
  description: O(topology).
  returned: always
  type: str
  sample: chain
streams:
  description: O(streams).
  returned: always
  type: int
  sample: 4
"""

# Imports follow the documentation, as validate-modules requires.
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_distribute import distribute  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import TOPOLOGIES  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import SshTransport, check_ssh_target  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "repo_dir": {"type": "path", "required": True},
            "targets": {"type": "list", "elements": "str", "required": True},
            "topology": {"type": "str", "choices": list(TOPOLOGIES), "default": "chain"},
            "streams": {"type": "int", "default": 4},
            "retries": {"type": "int", "default": 3},
            "bwlimit_kbps": {"type": "int", "default": 0},
            "ssh_user": {"type": "str", "default": "root"},
            "ssh_key": {"type": "path"},
            "ssh_known_hosts": {"type": "path"},
            "ssh_host_key_checking": {"type": "str", "choices": ["strict", "accept-new"], "default": "strict"},
            "ssh_port": {"type": "int", "default": 22},
            "ssh_multiplex": {"type": "bool", "default": True},
            "ssh_control_dir": {"type": "path"},
            "rsync": {"type": "str", "default": "rsync"},
            "cut_through": {"type": "bool", "default": True},
            "python": {"type": "str", "default": "python3"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not 1 <= p["ssh_port"] <= 65535:
        module.fail_json(msg=f"ssh_port must be between 1 and 65535, not {p['ssh_port']}", changed=False)
    control_dir = (p["ssh_control_dir"] or (os.path.dirname(p["ssh_key"]) if p["ssh_key"] else None)) if p["ssh_multiplex"] else None
    try:
        for target in p["targets"]:
            check_ssh_target(target)
        transport = SshTransport(
            user=p["ssh_user"],
            key=p["ssh_key"],
            known_hosts=p["ssh_known_hosts"],
            host_key_checking="yes" if p["ssh_host_key_checking"] == "strict" else "accept-new",
            port=p["ssh_port"],
            rsync=p["rsync"],
            control_dir=control_dir,
            python=p["python"],
        )
        result = distribute(
            p["repo_dir"],
            p["targets"],
            transport,
            topology=p["topology"],
            streams=p["streams"],
            retries=p["retries"],
            bwlimit_kbps=p["bwlimit_kbps"],
            cut_through=p["cut_through"],
            check_mode=module.check_mode,
        )
    except DistributeError as exc:
        partial = exc.result.as_dict() if exc.result is not None else {"changed": False}
        module.fail_json(msg=str(exc), **partial)
    for failure in result.relay_failures:
        module.warn(f"a cut-through stream failed and rsync sent its blob link by link: {failure}")
    module.exit_json(**result.as_dict())


if __name__ == "__main__":
    main()
