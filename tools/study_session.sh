#!/usr/bin/env bash
# tools/study_session.sh: one GPU session's part of the study (tools/study.sh --only) on a device
# host that keeps nothing between sessions and brings back at most 8 files of 16 MiB a call
# (docs/study.md, "The study over several GPU sessions"). The study's commit is pinned: `pack`
# here puts a shallow clone of that commit into .devkit/pin.tgz (and the shared matrices and the
# CUDA corpus into .devkit/shared.tgz); on the host the steps below run from the session's working
# tree (whatever HEAD is now), build and run the pinned tree in /tmp/w (or STUDY_TREE where it
# exists already, e.g. the session's tree itself), and restore what earlier sessions carried
# back from the committed examples folder (STUDY_EXAMPLES: every run's run.json, every bench's
# results, SFT seed 1's policy weights, the oracle's cache). Steps, in the order given:
#   pack COMMIT   (here) .devkit/pin.tgz, pin.commit and shared.tgz
#   merge DIR...  (here) what the calls brought back into STUDY_EXAMPLES, the tables made again
#   setup         unpack the pinned tree and ../shared, restore STUDY_EXAMPLES into STUDY_OUT
#   debs          unpack KIT's .deb files into /opt/devkit, once (build does it first)
#   build         configure and build BUILD_TARGETS in /tmp/w/build-gpu
#   gputest       ctest -L gpu -R "$GPU_TESTS" there (output in $OUT/gputest.log)
#   study         start `tools/study.sh` in the background, one call per --only regex of
#                 STUDY_ONLY (regexes separated by spaces), one after another
#   poll          wait until the study's calls end or DEADLINE (epoch seconds) is near
#   collect       into $OUT: examples.tgz (reports, run.json, results, summaries, tables, phases,
#                 every RL run's metrics.jsonl, its variants' too: each update's perf/ seconds),
#                 policy-sft-s1.tgz (SFT seed 1's weights, once), oracle.tgz, study.log,
#                 bench-trajectories.tgz (the benches' trajectories.h5 not sent yet, up to 12 MB)
# Environment: STUDY_OUT (runs/study-cut2), STUDY_EXAMPLES (docs/examples/study-cut2-h200),
# STUDY_ARGS and STUDY_SETS (the study.sh options and --sets every call shares; the cut's below),
# STUDY_ONLY, DEADLINE, BUILD_TARGETS, GPU_TESTS (a ctest -R regex), GPU_TESTS_EXCLUDE, GPU_TEST_S;
# STUDY_TREE (/tmp/w), KIT (.devkit), SHARED (../shared), STUDY_SPARSERL (the pinned tree's
# build-gpu/tools/sparserl): the CPU test study_session_kit sets these. Example (the device tool's
# `run`, carry [".devkit"]):
#   export DEADLINE=$(( $(date +%s) + 540 )) STUDY_ONLY="'^spmv-f32/(sft-s[12]|template|random)\$'"
# (each regex in single quotes inside STUDY_ONLY: they are written into a script as they are)
#   bash tools/study_session.sh setup build study poll collect
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/runs.sh"  # run_dir_with

W=${STUDY_TREE:-/tmp/w}       # the pinned tree; ../shared beside it
STATE=$W.session              # the background study's pid, log and exit status
KIT=${KIT:-.devkit}
STUDY_OUT=${STUDY_OUT:-runs/study-cut2}
STUDY_EXAMPLES=${STUDY_EXAMPLES:-docs/examples/study-cut2-h200}
BUILD_TARGETS=${BUILD_TARGETS:-sparserl sparserl-worker}
# The cut of issue 26's study (docs/study.md, "The cut, second start"): the pilot's 20 updates a
# run, 5 RL and 2 SFT seeds, one GPU, the large regime of bench-v2's shared and generated matrices,
# and the GPU worker's caches large enough for the 40 large train matrices.
STUDY_ARGS=${STUDY_ARGS:---pilot --seeds 5 --sft-seeds 2 --gpus 1}
STUDY_SETS=${STUDY_SETS-"--set 'data.index_dirs=[\"../shared/matrices\", \"../shared/matrices/real\"]' \
--set 'data.sources=[\"shared\",\"generated\"]' --set 'data.regimes=[\"large\"]' \
--set evaluator.gpu_resident_fraction=0.3 --set evaluator.gpu_matrix_entries=48 --set evaluator.gpu_matrix_mib=24576"}
DEADLINE=${DEADLINE:-$(($(date +%s) + 540))}
OUT=${OUT:-/tmp/out}
SESSION=$(pwd)
SHARED=${SHARED:-$SESSION/../shared}
SPARSERL=${STUDY_SPARSERL:-build-gpu/tools/sparserl}
say() { echo "[session $(date -u +%H:%M:%S)] $*"; }
left() { echo $((DEADLINE - $(date +%s))); }

step_pack() {
  local commit=$1 tmp
  tmp=$(mktemp -d)
  commit=$(git rev-parse --verify "$commit^{commit}") || return 1
  # One commit's tree and no history: the study's record names the commit, not its ancestors.
  git init -q "$tmp/w" && git -C "$tmp/w" fetch -q --depth 1 "file://$SESSION" "$commit" &&
    git -C "$tmp/w" checkout -q FETCH_HEAD || return 1
  mkdir -p "$KIT"
  tar czf "$KIT/pin.tgz" -C "$tmp" w
  git -C "$tmp/w" rev-parse HEAD >"$KIT/pin.commit"
  # The matrices, and the CUDA corpus that the --hf rows pretrain on (3.3 MB compressed).
  tar czf "$KIT/shared.tgz" -C "$SHARED" matrices corpus
  rm -rf "$tmp"
  ls -la "$KIT"
}

step_setup() {
  local parent
  parent=$(dirname "$W")
  if [[ ! -d $W ]]; then
    mkdir -p "$W.pin" && tar xzf "$KIT/pin.tgz" -C "$W.pin" && mv "$W.pin/w" "$W" && rmdir "$W.pin" ||
      return 1
    [[ $(git -C "$W" rev-parse HEAD) == $(cat "$KIT/pin.commit") ]] || { say "pin: wrong commit"; return 1; }
  fi
  if [[ ! -d $parent/shared/matrices ]]; then
    mkdir -p "$parent/shared" && tar xzf "$KIT/shared.tgz" -C "$parent/shared" || return 1
  fi
  # Earlier sessions' runs, benches and weights, and the oracle's cache, once.
  if [[ -d $STUDY_EXAMPLES && ! -f $W/$STUDY_OUT/.restored ]]; then
    mkdir -p "$W/$STUDY_OUT" "$W/data"
    cp -r "$STUDY_EXAMPLES/." "$W/$STUDY_OUT/"
    [[ ! -d $W/$STUDY_OUT/oracle ]] || mv "$W/$STUDY_OUT/oracle" "$W/data/"
    find "$W/$STUDY_OUT" -name model.pt >"$W/$STUDY_OUT/.restored"
    say "restored $(find "$W/$STUDY_OUT" -type f | wc -l) files of $STUDY_EXAMPLES"
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || say "no GPU here"
}

# The packages the host lacks (kit.sh's .deb files), unpacked into /opt/devkit once.
step_debs() {
  local f
  [[ ! -f /opt/devkit/.unpacked ]] || return 0
  mkdir -p /opt/devkit
  for f in "$KIT"/*.deb; do dpkg -x "$f" /opt/devkit || return 1; done
  touch /opt/devkit/.unpacked
}

step_build() {
  step_debs || return 1
  local torch prefix start=$SECONDS
  torch=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  prefix="$torch;/opt/devkit/usr;/opt/devkit/usr/lib/x86_64-linux-gnu/cmake"
  cd "$W" || return 1
  [[ -f build-gpu/build.ninja ]] || cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" >build-gpu.configure.log 2>&1 || { tail -30 build-gpu.configure.log; return 1; }
  # shellcheck disable=SC2086  # a list of targets
  cmake --build build-gpu -j"$(nproc)" --target $BUILD_TARGETS 2>&1 | tail -3
  local rc=${PIPESTATUS[0]}
  cd "$SESSION" || return 1
  say "build of $BUILD_TARGETS: exit $rc, $((SECONDS - start)) s"
  return "$rc"
}

step_gputest() {
  mkdir -p "$OUT"
  (cd "$W/build-gpu" && timeout "${GPU_TEST_S:-$(($(left) - 30))}" ctest -L gpu -R "${GPU_TESTS:-.}" ${GPU_TESTS_EXCLUDE:+-E "$GPU_TESTS_EXCLUDE"} \
    --output-on-failure) >"$OUT/gputest.log" 2>&1
  local rc=$?
  tail -15 "$OUT/gputest.log"
  say "gputest: exit $rc"
}

step_study() {
  mkdir -p "$STATE"
  [[ -f $STATE/pid ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null && { say "study already running"; return 0; }
  rm -f "$STATE/done"
  cat >"$STATE/calls.sh" <<EOF
cd $W
for only in $STUDY_ONLY; do
  echo "[study-session] --only \$only"
  tools/study.sh $STUDY_ARGS --out $STUDY_OUT --sparserl $SPARSERL --only "\$only" $STUDY_SETS
  rc=\$?
  echo "[study-session] --only \$only: exit \$rc"
  [ \$rc = 0 ] || break
done
echo \$rc >$STATE/done
EOF
  setsid nohup bash "$STATE/calls.sh" >>"$STATE/log" 2>&1 &
  echo $! >"$STATE/pid"
  say "study started: $STUDY_ONLY"
}

step_poll() {
  while [[ ! -f $STATE/done ]] && (($(left) > 45)); do sleep 5; done
  grep -E '^\[study|^\[study-session|error|Error' "$STATE/log" | tail -12
  [[ -f $STATE/done ]] && say "study calls ended: exit $(cat "$STATE/done")" || say "study still running"
}

step_collect() {
  mkdir -p "$OUT"
  local o=$W/$STUDY_OUT run
  [[ -d $o ]] || { say "nothing to collect"; return 0; }
  # Each RL run's per-update phases (needs h5py on the host; skipped without it), by the session's
  # tools/update_phases.py: its columns (timeouts, crashes, the slowest evaluation) read any run's log.
  for run in "$o"/*/runs/*/*/; do
    [[ -f $run/trajectories.h5 && -f $run/run.json && ! -f $run/phases.md ]] || continue
    grep -q '"status": *"completed"' "$run/run.json" || continue
    python3 "$SESSION/tools/update_phases.py" "$run" >"$run/phases.md" 2>/dev/null || rm -f "$run/phases.md"
  done
  (cd "$o" && find . \( -name report.md -o -name run.json -o -name summary.csv -o -name results.csv \
    -o -name policies.txt -o -name phases.md -o -name study.txt -o -name commands.log -o -name policies.list \
    -o -regex '.*/runs/\(grpo\|ppo\|reinforce\)[a-z-]*-s[0-9]+/[^/]+/metrics.jsonl' \) \
    -not -path './examples/*' -print0 | tar czf "$OUT/examples.tgz" --null -T - tables)
  # SFT seed 1's weights (the RL rows of later sessions start from them), once.
  local sft
  sft=$(find "$o" -path '*/runs/sft-s1/*/policies/sft/model.pt' 2>/dev/null | head -1)
  if [[ -n $sft ]] && ! grep -qF "$sft" "$o/.restored" 2>/dev/null && [[ ! -f $STATE/sft-sent ]]; then
    (cd "$o" && tar czf "$OUT/policy-sft-s1.tgz" --exclude optimizer.pt --exclude rng.pt "$(dirname "${sft#"$o"/}")") &&
      touch "$STATE/sft-sent"
  fi
  [[ ! -d $W/data/oracle ]] || tar czf "$OUT/oracle.tgz" -C "$W/data" oracle
  # The benches' trajectories (every answer's and sample's source: what a slow answer was), each
  # finished bench's once, those under 8 MB, up to 12 MB a call (a call brings back 64 MB).
  local h5 list=() total=0 size
  touch "$STATE/h5-sent"
  while IFS= read -r h5; do
    grep -qxF "$h5" "$STATE/h5-sent" && continue
    grep -q '"status": *"completed"' "$(dirname "$o/$h5")/run.json" 2>/dev/null || continue
    size=$(stat -c %s "$o/$h5")
    ((size < 8000000 && total + size < 12000000)) || continue
    list+=("$h5")
    total=$((total + size))
  done < <(cd "$o" && find . -path '*/bench-*/*/trajectories.h5' | sort)
  if ((${#list[@]} > 0)); then
    (cd "$o" && tar czf "$OUT/bench-trajectories.tgz" "${list[@]}") && printf '%s\n' "${list[@]}" >>"$STATE/h5-sent"
  fi
  cp "$STATE/log" "$OUT/study.log" 2>/dev/null
  ls -la "$OUT"
}

# merge_file LANE FILE FOLDER...: LANE's FILE (LANE "." for a one-lane call) in the first of the
# folders that holds it; nothing when none does.
merge_file() {
  local lane=$1 file=$2 d
  shift 2
  for d in "$@"; do
    [[ -f $d/$lane/$file ]] && { echo "$d/$lane/$file"; return 0; }
  done
  return 0
}

# merge LAST [EARLIER...] (here): what a session's calls brought back, into STUDY_EXAMPLES. LAST is
# the session's last call's files (the device tool's files_at): its examples.tgz, study.log and
# oracle.tgz, or those of each of its lane-G/ folders (tools/study_session_lanes.sh); a lane's file
# the last call did not bring back (the device tool returns eight files a call) is taken from the
# first EARLIER folder that has it. Files new to the examples folder are copied; commands.log and
# study.txt gain the lines each lane added after the restored folder's (their first lines must be
# the folder's: the lane started from it); study.log gains each lane's log; the oracle's cache
# gains its new entries; a run the session's end cut off (its run.json not "completed") is left
# out. Every folder's bench-trajectories.tgz (each call sends its benches' once) goes into one
# archive, bench-trajectories-STAMP.tgz, not unpacked (the device call's carry stays small). Then
# the tables are made again over every completed bench, with STUDY_SPARSERL (build/tools/sparserl).
step_merge() {
  local last=$1 ex=${STUDY_EXAMPLES} sparserl=${STUDY_SPARSERL:-$SESSION/build/tools/sparserl}
  local sources=() tmp f g n d log
  [[ -d $ex ]] || { echo "merge: no examples folder $ex" >&2; return 1; }
  ex=$(cd "$ex" && pwd)  # the archive below is written from another folder
  [[ -x $sparserl ]] || { echo "merge: no sparserl at $sparserl (STUDY_SPARSERL)" >&2; return 1; }
  # The lanes: the last call's (".", a one-lane call, or its lane-*/ folders); their files: merge_file.
  local lanes=() lane
  if [[ -f $last/examples.tgz ]]; then lanes=(.); else
    for d in "$last"/lane-*/; do [[ -d $d ]] && lanes+=("$(basename "$d")"); done
  fi
  for lane in "${lanes[@]}"; do
    [[ -n $(merge_file "$lane" examples.tgz "$@") ]] && sources+=("$lane")
  done
  ((${#sources[@]} > 0)) || { echo "merge: no examples.tgz in $last or its lane-*/ folders" >&2; return 1; }
  tmp=$(mktemp -d)
  for log in commands.log study.txt; do  # as the folder was before any lane's lines
    if [[ -f $ex/$log ]]; then cp "$ex/$log" "$tmp/$log.before"; else : >"$tmp/$log.before"; fi
  done
  for lane in "${sources[@]}"; do
    g=$lane
    [[ $g != . ]] || g=$(basename "$last")
    rm -rf "$tmp/x" && mkdir -p "$tmp/x" && tar xzf "$(merge_file "$lane" examples.tgz "$@")" -C "$tmp/x" || return 1
    for log in commands.log study.txt; do
      [[ -f $tmp/x/$log ]] || continue
      n=$(wc -l <"$tmp/$log.before")
      cmp -s <(head -n "$n" "$tmp/x/$log") "$tmp/$log.before" ||
        { echo "merge: $g's $log does not begin with $ex/$log: not a session restored from it" >&2; return 1; }
      tail -n +"$((n + 1))" "$tmp/x/$log" >>"$ex/$log"
    done
    # A run or bench the session's end cut off (run.json not "completed") is left out.
    (cd "$tmp/x" && find . -name run.json -exec grep -L '"status": *"completed"' {} + | xargs -r -n1 dirname) >"$tmp/cut"
    (cd "$tmp/x" && find . -type f ! -name commands.log ! -name study.txt ! -name policies.list ! -path './tables/*') |
      while IFS= read -r f; do
        while IFS= read -r c; do [[ $f == "$c"/* ]] && continue 2; done <"$tmp/cut"
        if [[ ! -e $ex/$f ]]; then mkdir -p "$(dirname "$ex/$f")" && cp "$tmp/x/$f" "$ex/$f"
        elif ! cmp -s "$tmp/x/$f" "$ex/$f"; then say "merge: kept $ex/${f#./}; $g's differs"; fi
      done
    f=$(merge_file "$lane" study.log "$@")
    [[ -z $f ]] || { echo "[study-session] $(date -u +%F), $g"; cat "$f"; } >>"$ex/study.log"
    f=$(merge_file "$lane" oracle.tgz "$@")
    if [[ -n $f ]]; then
      rm -rf "$tmp/o" && mkdir -p "$tmp/o" && tar xzf "$f" -C "$tmp/o" && mkdir -p "$ex/oracle" &&
        cp -rn "$tmp/o/oracle/." "$ex/oracle/"
    fi
  done
  # The benches' trajectories of every call, in one archive.
  mkdir -p "$tmp/h5"
  for d in "$@"; do
    for f in "$d"/bench-trajectories.tgz "$d"/lane-*/bench-trajectories.tgz; do
      [[ -f $f ]] && tar xzf "$f" -C "$tmp/h5"
    done
  done
  if [[ -n $(find "$tmp/h5" -name trajectories.h5) ]]; then
    f=bench-trajectories-$(date -u +%Y%m%dT%H%M%SZ).tgz
    (cd "$tmp/h5" && find . -name trajectories.h5 | sort | tar czf "$ex/$f" -T -) ||
      { echo "merge: could not write $ex/$f" >&2; return 1; }
    say "merge: $f"
  fi
  # The tables, again over every completed bench of each table.
  local table part runs
  for table in "$ex"/*/; do
    table=$(basename "$table")
    for part in val test; do
      [[ -d $ex/$table/bench-$part ]] || continue
      runs=()
      for d in "$ex/$table/bench-$part"/*/; do
        d=$(run_dir_with "${d%/}" completed)
        [[ -z $d ]] || runs+=("${d#"$ex"/}")
      done
      ((${#runs[@]} > 0)) || continue
      local cmp=(compare "${runs[@]}" --seeds-in-names --out "tables/$table-$part")
      compgen -G "$ex/$table/bench-$part/sft-s*/" >/dev/null && cmp+=(--reference sft)
      (cd "$ex" && mkdir -p tables && "$sparserl" "${cmp[@]}" >"tables/$table-$part.txt") ||
        { echo "merge: sparserl ${cmp[*]} failed in $ex" >&2; return 1; }
      say "merge: tables/$table-$part (${#runs[@]} benches)"
    done
  done
  rm -rf "$tmp"
}

case ${1:-} in
  pack)
    [[ $# == 2 ]] || { echo "usage: tools/study_session.sh pack COMMIT" >&2; exit 2; }
    step_pack "$2"
    exit
    ;;
  merge)
    [[ $# -ge 2 ]] || { echo "usage: tools/study_session.sh merge LAST_CALL_DIR [EARLIER_CALL_DIR...]" >&2; exit 2; }
    shift
    step_merge "$@"
    exit
    ;;
esac
for s in "$@"; do
  case "$s" in
    setup | debs | build | gputest | study | poll | collect)
      say "$s"
      "step_$s" || { say "$s failed"; exit 1; }
      ;;
    *) echo "study_session.sh: unknown step $s" >&2; exit 2 ;;
  esac
done
