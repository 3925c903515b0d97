#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU machine: the decode shapes of gpu_attn_bench (bf16 and fp8 KV)
# under each matrix-unit decode tuning given as CARVEOUT:TARGET (the bench's
# ATTNREG_BENCH_DMMA_CARVEOUT / _TARGET, i.e. gpu_attn_tune_decode_mma: the
# carveout percent and the programs per CU the segment rule fills; 0 = the
# default), one
# JSON per setting in OUT_DIR, then a table of the times side by side.
#   usage: bench/gpu/sweep_decode_mma.sh BENCH_BINARY OUT_DIR 0:0 100:4 100:8 ...
set -euo pipefail
bin=$1 out=$2
shift 2
mkdir -p "$out"
for v in "$@"; do
  ATTNREG_BENCH_DMMA_CARVEOUT=${v%%:*} ATTNREG_BENCH_DMMA_TARGET=${v##*:} \
    "$bin" --decode-only "$out/dmma_${v/:/_}.json" >"$out/dmma_${v/:/_}.log" 2>&1
done
python3 - "$out" "$@" <<'PY'
import json, sys
out, vs = sys.argv[1], sys.argv[2:]
runs = {v: json.load(open(f"{out}/dmma_{v.replace(':', '_')}.json")) for v in vs}
print("| family | kv | batch | " + " | ".join(f"{v} us (GB/s, nseg)" for v in vs) + " |")
print("|---|---|---|" + "---|" * len(vs))
first = runs[vs[0]]["results"]
for i, r in enumerate(first):
    cells = []
    for v in vs:
        x = runs[v]["results"][i]
        cells.append(f"{x['us']:.1f} ({x['gbs']:.0f}, {x['nseg']})")
    print(f"| {r['family']} | {r['kv_len']} | {r['batch']} | " + " | ".join(cells) + " |")
PY
