#!/usr/bin/env bash
# Multi-GPU throughput on one host (issue 29), two measurements, each meant to fit one command of
# ten minutes on an nvidia-h100-x4 host:
#
#   tests/bench/multi_gpu_bench.sh evaluator BUILD   evaluations/s over 1, 2, 4 GPUs (one GPU worker
#                                                   each): evaluator_bench --only devices --quick
#   tests/bench/multi_gpu_bench.sh rl BUILD [N...]   RL updates/s of `sparserl train --gpus N` (GRPO
#                                                   from grpo.toml, RL stage alone, a fresh small
#                                                   policy, 8 tasks x 8 samples an update, shared
#                                                   over N ranks) for N = 1 2 4 by default
#                                                   (those the host has)
#
# Both print Markdown tables with the device and the date; scaling efficiency = rate at N / (N x
# rate at 1). The RL rate is 1 / the mean perf/step_seconds of the updates after the first (which
# includes starting the workers and compiling); metrics.jsonl of each run stays under OUT
# (default /tmp/sparserl-multi-gpu). Environment: OUT, UPDATES (default 6), MAX_TOKENS (default 1024),
# TASKS (tasks an update at 1 GPU, default 8), SCALING=strong (default: TASKS an update whatever N,
# shared over the ranks) or weak (TASKS x N an update: each rank keeps TASKS; efficiency is then
# the step time at 1 GPU / the step time at N), SEEDS (the evaluator's fresh seeds per matrix and
# program, default 2: 8 evaluations a matrix). A fresh policy's programs end at different lengths,
# so the RL table also gives the tokens generated (all ranks) per second of whole step, and the
# efficiency on it, which does not depend on how long this run's samples happened to be.
set -euo pipefail

mode=${1:-}
build=${2:-}
if [ -z "$mode" ] || [ -z "$build" ] || { [ "$mode" != evaluator ] && [ "$mode" != rl ]; }; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/sparserl-multi-gpu}
mkdir -p "$out"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "unknown")
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l || echo 0)
echo "# Multi-GPU throughput: $mode"
echo
echo "date $(date -u +%Y-%m-%dT%H:%MZ), device $device x $gpus, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo

# 1, 2 and 4 GPUs, those of them this host has.
default_counts=()
for n in 1 2 4; do [ "$n" -le "$gpus" ] && default_counts+=("$n"); done
[ ${#default_counts[@]} -gt 0 ] || { echo "no GPU visible to nvidia-smi" >&2; exit 1; }

if [ "$mode" = evaluator ]; then
  exec "$build/tests/bench/evaluator_bench" --only devices --quick --seeds "${SEEDS:-2}" \
    --gpus "$(IFS=,; echo "${default_counts[*]}")"
fi

shift 2
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=("${default_counts[@]}")
updates=${UPDATES:-6}
max_tokens=${MAX_TOKENS:-1024}
tasks=${TASKS:-8}
scaling=${SCALING:-strong}
[ "$scaling" = strong ] || [ "$scaling" = weak ] || { echo "SCALING must be strong or weak, not '$scaling'" >&2; exit 2; }
echo "$scaling scaling, $tasks tasks x 8 samples an update$([ "$scaling" = weak ] && echo " per rank")"
echo
echo "| GPUs | command | updates | mean step seconds (after the first) | updates/s | samples/s | scaling efficiency | tokens/s of step | efficiency on tokens |"
echo "|---|---|---|---|---|---|---|---|---|"
one=""
one_tokens=""
for n in "${counts[@]}"; do
  runs="$out/rl-$scaling-$n"
  per_update=$tasks
  [ "$scaling" = weak ] && per_update=$((tasks * n))
  rm -rf "$runs"
  args=(train "$root/experiments/configs/grpo.toml" --runs-dir "$runs"
    --set 'train.stages=["rl"]' --set "train.rl_updates=$updates" --set train.tasks_per_update=$per_update
    --set train.samples_per_task=8 --set "env.max_tokens=$max_tokens" --set report.plots=false
    --set checkpoints.rl_every=1000)
  [ "$n" -gt 1 ] && args+=(--gpus "$n")
  "$build/tools/sparserl" "${args[@]}" >"$runs.log" 2>&1 || {
    echo "| $n | sparserl ${args[*]} | failed: see $runs.log | | | | | | |"
    continue
  }
  metrics=$(ls "$runs"/*/metrics.jsonl)
  read -r steps mean tokens < <(python3 - "$metrics" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"stage":"rl"' in line.replace(" ", "")]
later = rows[1:] or rows
seconds = sum(r["perf/step_seconds"] for r in later)
# perf/tokens_per_second: every rank's generated tokens over the slowest rank's generation time.
generated = sum(r["perf/tokens_per_second"] * r["perf/generation_seconds"] for r in later)
print(len(rows), seconds / len(later), generated / seconds)
EOF
)
  rate=$(python3 -c "print(f'{1 / $mean:.3f}')")
  samples=$(python3 -c "print(f'{$per_update * 8 / $mean:.1f}')")
  # Samples/s per GPU at N against that at 1 GPU: the same formula for either scaling.
  [ -n "$one" ] || one=$(python3 -c "print($samples / $n)")
  [ -n "$one_tokens" ] || one_tokens=$(python3 -c "print($tokens / $n)")
  efficiency=$(python3 -c "print(f'{100 * $samples / ($n * $one):.0f}%')")
  token_efficiency=$(python3 -c "print(f'{100 * $tokens / ($n * $one_tokens):.0f}%')")
  echo "| $n | sparserl ${args[*]} | $steps | $(python3 -c "print(f'{$mean:.2f}')") | $rate | $samples | $efficiency | $(python3 -c "print(f'{$tokens:.0f}')") | $token_efficiency |"
done
