#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# verify_sweep.sh ATTNREG [full] — `attnreg verify --backend cpu-ref` over the
# feature combinations cpu-ref's predicates accept: every q/kv/out dtype
# (45 combinations) x compute dtype (f32, bf16, f16, and fp8 where the KV cache
# is fp8), each with a different mix of GQA ratio, head_dim_v != head_dim,
# causal / non-causal, sliding window, softcap, sinks, page size, strided
# views and lengths; half of them also check the log-sum-exp output (--lse).
# `full` adds a second seed and longer contexts.
# Exit 0 when every run passes; each failure prints the command to repeat it.
set -u
attnreg=$1
mode=${2:-quick}
seeds="1"
long=600
if [ "$mode" = full ]; then
    seeds="1 2"
    long=3000
fi
pass=0
fail=0
i=0
for seed in $seeds; do
for q in f32 f16 bf16; do
for kv in f32 f16 bf16 fp8_e4m3fn fp8_e4m3fnuz; do
for out in f32 f16 bf16; do
    computes="f32 bf16 f16"
    case $kv in fp8*) computes="$computes $kv" ;; esac
    for compute in $computes; do
        i=$((i + 1))
        case $((i % 6)) in
        0) feat="--q-heads 8 --kv-heads 2 --head-dim 64 --max-q-len 5 --max-kv-len 200 --page-size 16" ;;
        1) feat="--q-heads 16 --kv-heads 1 --head-dim 128 --max-q-len 1 --max-kv-len $long --page-size 16 --sinks --lse" ;;
        2) feat="--q-heads 4 --kv-heads 4 --head-dim 40 --head-dim-v 24 --max-q-len 33 --max-kv-len 90 --page-size 3 --no-causal --window 7,5" ;;
        3) feat="--q-heads 12 --kv-heads 3 --head-dim 96 --max-q-len 4 --max-kv-len 300 --page-size 1 --softcap 20 --window 64,0 --strided --lse" ;;
        4) feat="--q-heads 6 --kv-heads 2 --head-dim 80 --head-dim-v 96 --max-q-len 70 --max-kv-len 140 --page-size 32 --sinks --softcap 30 --lse" ;;
        5) feat="--q-heads 32 --kv-heads 4 --head-dim 256 --max-q-len 2 --max-kv-len $long --page-size 64 --strided" ;;
        esac
        cmd="$attnreg verify --backend cpu-ref --q-dtype $q --kv-dtype $kv --compute-dtype $compute --out-dtype $out $feat --seqs 3 --seed $seed"
        if output=$($cmd 2>&1); then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: $cmd"
            echo "$output" | sed 's/^/    /'
        fi
    done
done
done
done
done
echo "verify sweep ($mode): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
