#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Clocks and power under sustained prefill load, attnreg beside torch SDPA (cuDNN, then flash).
#
#   bash bench/gpu/sustained_prefill.sh GPU_ATTN_BENCH OUT_DIR [REPEATS]
#
# Why: the peer bench times each implementation for ~20 calls (under 0.1 s at 8192 tokens x 4),
# short enough that a kernel the board's 700 W limiter would slow down runs at full clock.
# gpu_attn_bench --one times 360 calls (about 1.5 s at that shape). This script puts the two side
# by side for 32/8 D128 causal 8192 tokens x 4, bf16: attnreg's gpu_attn_bench --one REPEATS times,
# then SDPA cuDNN and SDPA flash (contiguous, K/V repeated to 32 heads) each called back to back for
# 3 s with device events around every call; nvidia-smi samples the SM clock and the board power
# every 50 ms. Writes OUT_DIR/sustained_marks.txt (times, per-window clock and power) and
# OUT_DIR/sustained_smi.csv. The attnreg window also holds each run's cache fill and setup, so
# its clock and power figures mix those phases in; its times are gpu_attn_bench's own medians.
# Needs nvidia-smi and python3 with torch (CUDA).
set -u
B=${1:?usage: sustained_prefill.sh GPU_ATTN_BENCH OUT_DIR [REPEATS]}
O=${2:?usage: sustained_prefill.sh GPU_ATTN_BENCH OUT_DIR [REPEATS]}
N=${3:-6}
mkdir -p "$O"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 50 \
    > "$O/sustained_smi.csv" 2>&1 &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT
sleep 1
echo "attnreg start $(date +%s.%N)" | tee "$O/sustained_marks.txt"
for _ in $(seq "$N"); do "$B" --one 0 32 8 128 16 8192 8192 4 | tail -1; done | tee -a "$O/sustained_marks.txt"
echo "attnreg end $(date +%s.%N)" | tee -a "$O/sustained_marks.txt"
sleep 2
python3 - <<'PY' 2>&1 | tee -a "$O/sustained_marks.txt"
import time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q = torch.randn(4, 32, 8192, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(4, 8, 8192, 128, device="cuda", dtype=torch.bfloat16).repeat_interleave(4, 1)
v = torch.randn(4, 8, 8192, 128, device="cuda", dtype=torch.bfloat16).repeat_interleave(4, 1)
for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        print(name, "start", time.time(), flush=True)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times, t_end = [], time.time() + 3.0
        while time.time() < t_end:
            e0.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            e1.record()
            e1.synchronize()
            times.append(1000.0 * e0.elapsed_time(e1))
        times.sort()
        print(name, "end", time.time(), "iters", len(times), "median us", times[len(times) // 2],
              "min us", times[0], flush=True)
    time.sleep(2)
PY
kill $SMI 2>/dev/null
python3 - "$O" <<'PY' | tee -a "$O/sustained_marks.txt"
import datetime
import sys
out = sys.argv[1]
rows = []
for line in open(out + "/sustained_smi.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        ts = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f")
        ts = ts.replace(tzinfo=datetime.timezone.utc).timestamp()
        rows.append((ts, int(p[1].split()[0]), float(p[2].split()[0])))
    except (ValueError, IndexError):
        continue
marks = {}
for line in open(out + "/sustained_marks.txt"):
    w = line.split()
    if len(w) >= 3 and w[1] in ("start", "end"):
        marks[(w[0], w[1])] = float(w[2])
for name in ("attnreg", "cudnn", "flash"):
    if (name, "start") in marks and (name, "end") in marks:
        s = [r for r in rows if marks[(name, "start")] + 0.3 <= r[0] <= marks[(name, "end")]]
        if s:
            mhz = sorted(r[1] for r in s)
            watts = sorted(r[2] for r in s)
            print(f"{name}: {len(s)} samples, SM MHz median {mhz[len(mhz) // 2]} min {mhz[0]}, "
                  f"power W median {watts[len(watts) // 2]:.0f} max {watts[-1]:.0f}")
PY
