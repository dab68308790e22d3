# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The table of vLLM builds a host can run (plugin_utils/_vllm_support.py)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_support import (
    AARCH64_PYPI,
    AARCH64_PYPI_MISSING,
    NEWEST_CHECKED,
    NGC_VLLM,
    ROLE_DEFAULTS,
    Settings,
    SupportSettingsError,
    aarch64_wheel,
    check,
    image_vllm_version,
    parse_release,
)

REPO = Path(__file__).resolve().parents[4]


def verdict(arch: str = "aarch64", **settings: t.Any) -> dict[str, t.Any]:
    return check(Settings.from_mapping({f"vllm_serve_{k}": v for k, v in settings.items()}), arch).as_dict()


def test_role_defaults_are_the_roles() -> None:
    defaults = yaml.safe_load((REPO / "roles" / "vllm_serve" / "defaults" / "main.yml").read_text())
    assert {name: defaults[name] for name in ROLE_DEFAULTS} == ROLE_DEFAULTS


def test_the_pypi_rows_cover_every_release_without_gap() -> None:
    assert AARCH64_PYPI[0].first == (0, 0, 0) and AARCH64_PYPI[-1].before is None
    for row, following in zip(AARCH64_PYPI, AARCH64_PYPI[1:], strict=False):
        assert row.before == following.first
    assert all(aarch64_wheel(release).runs for release in AARCH64_PYPI_MISSING)  # a gap inside a row that runs


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("0.30.0", (0, 30, 0)),
        ("0.30", (0, 30, 0)),
        ("0.13.0+cu130", (0, 13, 0)),
        ("0.20.0rc1", (0, 20, 0)),
        ("0.6.1.post2", (0, 6, 1)),
        (" 0.11.1 ", (0, 11, 1)),
        ("latest", None),
        (">=0.30.0", None),
        ("", None),
        ("0.30.0 --pre", None),
        ("0", None),
    ],
)
def test_parse_release(version: str, release: tuple[int, int, int] | None) -> None:
    assert parse_release(version) == release


# aarch64 (a Spark), venv runtime, PyPI, the Ray backend (mp adds its own refusal below 0.11.1, test_mp_needs_0_11_1):
# (version, refused, words the one message holds).
AARCH64_PYPI_CASES = [
    ("0.10.2", True, ["vllm_serve_version 0.10.2", "no aarch64 wheel"]),
    ("0.11.0", True, ["vllm_serve_version 0.11.0", "no aarch64 wheel"]),
    ("0.11.1", True, ["vllm_serve_version 0.11.1", "no aarch64 wheel"]),
    ("0.12.0", True, ["vllm_serve_version 0.12.0", "CPU-only", "from 0.20.0 on"]),
    ("0.15.1", True, ["vllm_serve_version 0.15.1", "CPU-only"]),
    ("0.19.1", True, ["vllm_serve_version 0.19.1", "CPU-only"]),
    ("0.20.0", False, ["vllm_serve_version 0.20.0", "sm_120", "sm_121"]),
    ("0.21.0", True, ["vllm_serve_version 0.21.0", "no aarch64 wheel of vLLM 0.21.0"]),
    ("0.30.0", False, ["vllm_serve_version 0.30.0", "sm_120", "no kernel image"]),
    ("0.31.0", False, ["vllm_serve_version 0.31.0", "sm_121"]),
    ("0.33.0", False, ["sm_121"]),
    ("0.34.0", False, ["vllm_serve_version 0.34.0", "sm_121"]),  # the newest checked: one note, Ray not refused
]


@pytest.mark.parametrize(("version", "refused", "words"), AARCH64_PYPI_CASES)
def test_aarch64_from_pypi(version: str, refused: bool, words: list[str]) -> None:
    result = verdict(version=version, backend="ray")
    assert result["spark"] is True and result["source"] == "PyPI" and result["vllm_version"] == version
    messages = result["problems"] if refused else result["notes"]
    assert len(messages) == 1 and all(word in messages[0] for word in words), messages
    assert (result["notes"] if refused else result["problems"]) == []
    if refused:
        assert "vllm_serve_pip_index_url" in messages[0] and "docker" in messages[0]  # the ways out


@pytest.mark.parametrize("version", ["0.34.1", "0.35.0", "0.40.0"])
def test_aarch64_newer_than_the_table_runs_with_a_second_note_with_mp(version: str) -> None:
    result = verdict(version=version, backend="mp")
    assert result["problems"] == [] and len(result["notes"]) == 2
    assert result["notes"][1] == (
        f"vllm_serve_version {version} is newer than the newest release this check knows (0.34.0); it is taken to install like 0.20.0 and later"
    )


RAY_TOO_NEW = (
    "vllm_serve_version {version} with vllm_serve_backend ray: this check knows vLLM's Ray executor only up to 0.34.0 "
    "(0.34.0 removed the legacy compiled-graph executor; RayExecutorV2 subclasses MultiprocExecutor), so a newer release "
    "may not run it; use vllm_serve_backend mp (vLLM's own multi-node mode), or a release up to 0.34.0"
)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("version", ["0.34.1", "0.35.0", "1.0.0"])
@pytest.mark.parametrize(
    "source",
    [{}, {"pip_index_url": "https://wheels.example/simple"}, {"pip_extra_args": "--no-index --find-links /srv/wheels"}],
)
def test_ray_with_a_release_newer_than_the_table_is_refused_everywhere_from_any_source(arch: str, version: str, source: dict[str, str]) -> None:
    result = verdict(arch, version=version, backend="ray", **source)
    assert result["problems"] == [RAY_TOO_NEW.format(version=version)], result["problems"]


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("custom", [{}, {"pip_index_url": "https://wheels.example/simple"}])
def test_ray_up_to_the_newest_checked_release_is_not_refused(arch: str, custom: dict[str, str]) -> None:
    assert verdict(arch, version=".".join(map(str, NEWEST_CHECKED)), backend="ray", **custom)["problems"] == []
    assert verdict(arch, version="0.35.0", backend="mp", **custom)["problems"] == []


def test_docker_with_ray_and_a_newer_image_is_refused_once_for_the_runtime() -> None:
    problems = verdict("x86_64", runtime="docker", backend="ray", image="vllm/vllm-openai:v0.35.0")["problems"]
    assert len(problems) == 1 and problems[0].startswith("vllm_serve_runtime docker with vllm_serve_backend ray is not supported")
    assert verdict("x86_64", runtime="docker", backend="mp", image="vllm/vllm-openai:v0.35.0")["problems"] == []


def test_the_role_default_runs_on_a_spark_and_in_the_lab() -> None:
    assert verdict()["problems"] == [] and len(verdict()["notes"]) == 1
    assert verdict("x86_64") == {"spark": False, "vllm_version": "0.32.0", "source": "PyPI", "problems": [], "notes": []}


@pytest.mark.parametrize(
    "custom",
    [
        {"pip_index_url": "https://user:s3cret@wheels.example/simple"},
        {"pip_extra_args": "--no-index --find-links /opt/sparkops/wheelhouse"},
        {"pip_extra_args": "--extra-index-url=https://wheels.example/cu130"},
        {"pip_extra_args": "-i https://wheels.example/simple"},
        {"pip_extra_args": "-f /srv/wheels"},
    ],
)
def test_aarch64_from_a_custom_index_is_not_refused_but_noted(custom: dict[str, str]) -> None:
    result = verdict(version="0.15.1", **custom)
    assert result["problems"] == [] and result["source"] == "custom index"
    assert len(result["notes"]) == 1 and "CPU-only" in result["notes"][0] and "sm_121" in result["notes"][0]
    assert "s3cret" not in str(result) and "wheels.example" not in str(result)  # the index may carry credentials


def test_extra_args_that_choose_no_source_keep_pypi() -> None:
    assert verdict(version="0.15.1", pip_extra_args="--no-cache-dir --index-strategy x")["source"] == "PyPI"
    assert verdict(version="0.15.1", pip_extra_args="--no-cache-dir")["problems"] != []


def test_extra_args_that_do_not_split_are_refused() -> None:
    result = verdict("x86_64", pip_extra_args="--find-links '/srv/wheels")
    assert result["problems"] == ["vllm_serve_pip_extra_args does not split into words (an unclosed quote?)"]


@pytest.mark.parametrize("arch", ["aarch64", "arm64", " AArch64 "])
def test_arm_names_are_a_spark(arch: str) -> None:
    assert verdict(arch, version="0.15.1")["spark"] is True


@pytest.mark.parametrize("version", ["0.9.2", "0.11.0", "0.15.1", "0.21.0"])
def test_not_a_spark_gets_only_the_generic_checks(version: str) -> None:
    result = verdict("x86_64", version=version, backend="ray")  # mp refuses a release before 0.11.1 on any host
    assert result["spark"] is False and result["problems"] == [] and result["notes"] == []


@pytest.mark.parametrize(("arch", "version"), [("x86_64", "0.11.0"), ("x86_64", "0.10.2"), ("aarch64", "0.11.0")])
def test_mp_needs_0_11_1(arch: str, version: str) -> None:
    problems = verdict(arch, version=version, backend="mp")["problems"]
    assert f"vllm_serve_version {version} with vllm_serve_backend mp" in problems[-1] and "since 0.11.1" in problems[-1]
    assert verdict("x86_64", version="0.11.1", backend="mp")["problems"] == []


@pytest.mark.parametrize("version", ["latest", ">=0.30.0", "", "0.30.0 --pre"])
def test_a_version_that_is_not_one_release_is_refused(version: str) -> None:
    assert verdict("x86_64", version=version)["problems"] == [
        f"vllm_serve_version must be one exact vLLM release like 0.32.0 (the role installs vllm==<version>), got {version!r}"
    ]


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_docker_with_ray_is_refused_everywhere(arch: str) -> None:
    result = verdict(arch, runtime="docker", backend="ray", image="nvcr.io/nvidia/vllm:26.10-py3")
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("vllm_serve_runtime docker with vllm_serve_backend ray is not supported")
    assert "raylet" in result["problems"][0] and "vllm_serve_backend mp" in result["problems"][0]


def test_docker_with_ray_and_no_image_names_both() -> None:
    problems = verdict("x86_64", runtime="docker", backend="ray")["problems"]
    assert len(problems) == 2 and "vllm_serve_backend ray" in problems[0] and "vllm_serve_image pinned" in problems[1]


def test_docker_mp_with_nvidias_image_runs() -> None:
    result = verdict(runtime="docker", backend="mp", image="nvcr.io/nvidia/vllm:26.10-py3@sha256:" + "a" * 64)
    assert result == {"spark": True, "vllm_version": "0.31.0", "source": "image", "problems": [], "notes": []}


def test_docker_mp_with_an_image_older_than_mp_is_refused() -> None:
    problems = verdict(runtime="docker", backend="mp", image="nvcr.io/nvidia/vllm:25.10-py3")["problems"]
    assert problems == [
        "vllm_serve_image nvcr.io/nvidia/vllm:25.10-py3 (vLLM 0.10.2) with vllm_serve_backend mp: vLLM's multi-node mp mode "
        "(--nnodes, --node-rank, --master-addr) exists only since 0.11.1; use an image with vLLM 0.11.1 or later"
    ]
    assert verdict("x86_64", runtime="docker", backend="mp", image="vllm/vllm-openai:v0.11.0")["problems"] != []


@pytest.mark.parametrize(
    ("arch", "words"),
    [("aarch64", ["arm64 build for CUDA 13", "vLLM 0.11.1 or later"]), ("x86_64", ["vLLM 0.11.1 or later"])],
)
def test_docker_mp_with_an_unknown_image_is_noted(arch: str, words: list[str]) -> None:
    result = verdict(arch, runtime="docker", backend="mp", image="ghcr.io/example/spark-vllm:2026.09")
    assert result["problems"] == [] and result["vllm_version"] is None and len(result["notes"]) == 1
    assert result["notes"][0].startswith("vllm_serve_image ghcr.io/example/spark-vllm:2026.09: not an image this check knows")
    assert all(word in result["notes"][0] for word in words)


def test_docker_ignores_vllm_serve_version() -> None:
    assert verdict(runtime="docker", backend="mp", version="latest", image="vllm/vllm-openai:v0.30.0")["problems"] == []


@pytest.mark.parametrize("image", ["", "nvcr.io/nvidia/vllm", "registry.local:5000/vllm"])
def test_docker_needs_a_pinned_image(image: str) -> None:
    problems = verdict("x86_64", runtime="docker", backend="mp", image=image)["problems"]
    assert problems == [
        f"vllm_serve_runtime docker needs vllm_serve_image pinned by tag or digest (e.g. nvcr.io/nvidia/vllm:26.10-py3@sha256:...), got {image!r}"
    ]


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("nvcr.io/nvidia/vllm:26.05-py3", "0.20.1"),
        ("nvcr.io/nvidia/vllm:26.05.post1-py3", "0.20.1"),
        ("nvcr.io/nvidia/vllm:26.02-py3", "0.15.1"),
        ("nvcr.io/nvidia/vllm:26.08-py3@sha256:abc", "0.27.1"),
        ("nvcr.io/nvidia/vllm:26.10-py3@sha256:abc", "0.31.0"),
        ("nvcr.io/nvidia/vllm:99.01-py3", None),
        ("nvcr.io/nvidia/vllm@sha256:abc", None),
        ("vllm/vllm-openai:v0.12.0", "0.12.0"),
        ("docker.io/vllm/vllm-openai:v0.30.0-cu130", "0.30.0"),
        ("vllm/vllm-openai:latest", None),
        ("registry.local:5000/vllm:0.30.0", None),
    ],
)
def test_image_vllm_version(image: str, version: str | None) -> None:
    assert image_vllm_version(image) == version


def test_every_ngc_release_maps_to_a_release() -> None:
    assert all(parse_release(version) for version in NGC_VLLM.values())


@pytest.mark.parametrize(("name", "value"), [("runtime", "podman"), ("backend", "uni")])
def test_unknown_runtime_or_backend_is_refused(name: str, value: str) -> None:
    assert verdict("x86_64", **{name: value})["problems"] == [
        f"vllm_serve_{name} must be one of {'venv, docker' if name == 'runtime' else 'ray, mp'}, got {value!r}"
    ]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["vllm_serve_version"], "must be a dict"),
        ({"vllm_serve_verison": "0.30.0"}, "unknown setting(s): vllm_serve_verison"),
        ({"vllm_serve_version": 0.3}, "vllm_serve_version must be a string (quote it in YAML, e.g. '0.30.0'), got 0.3"),
        ({"vllm_serve_backend": None}, "vllm_serve_backend must be a string, got None"),
    ],
)
def test_bad_settings_name_the_variable(values: t.Any, message: str) -> None:
    with pytest.raises(SupportSettingsError) as info:
        Settings.from_mapping(values)
    assert message in str(info.value)


def test_unset_optional_strings_may_be_null() -> None:
    settings = Settings.from_mapping({"vllm_serve_image": None, "vllm_serve_pip_index_url": None, "vllm_serve_pip_extra_args": None})
    assert (settings.image, settings.pip_index_url, settings.pip_extra_args) == ("", "", "")
