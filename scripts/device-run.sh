#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One device call that measures a build the way bench/RESULTS.md reports it:
# the GPU kernel tests, gpu_attn_bench, attnreg verify through the registry
# (scripts/device-verify.sh) and the peer bench, in that order, inside a time
# budget. Run it on the GPU machine from the repository root, with
# .device-carry (scripts/device-carry.sh, made here) and .peer_bench (a copy of
# ../shared/tools/peer_bench) carried:
#
#   bash scripts/device-run.sh [STEP ...]     # default: tests bench verify peers
#
# Steps: tests, bench, verify, peers, python (scripts/h200_python.sh), profile
# (Nsight Compute on one decode (bf16, fp8) and one MTP launch, and on cuDNN's
# decode of the same shape: time, DRAM bytes and busy, and the L2 -> SM
# sectors against the K/V bytes the shape must move; not in the default
# list), profile-prefill (Nsight Compute on the prefill kernel of 32/8 D128 x
# 8192 tokens, batch 1 and 4, and on torch SDPA's cuDNN kernel for the same
# shape: speed of light, pipes, warp states, instruction mix, L2 traffic,
# stall reasons; the summary issue 19 asks for before and after a change;
# not in the default list). Extra
# `gpu_attn_bench` runs for an A/B go in ATTNREG_RUN_AB, one per line, as
# "LABEL ENV=VALUE ... -- BENCH ARGS" (e.g. "nseg8 ATTNREG_BENCH_NSEG=8 --
# --mtp-only"): each writes bench_LABEL.json / .log beside the default run's.
# ab-builds (not in the default list): an A/B of builds, this carry's
# bench (a) against the ones in ATTNREG_RUN_AB_CARRY (b, c, ... up to h:
# carry folders, `scripts/device-carry.sh --bench-only BUILD DEST`, carried
# too, space-separated), in ATTNREG_RUN_AB_ROUNDS alternating rounds (default
# 3) of `gpu_attn_bench ATTNREG_RUN_AB_ARGS` (e.g. "--mtp-only") with
# ATTNREG_RUN_AB_ENVS set for all (e.g. "ATTNREG_BENCH_KV_SETS=1"); the other
# builds' GPU tests run first on the families in ATTNREG_RUN_AB_TESTS (e.g.
# "mtp,mixed"; none if unset). ab.md: every row's median over the rounds and
# the per-round ratios to a (bench/gpu/ab_table.py). sass-prefill (not in the
# default list): Nsight Compute's per-instruction source counters of the
# prefill kernel and of cuDNN's at 32/8 D128 x 8192 tokens, read by
# bench/gpu/sass_profile.py (bench/RESULTS.md version 34).
# ATTNREG_RUN_GATE=1: a tests step that is not clean (an exit status other
# than 0, or a family with failures) skips every later step, so that a
# candidate build's bench and peer rows are not measured on a wrong kernel
# (the device time goes to the next call instead).
# Environment: ATTNREG_RUN_BUDGET (seconds the whole run may take, default
# 560: the device tool stops a command at 600), ATTNREG_RUN_TESTS (cases per
# family, default 24; the test runs every family, the prefill ones at a
# third of that, by its own defaults). The peer bench gets
# what is left of the budget (skipped under 90 s).
#
# Why: the device tool returns at most 8 files and kills a command at its
# limit, so every step's log goes to one folder that is packed into
# $OUT/logs.tgz after each step: what finished comes back even when a later
# step runs out of time. The last lines printed are each step's summary.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
t0=$(date +%s)
budget=${ATTNREG_RUN_BUDGET:-560}
cases=${ATTNREG_RUN_TESTS:-24}
steps=${*:-tests bench verify peers}
out=${OUT:-$PWD/device-run-out}
mkdir -p "$out" && out=$(cd "$out" && pwd) # absolute: pack() tars from inside $work
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
C=.device-carry
elapsed() { echo $(($(date +%s) - t0)); }
left() { echo $((budget - $(elapsed))); }
pack() { (cd "$work" && tar czf "$out/logs.tgz" .) 2>/dev/null; }
note() { echo "[$(elapsed) s] $*" | tee -a "$work/summary.txt"; }

[ -d $C ] || { echo "device-run: $C missing (scripts/device-carry.sh on the build machine)" >&2; exit 2; }
bash $C/unpack.sh || { echo "device-run: unpacking $C failed" >&2; exit 2; }
export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader \
  > "$work/gpu.txt" 2>&1
note "device: $(head -1 "$work/gpu.txt")"

# torch SDPA's cuDNN prefill on 32/8 D128 causal x 8192 tokens, batch
# argv[1], one call between profiler start and stop (the profile steps' peer)
write_cudnn_prefill_py() {
  cat > "$work/cudnn_prefill.py" << 'PY'
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b = int(sys.argv[1])
q = torch.randn(b, 32, 8192, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(b, 8, 8192, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
PY
}

# A gpu_attn_test log's summary line into $summary ("N families clean;"
# and the lines of the families with failures), those lines into $failing.
summarize_tests() { # LOG
  failing=$(grep -E '^[a-z].*configurations, [1-9]' "$1" | tr '\n' ' ')
  summary="$(grep -c 'configurations, 0 failed' "$1") families clean; $failing"
}

gated="" # set when ATTNREG_RUN_GATE=1 and the tests step was not clean
for step in $steps; do
  if [ -n "$gated" ]; then
    note "$step: skipped, $gated"
    continue
  fi
  if [ "$(left)" -le 30 ]; then
    note "$step: skipped, the budget is spent"
    continue
  fi
  case $step in
  tests)
    timeout "$(left)" $C/bin/gpu_attn_test $C/lib/attnreg/libattn_cpu_ref.so "$cases" \
      > "$work/tests.log" 2>&1
    rc=$?
    summarize_tests "$work/tests.log"
    note "tests (rc $rc): $summary"
    if [ "${ATTNREG_RUN_GATE:-0}" = 1 ] && { [ $rc != 0 ] || [ -n "$failing" ]; }; then
      gated="the tests were not clean (ATTNREG_RUN_GATE=1)"
    fi
    ;;
  bench)
    timeout "$(left)" $C/bin/gpu_attn_bench "$work/bench.json" > "$work/bench.log" 2>&1
    note "bench (rc $?): bench.json, bench.log"
    if [ -n "${ATTNREG_RUN_AB:-}" ]; then
      while IFS= read -r line; do
        [ -n "$line" ] || continue
        label=${line%% *}
        rest=${line#"$label"}
        envs=${rest%%--*}
        args=${rest#*--}
        # shellcheck disable=SC2086
        env $envs timeout "$(left)" $C/bin/gpu_attn_bench $args "$work/bench_$label.json" \
          > "$work/bench_$label.log" 2>&1
        note "bench $label (rc $?): $envs-- $args"
      done <<< "$ATTNREG_RUN_AB"
    fi
    ;;
  verify)
    ATTNREG_CARRY=$C ATTNREG_VERIFY_GPU_TEST_COUNT=0 timeout "$(left)" \
      bash scripts/device-verify.sh > "$work/cli_verify.log" 2>&1
    rc=$?
    note "verify (rc $rc): $(grep 'verify summary' "$work/cli_verify.log" || echo 'no summary (cut short)')"
    ;;
  peers)
    l=$(left)
    if [ "$l" -lt 90 ]; then
      note "peers: skipped, $l s left"
    else
      timeout "$l" python3 .peer_bench/peer_bench.py --carry $C --budget-s $((l - 25)) \
        --out "$work" > "$work/peer.log" 2>&1
      note "peers (rc $?): peer_bench.md, peer_bench.json"
      # the acceptance lines of issues 18 and 19 on this run (acceptance.txt has the rows)
      python3 bench/gpu/acceptance.py "$work/peer_bench.json" > "$work/acceptance.txt" 2>&1
      while read -r line; do note "$line"; done < <(grep -E '^(issue|note)' "$work/acceptance.txt")
    fi
    ;;
  python)
    OUT="$work/py" timeout "$(left)" bash scripts/h200_python.sh $C > "$work/python.log" 2>&1
    note "python (rc $?): $(grep -E '[0-9]+ passed' "$work/python.log" | tail -1)"
    ;;
  profile)
    # Version 17 found decode-mma's copies moving 1.5x the K/V bytes from L2
    # to the SMs this way (bench/RESULTS.md): the ratio is the check.
    met=l1tex__m_xbar2l1tex_read_sectors.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
    metrics_of() { # an ncu report -> "metric=valueunit ..."
      grep -E 'xbar2l1tex|dram__bytes_read|dram__throughput|gpu__time' "$1" |
        awk '{print $1 "=" $NF $(NF-1)}' | tr '\n' ' '
    }
    prof() { # LABEL KERNEL_REGEX BENCH_ONE_ARGS...
      local label=$1 kre=$2
      shift 2
      timeout "$(left)" ncu --clock-control none --metrics $met -k "regex:$kre" -c 1 \
        $C/bin/gpu_attn_bench --one "$@" > "$work/ncu_$label.txt" 2>&1
      note "profile $label (rc $?): $(metrics_of "$work/ncu_$label.txt")"
    }
    # decode 32/8 D128 batch 32 x 16k keys: K/V 2.15 GB (bf16) / 1.07 GB (fp8),
    # 67.1M / 33.6M sectors; MTP q4 batch 32 x 4k: 67.1 MB, 2.1M sectors
    prof decode_bf16 attn_decode_mma 0 32 8 128 16 1 16384 32
    prof decode_fp8 attn_decode_mma 0 32 8 128 8 1 16384 32
    prof mtp_q4 attn_mtp_kernel 1 16 1 256 8 4 4096 32
    cat > "$work/cudnn_decode.py" << 'PY'
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q = torch.randn(32, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(32, 8, 16384, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
PY
    timeout "$(left)" ncu --clock-control none --metrics $met --profile-from-start off \
      python3 "$work/cudnn_decode.py" > "$work/ncu_cudnn_decode_bf16.txt" 2>&1
    note "profile cudnn_decode_bf16 (rc $?): $(metrics_of "$work/ncu_cudnn_decode_bf16.txt")"
    ;;
  profile-prefill)
    # The prefill kernel of 32/8 D128 x 8192 tokens (batch 1 and 4) and torch
    # SDPA's cuDNN kernel on the same shape: speed of light, pipes, warp
    # states, instruction mix, L2 traffic and the stall reasons per issued
    # instruction (bench/RESULTS.md version 33 compares the two this way).
    # Clocks are not locked: compare cycles, not durations.
    sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
    sec+=" --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis"
    pmet='regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$'
    pmet+=',smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum'
    pmet+=',smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_lsu.sum'
    pmet+=',smsp__inst_executed_pipe_cbu.sum,smsp__inst_executed_pipe_uniform.sum'
    pmet+=',lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum'
    pmet+=',dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second'
    summary_of() { # an ncu report -> "name=value ..." of the lines the table of version 33 reads
      grep -E '^ +(Duration|Elapsed Cycles|L2 Cache Throughput|Compute \(SM\) Throughput|Executed Instructions) ' "$1" |
        awk '{v = $NF; u = $(NF - 1); NF -= 2; gsub(/ /, "_"); print $0 "=" v u}' | tr '\n' ' '
    }
    write_cudnn_prefill_py
    for b in 1 4; do
      # shellcheck disable=SC2086
      timeout "$(left)" ncu --clock-control none $sec --metrics "$pmet" -k regex:attn_prefill_kernel -c 1 \
        "$PWD/$C/bin/gpu_attn_bench" --one 0 32 8 128 16 8192 8192 $b > "$work/ncu_prefill_x$b.txt" 2>&1
      note "profile prefill x$b (rc $?): $(summary_of "$work/ncu_prefill_x$b.txt")"
      # shellcheck disable=SC2086
      timeout "$(left)" ncu --clock-control none $sec --metrics "$pmet" --profile-from-start off \
        python3 "$work/cudnn_prefill.py" $b > "$work/ncu_cudnn_prefill_x$b.txt" 2>&1
      note "profile cudnn prefill x$b (rc $?): $(summary_of "$work/ncu_cudnn_prefill_x$b.txt")"
    done
    ;;
  ab-builds)
    others=${ATTNREG_RUN_AB_CARRY:-}
    rounds=${ATTNREG_RUN_AB_ROUNDS:-3}
    bad=""
    for d in $others; do [ -f "$d/unpack.sh" ] || bad+=" '$d'"; done
    if [ -z "$others" ] || [ -n "$bad" ]; then
      note "ab-builds: ATTNREG_RUN_AB_CARRY ('$others') must name carry folders (scripts/device-carry.sh --bench-only);${bad:+ no unpack.sh in$bad}"
    elif ! [[ $rounds =~ ^[1-9][0-9]?$ ]]; then
      note "ab-builds: ATTNREG_RUN_AB_ROUNDS '$rounds' is not a count of rounds (1-99)"
    else
      # builds a (this carry), then b, c, ... (ATTNREG_RUN_AB_CARRY, in order)
      labels=(a) bins=("$C/bin/gpu_attn_bench") tests=() letters=(b c d e f g h)
      for d in $others; do
        l=${letters[${#labels[@]} - 1]:-}
        [ -n "$l" ] || break
        bash "$d/unpack.sh"
        labels+=("$l") bins+=("$d/bin/gpu_attn_bench") tests+=("$l:$d/bin/gpu_attn_test")
      done
      if [ -n "${ATTNREG_RUN_AB_TESTS:-}" ]; then
        for lt in "${tests[@]}"; do
          l=${lt%%:*}
          timeout "$(left)" "${lt#*:}" $C/lib/attnreg/libattn_cpu_ref.so "$cases" \
            "$ATTNREG_RUN_AB_TESTS" > "$work/ab_tests_$l.log" 2>&1
          rc=$?
          summarize_tests "$work/ab_tests_$l.log"
          note "ab-builds: $l's tests (rc $rc): $summary"
        done
      fi
      done_rounds="" # the rounds whose runs all wrote their JSON
      for r in $(seq 1 "$rounds"); do
        [ "$(left)" -le 30 ] && break
        all=1
        for i in "${!labels[@]}"; do
          # shellcheck disable=SC2086
          env ${ATTNREG_RUN_AB_ENVS:-} timeout "$(left)" "${bins[$i]}" ${ATTNREG_RUN_AB_ARGS:-} \
            "$work/ab_${labels[$i]}_r$r.json" > "$work/ab_${labels[$i]}_r$r.log" 2>&1
          [ -s "$work/ab_${labels[$i]}_r$r.json" ] || all=0
        done
        [ $all = 1 ] && done_rounds+=" $r"
      done
      if [ -n "$done_rounds" ]; then
        files() { # LABEL -> the finished rounds' JSON files, comma-separated
          local r out=""
          for r in $done_rounds; do out+="${out:+,}$work/ab_$1_r$r.json"; done
          echo "$out"
        }
        args=()
        for l in "${labels[@]}"; do args+=("$l=$(files "$l")"); done
        python3 bench/gpu/ab_table.py "${args[@]}" > "$work/ab.md" 2>&1
        note "ab-builds: ${labels[*]}, rounds$done_rounds of $rounds (rc $?), ab.md"
      else
        note "ab-builds: no round finished"
      fi
    fi
    ;;
  sass-prefill)
    # Nsight Compute's per-instruction source counters of the prefill kernel
    # (32/8 D128 causal x 8192 tokens, batch 1) and of torch SDPA's cuDNN
    # kernel on the same shape, read by bench/gpu/sass_profile.py: the
    # instructions a warp, the loops, the stall reasons by instruction
    # (bench/RESULTS.md version 34 compares the two consumer loops this way).
    # The CSVs go into the archive, xz-compressed.
    sass() { # LABEL NCU_ARGS...: the export, its read-out and the read-out's count line
      local label=$1 rc
      shift
      timeout "$(left)" ncu --clock-control none --section SourceCounters --section WarpStateStats \
        --section InstructionStats --page source --print-source sass --csv "$@" \
        > "$work/sass_$label.csv" 2> "$work/sass_$label.err"
      rc=$?
      python3 bench/gpu/sass_profile.py "$work/sass_$label.csv" > "$work/sass_$label.txt" 2>&1
      note "sass-prefill $label (rc $rc): $(sed -n 2p "$work/sass_$label.txt")"
    }
    write_cudnn_prefill_py
    sass prefill -k regex:attn_prefill_kernel -c 1 "$PWD/$C/bin/gpu_attn_bench" --one 0 32 8 128 16 8192 8192 1
    sass cudnn_prefill --profile-from-start off -c 1 python3 "$work/cudnn_prefill.py" 1
    xz -T0 -f "$work"/sass_*.csv 2>/dev/null || gzip -f "$work"/sass_*.csv
    ;;
  *)
    note "$step: unknown step (tests, bench, verify, peers, python, profile, profile-prefill, sass-prefill, ab-builds)"
    ;;
  esac
  pack
done
pack
echo "== device-run summary (logs in $out/logs.tgz)"
cat "$work/summary.txt"
