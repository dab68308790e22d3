#!/usr/bin/env bash
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The NCCL library switch on the lent GPU machine (docs/gpu-checks.md, second run): the check once with the fabric
# environment rendered for nccl_env_nccl_library bundled, once for system (the machine's /usr/lib/x86_64-linux-gnu
# libnccl.so.2); each reports the NCCL in NCCL's own log, torch's figure and what vLLM's PyNccl way of loading finds.
set -u
CHECK=roles/nccl_env/files/sparkops-nccl-check
IF=$(for d in /sys/class/net/*; do n=$(basename "$d"); [ "$n" != lo ] && [ "$(cat "$d/operstate")" = up ] && echo "$n" && break; done)
IF=${IF:-lo}
python3 tests/unit/gpu_machine/render_fabric_env.py "$IF" "$OUT/bundled.env" || exit 1
python3 tests/unit/gpu_machine/render_fabric_env.py "$IF" "$OUT/system.env" --nccl-library system --system-nccl-path /usr/lib/x86_64-linux-gnu/libnccl.so.2 || exit 1
for lib in bundled system; do
  ( set -a; . "$OUT/$lib.env"; set +a; export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
    echo "# $(date -u +%FT%TZ) $lib: LD_PRELOAD=${LD_PRELOAD:-} VLLM_NCCL_SO_PATH=${VLLM_NCCL_SO_PATH:-}"
    timeout 120 python3 $CHECK --nranks 1 --sizes 1M,64M --iters 10; echo "# rc $?" ) > "$OUT/switch_$lib.log" 2>&1
  grep -E "NCCL version|SPARKOPS_NCCL_CHECK|# rc" "$OUT/switch_$lib.log"
done
