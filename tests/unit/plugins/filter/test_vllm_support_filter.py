# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_support filter: wiring to plugin_utils/_vllm_support.py and its error messages (which name the filter)."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.vllm_support import FilterModule

vllm_support = FilterModule().filters()["vllm_support"]


def test_unset_settings_take_the_role_defaults() -> None:
    result = vllm_support({}, "x86_64")
    assert result == {"spark": False, "vllm_version": "0.32.0", "source": "PyPI", "problems": [], "notes": []}


def test_a_spark_with_a_cpu_torch_release_is_refused() -> None:
    result = vllm_support({"vllm_serve_version": "0.15.1"}, "aarch64")
    assert result["spark"] is True and len(result["problems"]) == 1 and result["problems"][0].startswith("vllm_serve_version 0.15.1 ")


def test_ray_with_a_release_newer_than_the_table_is_refused_on_any_host() -> None:
    result = vllm_support({"vllm_serve_version": "0.35.0", "vllm_serve_backend": "ray"}, "x86_64")
    assert len(result["problems"]) == 1 and result["problems"][0].startswith("vllm_serve_version 0.35.0 with vllm_serve_backend ray: ")
    assert vllm_support({"vllm_serve_version": "0.35.0", "vllm_serve_backend": "mp"}, "x86_64")["problems"] == []
    assert vllm_support({"vllm_serve_version": "0.35.0"}, "x86_64")["problems"] == []  # mp, the role's default


@pytest.mark.parametrize(
    ("settings", "architecture"),
    [
        ("vllm_serve_version=0.30.0", "x86_64"),
        ({"vllm_serve_versoin": "0.30.0"}, "x86_64"),
        ({"vllm_serve_version": 0.3}, "x86_64"),
        ({}, None),
        ({}, ["aarch64"]),
    ],
)
def test_bad_input_errors_name_the_filter(settings: t.Any, architecture: t.Any) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.vllm_support"):
        vllm_support(settings, architecture)
