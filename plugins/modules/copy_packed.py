#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: copy_packed
short_description: Copy files of the controller to a node folder as one archive, root-owned 0644
version_added: 1.1.0
description:
  - An action plugin. It packs O(files) of the controller folder O(src) into one tar archive, sends it and unpacks it
    into O(dest) on the node with M(ansible.builtin.unarchive), which changes only the files whose content differs.
    One transfer and two module runs on the node (the folder, the unpack), however many files; C(ansible.builtin.copy)
    of a folder runs a module per file.
  - O(dest) is made first when it is missing (root, 0755). The files arrive owned by root, mode 0644; folders 0755.
  - The archive depends on the files' content alone (names sorted, times, owners and modes fixed), so the same files
    give the same archive and a second run changes nothing.
  - The archive is made in a folder made for the run (mkdtemp, 0700) inside Ansible's local temporary folder, and
    removed after the unpack; at a fixed path another user of the controller could make it first and change it.
  - Fails naming the file when one of O(files) is not a regular file inside O(src) (links are followed), and when
    O(files) is empty.
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.actiongroup_controller
attributes:
  check_mode:
    support: full
    details:
      - Nothing is written on the node; the task reports a change when the folder would be made or a file would change.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  src:
    description: The folder on the controller the files are in.
    type: path
    required: true
  files:
    description: The files to copy, relative to O(src) (no C(..)); they keep these names under O(dest).
    type: list
    elements: str
    required: true
  dest:
    description: The folder on the node.
    type: path
    required: true
  prefix:
    description: The prefix of the controller's private folder for the archive (says what it holds).
    type: str
    default: sparkops-pack-
notes:
  - Needs root on the node (C(become=true)) for the owner.
seealso:
  - module: ansible.builtin.unarchive
  - module: ansible.builtin.copy
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Send the wheelhouse's wheels to every node in one archive
  sparkops.inference.copy_packed:
    src: /srv/wheelhouse
    files: "{{ query('ansible.builtin.fileglob', '/srv/wheelhouse/*.whl') | map('basename') }}"
    dest: /opt/sparkops/wheelhouse
    prefix: sparkops-wheelhouse-
  become: true
  register: unpacked
"""

RETURN = r"""
files:
  description: The files packed, sorted.
  returned: success
  type: list
  elements: str
  sample: [_a.py, _b.py]
dest:
  description: The node folder.
  returned: always
  type: str
  sample: /opt/sparkops/wheelhouse
extract_results:
  description: What M(ansible.builtin.unarchive) ran (its own return value).
  returned: when the archive was unpacked
  type: dict
  sample: {cmd: [/usr/bin/gtar, --extract, -C, /opt/sparkops/wheelhouse], err: "", out: "", rc: 0}
"""
