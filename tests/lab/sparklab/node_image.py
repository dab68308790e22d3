"""Build the lab's node image: debootstrap + podman import, cached by a hash of its recipe."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .run import log, run

IMAGE_DIR = Path(__file__).resolve().parent.parent / "image"
REPOSITORY = "localhost/spark-node"
SUITE = "bookworm"
MIRROR = os.environ.get("SPARK_LAB_MIRROR", "http://deb.debian.org/debian")

# Units that make no sense in a container; masking them keeps 'systemctl is-system-running' at 'running'.
MASKED_UNITS = (
    "getty@tty1.service",
    "console-getty.service",
    "systemd-udevd.service",
    "systemd-udevd-control.socket",
    "systemd-udevd-kernel.socket",
    "systemd-remount-fs.service",
    "systemd-modules-load.service",
    "sys-kernel-config.mount",
    "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "fstrim.timer",
    "e2scrub_all.timer",
)


def packages() -> list[str]:
    lines = (IMAGE_DIR / "packages.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def recipe_hash() -> str:
    """Hash of everything that shapes the image: package list, overlay files, this builder."""
    digest = hashlib.sha256()
    inputs = [IMAGE_DIR / "packages.txt", Path(__file__)]
    inputs += sorted(p for p in (IMAGE_DIR / "overlay").rglob("*") if p.is_file())
    for path in inputs:
        digest.update(str(path.relative_to(IMAGE_DIR.parent)).encode())
        digest.update(path.read_bytes())
    digest.update(SUITE.encode())
    return digest.hexdigest()[:12]


def image_ref() -> str:
    return f"{REPOSITORY}:{SUITE}-{recipe_hash()}"


def image_exists(ref: str) -> bool:
    return run(["podman", "image", "exists", ref], check=False).returncode == 0


def _customise(rootfs: Path) -> None:
    (rootfs / "etc/machine-id").write_text("")  # systemd makes one per container at boot
    dbus_id = rootfs / "var/lib/dbus/machine-id"
    dbus_id.unlink(missing_ok=True)
    dbus_id.parent.mkdir(parents=True, exist_ok=True)
    dbus_id.symlink_to("/etc/machine-id")
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # each node generates its own at first boot
    shutil.copytree(IMAGE_DIR / "overlay", rootfs, dirs_exist_ok=True)
    run(["systemctl", f"--root={rootfs}", "enable", "spark-lab-hostkeys.service"], capture=True)
    run(["systemctl", f"--root={rootfs}", "mask", *MASKED_UNITS], capture=True)
    # podman's default capabilities lack NET_RAW: root's ping then uses ICMP datagram sockets.
    run(["chroot", str(rootfs), "setcap", "-r", "/usr/bin/ping"], check=False, capture=True)
    run(["chroot", str(rootfs), "apt-get", "clean"], capture=True)
    for junk in ("var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info"):
        shutil.rmtree(rootfs / junk, ignore_errors=True)
    (rootfs / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)


def build(ref: str) -> None:
    with tempfile.TemporaryDirectory(prefix="spark-node-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {SUITE} into {rootfs} (about a minute)")
        run(["debootstrap", "--variant=minbase", f"--include={','.join(packages())}", SUITE, str(rootfs), MIRROR], capture=True)
        _customise(rootfs)
        tarball = Path(tmp) / "rootfs.tar"
        run(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."])
        run(
            [
                "podman", "import",
                "--change", 'CMD ["/sbin/init"]',
                "--change", "STOPSIGNAL SIGRTMIN+3",
                "--change", "ENV container=podman",
                str(tarball), ref,
            ],
            capture=True,
        )  # fmt: skip


def ensure_image() -> str:
    """Return the image for the current recipe, building it only when it is missing."""
    ref = image_ref()
    if image_exists(ref):
        log(f"node image {ref} is up to date")
    else:
        build(ref)
        log(f"built node image {ref}")
    run(["podman", "tag", ref, f"{REPOSITORY}:current"])
    _prune_stale(ref)
    return ref


def _prune_stale(keep: str) -> None:
    """Remove images of older recipes that no container uses any more."""
    listing = run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", REPOSITORY], capture=True).stdout.split()
    for ref in listing:
        stale = ref not in (keep, f"{REPOSITORY}:current") and ref.startswith(f"{REPOSITORY}:{SUITE}-")
        if stale and run(["podman", "rmi", ref], check=False, capture=True).returncode == 0:
            log(f"removed stale node image {ref}")
