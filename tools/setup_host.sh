#!/usr/bin/env bash
# Host packages and podman settings the spark lab needs (root, Debian). Idempotent; about 15 s when new.
set -euo pipefail

packages=(podman runc debootstrap uidmap slirp4netns fuse-overlayfs iptables iproute2 openssh-client curl rsync git make shellcheck)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-host: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# promtool and prometheus (the metrics role's tests: rules checked and tested, a real server scraping the role's
# targets): the two programs taken out of Debian's prometheus package, whose install would start a server as a
# service and pull in its web assets.
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "setup-host: installing promtool and prometheus from Debian's prometheus package"
  tmp=$(mktemp -d)
  # (apt-get warns that _apt cannot write into a root-only folder and downloads as root: its stderr is dropped)
  if ! (cd "$tmp" && apt-get download -qq prometheus 2>/dev/null); then
    apt-get update -qq
    (cd "$tmp" && apt-get download -qq prometheus 2>/dev/null)
  fi
  dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool ./usr/bin/prometheus
  install -m 0755 "$tmp/usr/bin/promtool" "$tmp/usr/bin/prometheus" /usr/local/bin/
  rm -rf "$tmp"
fi

# podman on this kind of host (see shared/reference/lab.md): nofile within the hard limit, nproc at
# podman's own cap, runc (crun refuses the hybrid cgroup layout) and cgroupfs (PID 1 is not systemd).
hard_nofile=$(ulimit -Hn)
conf=/etc/containers/containers.conf
want=$(cat <<CONF
# Written by sparkops.inference tools/setup_host.sh
[containers]
default_ulimits = ["nofile=${hard_nofile}:${hard_nofile}", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
)
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  mkdir -p /etc/containers
  if [ -f "$conf" ] && ! grep -q 'sparkops.inference' "$conf"; then
    cp "$conf" "$conf.sparkops-backup"
    echo "setup-host: saved the previous $conf as $conf.sparkops-backup"
  fi
  printf '%s\n' "$want" > "$conf"
  echo "setup-host: wrote $conf"
fi
