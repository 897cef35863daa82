#!/usr/bin/env bash
# Everything GPU-only, within about 9 minutes of device time per call (the first lent GPU runs this; DEVELOPERS).
# Parts, most informative first; each has a time budget, runs under `timeout`, and a part that fails or runs out of
# time does not stop the rest. A part starts only if TOTAL_S leaves it at least MIN_PART_S; it sees its time limit (the
# smaller of its budget and what is left) as PART_LIMIT_S, to size its own budget by.
#   1 streams                (60 s)  inline vs overlapped frames bit for bit (a stream race shows), device-wide and host
#                                    syncs per chunk, every op that made the host wait (sync debug mode), demo model;
#                                    the steady state under --sync-debug error: a stray sync stops the run, named
#   2 infinitetalk-eager    (200 s)  InfiniteTalk/FlashTalk at real size, random bf16 weights: fps, time to first frame,
#                                    memory per residency (resident, DiT streamed:2, offloaded) at 832x480, guided chunk;
#                                    --sync-debug warn: what made the host wait in the steady state, by line
#   3 liveavatar            (120 s)  LiveAvatar at real size (bench/liveavatar_gpu.sh): 14B random bf16 at 704x384,
#                                    fps, time to first frame, KV-cache memory; --sync-debug warn as part 2
#   4 cascade               (150 s)  LiveAvatar at 320x192, then FlashVSR 4x -> 1280x768, random bf16 weights
#                                    (families/flashvsr/gpu_bench.py): fps, time to first frame, every stage switch's
#                                    cost, peak memory; all resident, then both DiTs offloaded; with 2+ GPUs also
#                                    --parallel decode (FlashVSR on the decode rank) under torchrun
#   5 flashhead             (150 s)  SoulX-FlashHead Pro and Lite at real size, random bf16 weights, 512x512
#                                    (families/flashhead/gpu_bench.py): fps, time to first frame, steady chunk time, peak
#                                    memory, eager then compiled (compile time apart); 2 and 3 sessions at once on one
#                                    pipeline (aggregate fps, each session's, whether each keeps up with 25 fps)
#   6 fp8                   (200 s)  each family at real size, bf16 against --quantize fp8 (LiveAvatar: and --kv-cache-dtype
#                                    fp8), the same 2 s render twice (families/fp8_gpu_bench.py): fps, time to first
#                                    frame, peak GPU memory, weight bytes, PSNR between the two videos
#   7 infinitetalk-compiled (130 s)  the same with --compile (resident, 832x480): compile time apart, steady fps
#   8 runtime               (100 s)  bench/gpu_check.py (pinned vs pageable H2D, streamed vs resident, stage switch time
#                                    per policy) and `bench --scenario overlap` on the demo model
#   9 parallel              (rest)   bench/gpu_parallel.sh, only with more than one GPU
# Results: bench/results/<date>-<gpu>/ with README.md (a table of the parts, then the scenarios of the family GPU
# benchmarks: InfiniteTalk eager and compiled, LiveAvatar, the cascade, FlashHead), one folder and one log per part, parts.tsv.
#   bench/gpu_all.sh                       # on the GPU machine (carry .whl/ from bench/fetch_gpu_wheels.sh)
#   bench/gpu_all.sh --dry-run --out DIR   # CPU, tiny models, seconds per part: checks the script (a test runs it)
# The budgets add up to more than one call's 540 s, so the later parts are skipped in one call; --parts NAME,... runs only
# those (their rows are added to DIR's parts.tsv and README), so two calls into one --out DIR cover everything:
#   bench/gpu_all.sh --out DIR --parts streams,infinitetalk-eager,liveavatar,cascade
#   bench/gpu_all.sh --out DIR --parts flashhead,fp8,infinitetalk-compiled,runtime,parallel
# PYTHON picks the interpreter (see bench/gpu_env.sh); TOTAL_S (default 540; 1500 for a dry run) bounds the whole run.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY=0
OUT=""
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT=$2; shift ;;
    --parts) ONLY=$2; shift ;;
    *) echo "error: unknown option $1; use --dry-run, --out DIR and/or --parts NAME,..." >&2; exit 2 ;;
  esac
  shift
done

if [ "$DRY" = 1 ]; then
  PYTHON=${PYTHON:-python3}
  DRY_BUDGET=300  # a guard only: a dry run measures nothing, and a shared CPU runs it slowly
else
  set -e
  source bench/gpu_env.sh
  set +e
fi
export PYTHON PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1  # the part scripts (gpu_parallel.sh) use the same interpreter
GPUS=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
if [ -z "$OUT" ]; then
  NAME=$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name().lower().replace("nvidia", "").strip().replace(" ", "-") if torch.cuda.is_available() else "cpu")')
  OUT=bench/results/$(date +%F)-$NAME
fi
mkdir -p "$OUT"
if [ -z "$ONLY" ]; then : >"$OUT/parts.tsv"; else touch "$OUT/parts.tsv"; fi  # --parts adds its rows to an earlier call's
TOTAL_S=${TOTAL_S:-$([ "$DRY" = 1 ] && echo 1500 || echo 540)}
MIN_PART_S=${MIN_PART_S:-30}
START=$SECONDS

asked() {  # asked NAME: true when no --parts was given, or it names NAME
  [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]
}

part() {  # part NAME BUDGET_S COMMAND...: run it under the smaller of its budget and what is left; one row in parts.tsv
  local name=$1 budget=$2
  shift 2
  asked "$name" || return 0
  local left=$((TOTAL_S - (SECONDS - START)))
  if [ "$left" -lt "$MIN_PART_S" ]; then
    printf '%s\tskipped\t0\t%s\t%s\n' "$name" "$budget" "no time left (${left} s of ${TOTAL_S} s)" >>"$OUT/parts.tsv"
    return
  fi
  local limit=$((budget < left ? budget : left)) began=$SECONDS status
  mkdir -p "$OUT/$name"
  echo "[gpu_all +$((SECONDS - START))s] $name (up to ${limit} s)"
  PART_LIMIT_S=$limit timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  case $? in
    0) status=ok ;;
    124 | 137) status=timeout ;;
    *) status=failed ;;
  esac
  local why=""
  [ "$status" = ok ] || why=$(tail -n 1 "$OUT/$name.log" | tr '\t|' '  ' | cut -c1-160)  # the last words of a part that did not finish
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - began))" "$limit" "$why" >>"$OUT/parts.tsv"
}

skip() {  # skip NAME WHY
  asked "$1" || return 0
  printf '%s\tskipped\t0\t0\t%s\n' "$1" "$2" >>"$OUT/parts.tsv"
}

if [ "$DRY" = 1 ]; then
  TINY=(--tiny --device cpu --threads 1 --residencies resident --sizes 64x48 --no-guided)
  part streams $DRY_BUDGET "$PYTHON" -m avatarstream.benchmarks.gpu_streams --out "$OUT/streams" --device cpu --model demo-tiny --seconds 1.5 \
    --sync-debug error
  part infinitetalk-eager $DRY_BUDGET "$PYTHON" -m avatarstream.families.infinitetalk.gpu_bench --out "$OUT/infinitetalk-eager" "${TINY[@]}" \
    --sync-debug warn
else
  part streams 60 "$PYTHON" -m avatarstream.benchmarks.gpu_streams --out "$OUT/streams" --sync-debug error
  part infinitetalk-eager 200 "$PYTHON" -m avatarstream.families.infinitetalk.gpu_bench --out "$OUT/infinitetalk-eager" --budget-s 130 \
    --residencies resident,dit_streamed_2,offloaded --sizes 832x480 --sync-debug warn
fi

if [ "$DRY" = 1 ]; then
  part liveavatar $DRY_BUDGET "$PYTHON" -m avatarstream.families.liveavatar.gpu_bench --out "$OUT/liveavatar" --tiny --device cpu --threads 1 \
    --sync-debug warn
else
  part liveavatar 120 bench/liveavatar_gpu.sh --out "$OUT/liveavatar" --budget-s 60 --sync-debug warn
fi

CASCADE="'$PYTHON' -m avatarstream.families.flashvsr.gpu_bench"
if [ "$DRY" = 1 ]; then
  part cascade $DRY_BUDGET bash -c "$CASCADE --out '$OUT/cascade' --tiny --device cpu --threads 1"
elif [ "$GPUS" -gt 1 ]; then
  part cascade 150 bash -c "timeout --kill-after=10 90 $CASCADE --out '$OUT/cascade' --budget-s 50; \
    timeout --kill-after=10 55 '$PYTHON' -m torch.distributed.run --standalone --nproc-per-node 2 -m avatarstream.families.flashvsr.gpu_bench \
    --out '$OUT/cascade/decode' --parallel decode"
else
  part cascade 150 bash -c "$CASCADE --out '$OUT/cascade' --budget-s 100"
fi

FLASHHEAD="'$PYTHON' -m avatarstream.families.flashhead.gpu_bench --out '$OUT/flashhead'"
if [ "$DRY" = 1 ]; then
  part flashhead $DRY_BUDGET bash -c "$FLASHHEAD --tiny --device cpu --threads 1 --compile-backend aot_eager"
else  # no scenario starts in the last 50 s of its limit: a compiled variant's warm-up alone may take that long
  part flashhead 150 bash -c "$FLASHHEAD --budget-s \$((PART_LIMIT_S > 60 ? PART_LIMIT_S - 50 : 10))"
fi

FP8="'$PYTHON' -m avatarstream.families.fp8_gpu_bench"
if [ "$DRY" = 1 ]; then
  part fp8 $DRY_BUDGET bash -c "$FP8 --family liveavatar --tiny --device cpu --threads 1 --out '$OUT/fp8/liveavatar' && \
    $FP8 --family infinitetalk --tiny --device cpu --threads 1 --out '$OUT/fp8/infinitetalk'"
else
  part fp8 200 bash -c "timeout --kill-after=10 110 $FP8 --family liveavatar --out '$OUT/fp8/liveavatar' --budget-s 70; \
    timeout --kill-after=10 85 $FP8 --family infinitetalk --out '$OUT/fp8/infinitetalk' --budget-s 50"
fi

if [ "$DRY" = 1 ]; then
  part infinitetalk-compiled $DRY_BUDGET "$PYTHON" -m avatarstream.families.infinitetalk.gpu_bench --out "$OUT/infinitetalk-compiled" "${TINY[@]}" \
    --compile --compile-backend aot_eager
  part runtime $DRY_BUDGET bash -c "'$PYTHON' bench/gpu_check.py --device cpu --smoke --out '$OUT/runtime/gpu_check.json' && \
    '$PYTHON' -m avatarstream.cli.main bench --scenario overlap --model demo-tiny --device cpu --seconds 1.5 --repeats 1 --out '$OUT/runtime'"
else
  part infinitetalk-compiled 130 "$PYTHON" -m avatarstream.families.infinitetalk.gpu_bench --out "$OUT/infinitetalk-compiled" --budget-s 90 \
    --residencies resident --sizes 832x480 --no-guided --compile
  part runtime 100 bash -c "timeout 70 '$PYTHON' bench/gpu_check.py --out '$OUT/runtime/gpu_check.json'; \
    '$PYTHON' -m avatarstream.cli.main bench --scenario overlap --model demo --device cuda --seconds 10 --repeats 1 --out '$OUT/runtime'"
fi

if [ "$GPUS" -gt 1 ]; then
  part parallel 600 env OUT="$OUT/parallel" bench/gpu_parallel.sh
else
  skip parallel "--parallel needs more than one GPU (${GPUS} here)"
fi

"$PYTHON" -m avatarstream.benchmarks.gpu_all_readme "$OUT"
echo "[gpu_all +$((SECONDS - START))s] wrote $OUT/README.md"
