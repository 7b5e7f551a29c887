#!/usr/bin/env bash
# tools/teacher_table.sh: issue 25's table - the template search (the teacher and oracle) against
# cuSPARSE's best path on bench-v2's large regime, one part (val, or test once at the end), for
# SpMV f32 and f64 and SpMM K = 8 and 32 in f32 and f64 - as `sparserl bench` runs of
# experiments/configs/bench-v2-large-learned.toml spread over the host's GPUs, then one table
# (tools/teacher_table.py): per op, dtype and K the geomean speedup, the slowest matrix, the copy
# bandwidth of the regular families, each against the issue's aims, and per matrix what limits it
# (its roofline fraction, cuSPARSE's winning path and that path's own fraction, the search's wall
# time). Each run is one job TABLE/GROUP (spmv-f32/irregular, spmm-f64-k32/regular, ...): a bench
# of one family group, in OUT/PART/TABLE/GROUP/; a job whose run completed is skipped, so the same
# command continues after a session's end (bring OUT back into the next session). Jobs run in
# lanes, one a GPU (--gpus N). The tree must be clean (the table names its commit) unless
# --allow-dirty. docs/design-space.md, "Issue 25's table over several GPUs", says how to run it.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/tools/lib/runs.sh"
CONFIG=$ROOT/experiments/configs/bench-v2-large-learned.toml
SPARSERL=${SPARSERL:-$ROOT/build/tools/sparserl}
PART=val
OUT=runs/teacher-table
GPUS=1
ONLY=""
ANALYTIC=0
ALLOW_DIRTY=0
TABLES="spmv-f32,spmv-f64,spmm-f32-k32,spmm-f32-k8,spmm-f64-k32,spmm-f64-k8"
GROUP_SPECS=()
EXTRA=()

usage() {
  cat <<'EOF'
usage: tools/teacher_table.sh [--part val|test] [--out DIR] [--sparserl PATH] [--gpus N]
                              [--tables LIST] [--group NAME:FAMILY,...]... [--only REGEX]
                              [--analytic] [--allow-dirty] [--set KEY=VALUE]...
  --part val|test   the part of bench-v2 (default val; the test part once, at the end)
  --out DIR         where the runs and the table go (default runs/teacher-table): runs in
                    OUT/PART/TABLE/GROUP/, the table in OUT/teacher-PART.md
  --sparserl PATH   the sparserl binary (default $SPARSERL, else build/tools/sparserl)
  --gpus N          run up to N jobs at once, each on its own GPU (CUDA_VISIBLE_DEVICES: the first
                    N of its list where set, else 0 .. N-1); default 1
  --tables LIST     comma-separated, in the order run (default spmv-f32,spmv-f64,spmm-f32-k32,
                    spmm-f32-k8,spmm-f64-k32,spmm-f64-k8)
  --group NAME:FAMILY,...
                    a family group, one bench per table (repeatable; NAME: alone is every family).
                    Default: irregular:circuit,lp,lognormal,rmat,scaled-real and
                    regular:stencil,banded,block-aligned,block-unaligned,road
  --only REGEX      only the jobs whose name TABLE/GROUP matches the extended regular expression
  --analytic        the analytic search (bench.template_measurements=""), for a host without the
                    train part's measurement store
  --allow-dirty     run from a tree with local changes (its table cannot name a clean commit)
  --set KEY=VALUE   passed to every bench (e.g. data.index_dirs for this host), last, so it wins
EOF
}

die() {
  echo "teacher_table: $*" >&2
  exit 2
}

ARGS=("$@")
while (($#)); do
  case $1 in
    --part) PART=${2:-}; shift 2 ;;
    --out) OUT=${2:-}; shift 2 ;;
    --sparserl) SPARSERL=${2:-}; shift 2 ;;
    --gpus) GPUS=${2:-}; shift 2 ;;
    --tables) TABLES=${2:-}; shift 2 ;;
    --group) GROUP_SPECS+=("${2:-}"); shift 2 ;;
    --only) ONLY=${2:-}; shift 2 ;;
    --analytic) ANALYTIC=1; shift ;;
    --allow-dirty) ALLOW_DIRTY=1; shift ;;
    --set) EXTRA+=(--set "${2:-}"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ $PART == val || $PART == test ]] || die "--part: $PART is neither val nor test"
[[ $GPUS =~ ^[1-9][0-9]*$ ]] || die "--gpus: $GPUS is not a positive integer"
[[ -x $SPARSERL ]] || die "no sparserl binary at $SPARSERL (build it, or give --sparserl PATH)"
((${#GROUP_SPECS[@]})) || GROUP_SPECS=("irregular:circuit,lp,lognormal,rmat,scaled-real"
  "regular:stencil,banded,block-aligned,block-unaligned,road")
if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
  IFS=, read -ra DEVICES <<<"$CUDA_VISIBLE_DEVICES"
else
  mapfile -t DEVICES < <(seq 0 $((GPUS - 1)))
fi
((${#DEVICES[@]} >= GPUS)) || die "--gpus $GPUS: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES names ${#DEVICES[@]}"

# table_sets TABLE: the bench's --set values of one table name (spmv-f32, spmm-f64-k32), a line each.
table_sets() {
  local op dtype k
  IFS=- read -r op dtype k <<<"$1"
  [[ ($op == spmv && -z $k) || ($op == spmm && $k =~ ^k[1-9][0-9]*$) ]] && [[ $dtype =~ ^f(32|64)$ ]] ||
    die "--tables: '$1' is not spmv-f32|f64 or spmm-f32|f64-kK"
  echo "data.op=\"$op\""
  echo "data.dtype=\"$dtype\""
  [[ -z $k ]] || echo "data.k=${k#k}"
}

# group_sets SPEC: the --set value of a group NAME:FAMILY,... (none for every family).
group_sets() {
  local families=${1#*:} list
  [[ $1 == *:* && ${1%%:*} =~ ^[a-z0-9_-]+$ ]] || die "--group: '$1' is not NAME:FAMILY,..."
  [[ -n $families ]] || return 0
  list=$(sed 's/[^,][^,]*/"&"/g; s/,/, /g' <<<"$families")
  echo "data.families=[$list]"
}

JOBS=()
IFS=, read -ra TABLE_LIST <<<"$TABLES"
for table in "${TABLE_LIST[@]}"; do
  table_sets "$table" >/dev/null
  for spec in "${GROUP_SPECS[@]}"; do
    group_sets "$spec" >/dev/null
    name="$table/${spec%%:*}"
    [[ -z $ONLY || $name =~ $ONLY ]] && JOBS+=("$table $spec")
  done
done
((${#JOBS[@]})) || die "no job matches --only '$ONLY'"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
record_tree "$ROOT" "$ALLOW_DIRTY" "$OUT/teacher-$PART.txt" "tools/teacher_table.sh ${ARGS[*]}"
exec 3>&2
log() { echo "[teacher_table $(date -u +%H:%M:%S)] $*" >&3; }

# run_job "TABLE SPEC": one bench, skipped when a run of it completed.
run_job() {
  local table spec runs done_dir sets=() word
  read -r table spec <<<"$1"
  runs="$OUT/$PART/$table/${spec%%:*}"
  done_dir=$(run_dir_with "$runs" completed)
  if [[ -n $done_dir ]]; then
    log "$table/${spec%%:*}: done ($done_dir)"
    return 0
  fi
  mkdir -p "$runs"
  while read -r word; do
    [[ -n $word ]] && sets+=(--set "$word")
  done < <(table_sets "$table"; group_sets "$spec")
  ((ANALYTIC == 0)) || sets+=(--set 'bench.template_measurements=""')
  local cmd=(bench "$CONFIG" --part "$PART" --root "$ROOT" --runs-dir "$runs" "${sets[@]}" "${EXTRA[@]}")
  echo "sparserl ${cmd[*]}" >>"$OUT/commands.log"
  log "$table/${spec%%:*}: sparserl ${cmd[*]}"
  "$SPARSERL" "${cmd[@]}" >&2
}

# A failed job is logged and the others go on: the table is made of every completed run, and the
# call fails at the end naming the failed jobs.
FAILED=$OUT/failed-$PART.txt
rm -f "$FAILED"
try_job() { run_job "$1" || { log "${1%%:*}: FAILED"; echo "${1%%:*}" >>"$FAILED"; }; }
if ((GPUS == 1 || ${#JOBS[@]} == 1)); then
  for job in "${JOBS[@]}"; do try_job "$job"; done
else
  mkdir -p "$OUT/lanes"
  pids=()
  for ((g = 0; g < GPUS && g < ${#JOBS[@]}; g++)); do
    (
      export CUDA_VISIBLE_DEVICES=${DEVICES[g]}
      for ((i = g; i < ${#JOBS[@]}; i += GPUS)); do
        log "lane $g (GPU $CUDA_VISIBLE_DEVICES): ${JOBS[i]%%:*}"
        try_job "${JOBS[i]}"
      done
    ) 2>>"$OUT/lanes/lane-$g.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
fi

python3 "$ROOT/tools/teacher_table.py" "$OUT" --part "$PART" || [[ -s $FAILED ]]
[[ ! -s $FAILED ]] || die "these jobs failed (their logs: $OUT/lanes/ or above): $(tr '\n' ' ' <"$FAILED")"
