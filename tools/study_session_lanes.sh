#!/usr/bin/env bash
# tools/study_session_lanes.sh: one GPU session's part of the study on a host with several GPUs,
# as independent lanes of tools/study_session.sh - lane g runs its own `tools/study.sh --only` calls
# (training and then its agents' benches) on GPU g alone, in its own copy of the pinned tree
# (/tmp/w for lane 0, /tmp/w1, /tmp/w2, ... after), with the cores shared out (OMP_NUM_THREADS =
# cores / lanes, as study.sh's own --gpus lanes do). Each run is then trained and benched as on a
# one-GPU host; study.sh --gpus N instead trains N runs at once but benches them one after another
# on every GPU. The pinned tree is built once (lane 0's), every lane runs its binary but a lane with
# a tree of its own (LANE_TREE_G).
# Steps, in the order given:
#   setup     every lane's study_session.sh setup (its tree, the restored examples folder)
#   build     lane 0's build, and that of each lane with a tree of its own, at once
#             (every other lane runs lane 0's binary, unless STUDY_SPARSERL names another)
#   study     every lane's study, in the background
#   poll      wait until every lane's calls end or DEADLINE is near
#   collect   each lane's study_session.sh collect into $OUT/lane-G/
# Environment: LANE_ONLY_0, LANE_ONLY_1, ... (each lane's STUDY_ONLY: regexes in single quotes,
# separated by spaces; lanes are numbered from 0 with no gap); LANE_TREE_G (a tree of the lane's
# own that exists already - e.g. the session's working tree, HEAD on the host, for rows the pinned
# commit lacks - built beside lane 0's; default the pinned tree, copied) and LANE_ARGS_G (the
# lane's STUDY_ARGS, e.g. with --hf); DEADLINE, and what
# study_session.sh reads (STUDY_OUT, STUDY_EXAMPLES, STUDY_ARGS, STUDY_SETS, BUILD_TARGETS, KIT).
# Example (the device tool's `run` on a host of two GPUs, carry [".devkit"]):
#   export DEADLINE=$(( $(date +%s) + 550 )) LANE_ONLY_0="'^spmv-f32/reinforce-s1\$'" \
#     LANE_ONLY_1="'^spmv-f32/ppo-s1\$'"; bash tools/study_session_lanes.sh setup build study poll collect
set -uo pipefail

KIT_SCRIPT=${KIT_SCRIPT:-tools/study_session.sh}
TREE0=${STUDY_TREE:-/tmp/w}
OUT=${OUT:-/tmp/out}
say() { echo "[lanes $(date -u +%H:%M:%S)] $*"; }

lanes=()
for ((g = 0; ; g++)); do
  var=LANE_ONLY_$g
  [[ -n ${!var:-} ]] || break
  lanes+=("$g")
done
((${#lanes[@]} > 0)) || { echo "study_session_lanes.sh: set LANE_ONLY_0 (and LANE_ONLY_1, ...)" >&2; exit 2; }
# own_tree G: whether lane G runs a tree of its own (LANE_TREE_G).
own_tree() { local var=LANE_TREE_$1; [[ -n ${!var:-} ]]; }
tree() {
  local var=LANE_TREE_$1
  if own_tree "$1"; then (cd "${!var}" && pwd); elif (($1 == 0)); then echo "$TREE0"; else echo "$TREE0$1"; fi
}

# lane G STEP...: study_session.sh's steps in lane G's tree, on GPU G; lane 0's binary unless the
# lane has a tree of its own (then its own build's).
lane() {
  local g=$1 only=LANE_ONLY_$1 args=LANE_ARGS_$1 binary=$TREE0/build-gpu/tools/sparserl
  shift
  own_tree "$g" && binary=$(tree "$g")/build-gpu/tools/sparserl
  local envs=(CUDA_VISIBLE_DEVICES="$g" OMP_NUM_THREADS=$(($(nproc) / ${#lanes[@]} > 0 ? $(nproc) / ${#lanes[@]} : 1))
    STUDY_TREE="$(tree "$g")" STUDY_SPARSERL="${STUDY_SPARSERL:-$binary}" STUDY_ONLY="${!only}")
  [[ -z ${!args:-} ]] || envs+=(STUDY_ARGS="${!args}")
  env "${envs[@]}" bash "$KIT_SCRIPT" "$@"
}

step_setup() {
  local g gpus
  if gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); then
    ((gpus >= ${#lanes[@]})) || { say "${#lanes[@]} lanes but $gpus GPUs here"; return 1; }
  fi
  for g in "${lanes[@]}"; do lane "$g" setup || return 1; done
}

step_build() {
  local g pids=() rc=0
  lane 0 debs || return 1  # once, before the builds that read them start at once
  for g in "${lanes[@]}"; do
    if ((g == 0)) || own_tree "$g"; then
      lane "$g" build >"$TREE0.lane-$g.build.log" 2>&1 &
      pids+=($!)
    fi
  done
  for g in "${!pids[@]}"; do wait "${pids[g]}" || rc=1; done
  cat "$TREE0".lane-[0-9]*.build.log 2>/dev/null
  return "$rc"
}

step_study() {
  local g
  for g in "${lanes[@]}"; do lane "$g" study || return 1; done
}

step_poll() {
  local g
  for g in "${lanes[@]}"; do
    say "lane $g"
    lane "$g" poll
  done
}

step_collect() {
  local g
  for g in "${lanes[@]}"; do OUT=$OUT/lane-$g lane "$g" collect || return 1; done
  ls -la "$OUT"/lane-* || true
}

for s in "$@"; do
  case "$s" in
    setup | build | study | poll | collect)
      say "$s"
      "step_$s" || { say "$s failed"; exit 1; }
      ;;
    *) echo "study_session_lanes.sh: unknown step $s" >&2; exit 2 ;;
  esac
done
