"""vLLM from an image (vllm_serve_runtime docker, mp backend, TP=2 across head and worker) on the deployed lab, after
the venv tests: the role moves both ranks to the pinned image's container and it serves; an image upgrade that does
not serve is rolled back to the serving image (the run fails saying so, the new image removed); one that serves
replaces it and the previous image is removed; a rerun changes nothing; teardown removes the unit, the image file and
the images it ran. The images come from the lab's registry (prepare.yml): their PATH holds the real engine, the one
the venv tests ran (the docker CLI stand-in runs a container's command on the node with the image's Env)."""

from __future__ import annotations

import json
import os
import sys

import openai

sys.path.insert(0, os.path.join(os.environ["ENGINE_LAB_PROJECT"], "tests", "lab"))
from sparklab.scenario import node, playbook, recap, tail  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
WORKER = os.environ["ENGINE_LAB_WORKER"]
NODES = (HEAD, WORKER)
REPO = "registry.lab/sparkops/vllm"
IMAGES = "/var/lib/sparkops-lab-docker/images/images.json"
DOCKER = ("-e", "vllm_serve_runtime=docker")  # the scenario's inventory runs the engine from its venv


def running_image(name: str) -> str:
    """The image of the running sparkops-vllm container, as docker ps shows it ('' when none runs)."""
    return str(node(name).check_output("docker ps --filter name=^sparkops-vllm$ --format '{{.Image}}'")).strip()


def local_tags(name: str) -> set[str]:
    """The node's images, by their tags (dockerd's store: the docker-api stand-in's images.json)."""
    images = json.loads(node(name).file(IMAGES).content_string) if node(name).file(IMAGES).exists else {}
    return {tag for image in images.values() for tag in image.get("RepoTags") or []}


def answers() -> bool:
    client = openai.OpenAI(base_url=f"http://{os.environ['ENGINE_LAB_HEAD_MGMT_IP']}:8000/v1", api_key=os.environ["ENGINE_LAB_API_KEY"], timeout=30)
    reply = client.chat.completions.create(model=os.environ["ENGINE_LAB_MODEL"], messages=[{"role": "user", "content": "Hi"}], max_tokens=8)
    return reply.usage is not None and reply.usage.completion_tokens > 0


def test_the_ranks_move_to_the_pinned_image_and_it_serves() -> None:
    run = playbook("site.yml", "--tags", "serve", *DOCKER, "-e", f"vllm_serve_image={REPO}:0.30.0")
    assert run.returncode == 0, tail(run)
    for name in NODES:
        assert running_image(name) == f"{REPO}:0.30.0", name
        assert node(name).service("sparkops-vllm").is_running, name
        assert f"SPARKOPS_VLLM_IMAGE={REPO}:0.30.0" in node(name).file("/etc/sparkops/vllm-image.env").content_string, name
        assert local_tags(name) == {f"{REPO}:0.30.0"}, name
    assert answers()


def test_an_image_that_does_not_serve_is_rolled_back_then_one_that_serves_replaces_it() -> None:
    """0.30.1's image lacks the engine (its container cannot start); 0.30.2 serves. The failing run at systemd's
    default start limit (the scenario raises it for its kill tests), so the unit gives up after 3 starts, not 12."""
    failed = playbook("site.yml", "--tags", "serve", *DOCKER, "-e", f"vllm_serve_image={REPO}:0.30.1", "-e", "vllm_serve_start_limit_burst=3")
    assert failed.returncode != 0, tail(failed)
    said = f"The image {REPO}:0.30.1 did not serve, so the previous image ({REPO}:0.30.0) was put back on {HEAD}, {WORKER} and serves again"
    out = " ".join((failed.stdout + failed.stderr).split())
    assert said in out and "executable file not found in $PATH" in out, out[-3000:]  # what failed: the engine's journal
    for name in NODES:
        assert running_image(name) == f"{REPO}:0.30.0", name
        assert local_tags(name) == {f"{REPO}:0.30.0"}, name  # the image that did not serve is gone
    assert answers()

    upgraded = playbook("site.yml", "--tags", "serve", *DOCKER, "-e", f"vllm_serve_image={REPO}:0.30.2")
    assert upgraded.returncode == 0, tail(upgraded)
    for name in NODES:
        assert running_image(name) == f"{REPO}:0.30.2", name
        assert local_tags(name) == {f"{REPO}:0.30.2"}, name  # the previous image removed once the new one serves
    assert answers()

    again = playbook("site.yml", "--tags", "serve", *DOCKER, "-e", f"vllm_serve_image={REPO}:0.30.2")
    assert again.returncode == 0, tail(again)
    assert {name: counts["changed"] for name, counts in recap(again).items()} == {HEAD: 0, WORKER: 0}, recap(again)


def test_teardown_removes_the_unit_the_image_file_and_the_images_it_ran() -> None:
    """Pinned 0.30.0 (gone already); the unit ran 0.30.2: teardown removes what it ran."""
    run = playbook("playbooks/teardown.yml", "--tags", "serve", *DOCKER, "-e", f"vllm_serve_image={REPO}:0.30.0", "-e", "vllm_serve_teardown_image=true")
    assert run.returncode == 0, tail(run)
    for name in NODES:
        assert running_image(name) == "", name
        assert not node(name).file("/etc/systemd/system/sparkops-vllm.service").exists, name
        assert not node(name).file("/etc/sparkops/vllm-image.env").exists, name
        assert local_tags(name) == set(), name
        assert node(name).service("docker").is_running, name  # docker itself is not the collection's
