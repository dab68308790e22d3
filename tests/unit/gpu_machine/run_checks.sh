#!/usr/bin/env bash
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The gate's NCCL check on the lent single-GPU machine (docs/gpu-checks.md): run from the repository root with OUT set.
# Builds NCCL 2.27.7 (carried source, .whl/nccl-2.27.7-1.tar.gz) for sm_90 as the stand-in "system" NCCL when the
# machine has no /usr/lib/x86_64-linux-gnu/libnccl.so.2, in the background while the bundled runs go.
set -u
export PATH=$PATH:/usr/local/cuda/bin
CHECK=roles/nccl_env/files/sparkops-nccl-check
PY=python3
{
  date -u +%FT%TZ; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
  uname -r; nproc; $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  $PY -m pip show nvidia-nccl-cu13 nvidia-nccl-cu12 2>/dev/null | grep -E '^(Name|Version|Location)'
  echo "net:"; for d in /sys/class/net/*; do echo "$(basename "$d") $(cat "$d/operstate") mtu $(cat "$d/mtu") speed $(cat "$d/speed" 2>&1)"; done
  echo "libnccl:"; find / -xdev -name 'libnccl.so*' 2>/dev/null
  ls /dev/infiniband /sys/class/infiniband 2>&1
  command -v nvcc; nvcc --version | tail -1
} > "$OUT/info.txt" 2>&1
SYSTEM=/usr/lib/x86_64-linux-gnu/libnccl.so.2
if [ ! -e "$SYSTEM" ]; then
  SYSTEM=/tmp/nccl/build/lib/libnccl.so.2
  (cd /tmp && tar xzf "$OLDPWD/.whl/nccl-2.27.7-1.tar.gz" && cd nccl &&
   timeout 420 make -j16 src.build CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")" \
     NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > /tmp/build.log 2>&1; echo "build rc $? at $(date -u +%T)" >> /tmp/build.log) &
  BUILD=$!
fi
IF=$(for d in /sys/class/net/*; do n=$(basename "$d"); [ "$n" != lo ] && [ "$(cat "$d/operstate")" = up ] && echo "$n" && break; done)
IF=${IF:-lo}
echo "interface $IF" >> "$OUT/info.txt"
$PY tests/unit/gpu_machine/render_fabric_env.py "$IF" "$OUT/bundled.env" || exit 1
$PY tests/unit/gpu_machine/render_fabric_env.py "$IF" "$OUT/system.env" --nccl-library system --system-nccl-path "$SYSTEM" || exit 1
run() {  # NAME ENVFILE [VAR=VALUE...] -- ARGS
  local name=$1 envfile=$2; shift 2; local extra=(); while [ "$1" != -- ]; do extra+=("$1"); shift; done; shift
  ( set -a; . "$envfile"; set +a; export "${extra[@]}" NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
    echo "# $(date -u +%T) env: $(grep -v '^#' "$envfile" | tr '\n' ' ') ${extra[*]} args: $*"
    s=$(date +%s%N); timeout 180 $PY $CHECK "$@"; rc=$?; echo "# rc $rc in $(( ($(date +%s%N) - s) / 1000000 )) ms" ) > "$OUT/$name.log" 2>&1
}
run run_bundled "$OUT/bundled.env" -- --nranks 1 --sizes 1M,16M,256M
run run_nosuch "$OUT/bundled.env" NCCL_SOCKET_IFNAME=nosuch0 -- --nranks 1 --sizes 1M
run run_samegpu "$OUT/bundled.env" -- --nranks 2 --same-gpu --sizes 1M --timeout 60
if [ -n "${BUILD:-}" ]; then wait "$BUILD"; tail -5 /tmp/build.log >> "$OUT/info.txt"; fi
ls -la /tmp/nccl/build/lib/ >> "$OUT/info.txt" 2>&1
run run_system "$OUT/system.env" -- --nranks 1 --sizes 1M,16M,256M
cat "$OUT/system.env" >> "$OUT/bundled.env"; rm "$OUT/system.env"
