#!/usr/bin/env bash
# tools/study.sh: issue 26's algorithm study end to end, from the configs under
# experiments/configs/study/ (docs/study.md says what it runs and why). In order:
#   1. SFT-only policies (pretrain -> SFT on the template search's near-best programs of bench-v2's
#      train part), one per SFT seed;
#   2. from SFT seed 1's policy, every RL row (REINFORCE, PPO, GRPO and its variants) with each RL
#      seed and the same budget of sampled programs;
#   3. the ablations (SpMV f32): the policy's matrix input (features only, none) and the medium
#      preset, each its own SFT seeds and GRPO seeds;
#   4. one `sparserl bench` of the val part per table - the template search, random tokens and every
#      policy above side by side - and `sparserl compare` of it;
#   5. only when every val table exists: the test part, once, the same way.
# Then OUT/examples/: every run's report.md and run.json, the benches' results and summaries and
# the tables, what docs/examples/ keeps of the study. Tables: SpMV f32 (every row, every regime), SpMV f64 and SpMM f32 K = 32 (SFT and the three
# algorithms, on the large regime). Resumable: a run whose run.json says completed is kept, an
# interrupted one is resumed (`sparserl train --resume`), so the same command continues a stopped
# study. It refuses a source tree with local changes unless --allow-dirty: the tables must name a
# clean commit. --smoke runs the whole path on a CPU in minutes (tiny policy, compile-only reward,
# two matrices, one step of everything); its tables measure nothing. --pilot is the study cut to
# what one GPU session's device time allows (about 25 minutes on one H100 / H200, by the figures in
# docs/study.md): the headline table alone, SFT-only against REINFORCE, PPO and GRPO, 3 RL seeds
# from one SFT seed, 20 updates a run, bench-v2's small shared matrices only - a first look with
# intervals, not the study. --gpus N trains the runs of a stage N at a time, one a GPU (the SFT runs,
# then the RL runs; a stage of one run and the benches see every GPU). --only REGEX is the study
# spread over several GPU sessions whose hosts keep nothing: only the runs named TABLE/LABEL-sSEED
# that match (and the template search and random, TABLE/template and TABLE/random), each agent benched on
# its own (val, then test) as soon as it is trained, and the tables compared over every agent's
# bench found under OUT - those of earlier sessions brought back into OUT included.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/tools/lib/runs.sh"
CONFIGS=experiments/configs/study
SPARSERL=${SPARSERL:-$ROOT/build/tools/sparserl}
OUT=""
SEEDS=5
SFT_SEEDS=2
SMOKE=0
PILOT=0
ALLOW_DIRTY=0
TEST_PART=1
GPUS=1
ONLY=""
HF_SHAPE=""
HF_ROW=hf
EXTRA=()

usage() {
  cat <<'EOF'
usage: tools/study.sh [--out DIR] [--sparserl PATH] [--seeds N] [--sft-seeds N] [--no-test]
                      [--allow-dirty] [--smoke] [--pilot] [--gpus N] [--only REGEX]
                      [--hf SHAPE] [--hf-row NAME] [--set KEY=VALUE]...
  --out DIR        where the runs and tables go (default runs/study; runs/study-pilot with
                   --pilot, runs/study-smoke with --smoke)
  --sparserl PATH  the sparserl binary (default $SPARSERL, else build/tools/sparserl)
  --seeds N        RL seeds per row (default 5; 3 with --pilot)
  --sft-seeds N    SFT seeds (default 2; 1 with --pilot); every RL row starts from SFT seed 1
  --no-test        stop after the val tables (the test part is read once, at the end)
  --allow-dirty    run from a tree with local changes (its tables cannot name a clean commit)
  --smoke          the whole pipeline on a CPU with tiny budgets and the compile-only reward
  --pilot          the headline table cut to one GPU session: sft, reinforce, ppo, grpo; 20
                   updates a run; small shared matrices (with --smoke: that path on a CPU)
  --gpus N         train up to N runs at once, each on its own GPU (CUDA_VISIBLE_DEVICES: the
                   first N of its list where set, else 0 .. N-1), its output in OUT/lanes/;
                   default 1 (one run after another, every GPU visible to each)
  --only REGEX     only the runs whose name TABLE/LABEL-sSEED matches the extended regular
                   expression (spmv-f32/sft-s1, spmv-f32/grpo-s3, ...; spmv-f32/template and
                   spmv-f32/random for those agents; e.g. '^spmv-f32/(sft-s1|template)$'): each
                   benched alone on val and, unless --no-test, on test right after, into
                   OUT/TABLE/bench-PART/NAME/; the tables compare every agent bench under OUT
                   (RL runs need their SFT row's seed-1 run, from this or an earlier session);
                   with --pilot it may name the full study's other rows too (grpo-log2, ...),
                   which then run on the pilot's budgets
  --hf SHAPE       two more rows in spmv-f32: sft-hf and grpo-hf, the SFT and GRPO rows with a
                   Hugging Face-format policy of that shape (e.g. experiments/models/qwen2-42m.json,
                   over experiments/models/tokenizer.json) in place of the small one, initialised
                   once into OUT/models/NAME (`sparserl agent init-hf --seed 0`) and pretrained on
                   the CUDA corpus (../shared/corpus/cuda) beside the design space's programs
  --hf-row NAME    the --hf rows' name: sft-NAME and grpo-NAME (default hf), e.g. for another
                   budget of the same shape beside rows already run (lowercase words and dashes)
  --set KEY=VALUE  passed to every sparserl train and bench (e.g. data.index_dirs for this host),
                   after the --smoke and --pilot settings, so that it wins over them
EOF
}

die() {
  echo "study: $*" >&2
  exit 2
}

ARGS=("$@")  # for study.txt
SEEDS_GIVEN=0
SFT_SEEDS_GIVEN=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --sparserl) SPARSERL=$2; shift 2 ;;
    --seeds) SEEDS=$2; SEEDS_GIVEN=1; shift 2 ;;
    --sft-seeds) SFT_SEEDS=$2; SFT_SEEDS_GIVEN=1; shift 2 ;;
    --no-test) TEST_PART=0; shift ;;
    --allow-dirty) ALLOW_DIRTY=1; shift ;;
    --smoke) SMOKE=1; shift ;;
    --pilot) PILOT=1; shift ;;
    --gpus) GPUS=$2; shift 2 ;;
    --hf) HF_SHAPE=$2; shift 2 ;;
    --hf-row) HF_ROW=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --set) EXTRA+=(--set "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
if [[ $PILOT == 1 ]]; then
  # The pilot's own defaults, unless given.
  [[ $SEEDS_GIVEN == 1 ]] || SEEDS=3
  [[ $SFT_SEEDS_GIVEN == 1 ]] || SFT_SEEDS=1
fi
[[ $SEEDS =~ ^[1-9][0-9]*$ ]] || die "--seeds: $SEEDS is not a positive integer"
[[ $SFT_SEEDS =~ ^[1-9][0-9]*$ ]] || die "--sft-seeds: $SFT_SEEDS is not a positive integer"
[[ $GPUS =~ ^[1-9][0-9]*$ ]] || die "--gpus: $GPUS is not a positive integer"
# The device of each lane.
if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
  IFS=, read -ra DEVICES <<<"$CUDA_VISIBLE_DEVICES"
else
  mapfile -t DEVICES < <(seq 0 $((GPUS - 1)))
fi
((${#DEVICES[@]} >= GPUS)) || die "--gpus $GPUS: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES names ${#DEVICES[@]}"
[[ -x $SPARSERL ]] || die "no sparserl binary at $SPARSERL (build it, or give --sparserl PATH)"
if [[ -n $HF_SHAPE ]]; then
  [[ -f $HF_SHAPE ]] || die "--hf: no model shape file $HF_SHAPE (experiments/models/*.json)"
  HF_SHAPE=$(cd "$(dirname "$HF_SHAPE")" && pwd)/$(basename "$HF_SHAPE")
fi
[[ $HF_ROW =~ ^[a-z0-9]+(-[a-z0-9]+)*$ && ! $HF_ROW =~ -s[0-9]+$ ]] ||
  die "--hf-row: '$HF_ROW' is not a row name (lowercase words and dashes, not ending in -sN)"
if [[ -z $OUT ]]; then
  OUT=runs/study
  [[ $PILOT == 0 ]] || OUT+=-pilot
  [[ $SMOKE == 0 ]] || OUT+=-smoke
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The tree the tables will name: tracked files unchanged, or --allow-dirty.
record_tree "$ROOT" "$ALLOW_DIRTY" "$OUT/study.txt" "tools/study.sh ${ARGS[*]}"

# Smoke: every budget at its least, two small shared matrices, the compile stage of the reward.
SMOKE_SETS=()
if [[ $SMOKE == 1 ]]; then
  for kv in evaluator.compile_only=true agent.device='"cpu"' policy.preset='"tiny"' \
    env.nnz_samples=16 env.embedding_dim=16 \
    'data.regimes=["small"]' 'data.sources=["shared"]' data.max_tasks=2 \
    train.corpus_programs=8 train.pretrain_steps=1 train.pretrain_batch_size=2 \
    train.sft_steps=1 train.sft_batch_size=2 train.search_budget=1 train.sft_per_task=1 \
    train.rl_updates=1 train.tasks_per_update=1 train.samples_per_task=2 \
    train.record_trajectories=false agent.ppo.epochs=1 agent.ppo.minibatches=1 bench.max_tasks=1 \
    bench.samples=1 bench.template_budget=1 \
    bench.oracle_budget=1 bench.record_trajectories=false report.plots=false \
    progress.interval_s=1000; do
    SMOKE_SETS+=(--set "$kv")
  done
fi

# Pilot: the budgets and matrices that fit one GPU session; the row and table lists are cut below.
PILOT_SETS=()
if [[ $PILOT == 1 ]]; then
  PILOT_SETS=(--set 'data.sources=["shared"]')
  [[ $SMOKE == 1 ]] || PILOT_SETS+=(--set train.rl_updates=20)
fi

exec 3>&2  # the terminal's stderr, also from a lane whose stderr goes to its log
log() { echo "[study $(date -u +%H:%M:%S)] $*" >&3; }

# selected TABLE/NAME: whether --only (if given) names this run or agent.
selected() { [[ -z $ONLY || $1 =~ $ONLY ]]; }

# train TABLE LABEL SEED CONFIG [ARGS...]: one `sparserl train`, skipped when done, resumed when
# stopped. Prints the finished run directory.
train() {
  local table=$1 label=$2 seed=$3 config=$4
  shift 4
  local runs="$OUT/$table/runs/$label-s$seed" done_dir stopped
  done_dir=$(run_dir_with "$runs" completed)
  if [[ -n $done_dir ]]; then
    log "$table $label-s$seed: done ($done_dir)"
    echo "$done_dir"
    return 0
  fi
  stopped=$(run_dir_with "$runs" "interrupted|running")
  mkdir -p "$runs"
  if [[ -n $stopped ]]; then
    log "$table $label-s$seed: resuming $stopped"
    echo "sparserl train --resume $stopped" >>"$OUT/commands.log"
    "$SPARSERL" train --resume "$stopped" --root "$ROOT" >&2
  else
    local cmd=(train "$ROOT/$CONFIGS/$config" --root "$ROOT" --runs-dir "$runs"
      --set "experiment.seed=$seed" "$@" "${PILOT_SETS[@]}" "${SMOKE_SETS[@]}" "${EXTRA[@]}")
    log "$table $label-s$seed: sparserl ${cmd[*]}"
    echo "sparserl ${cmd[*]}" >>"$OUT/commands.log"
    "$SPARSERL" "${cmd[@]}" >&2
  fi
  done_dir=$(run_dir_with "$runs" completed)
  [[ -n $done_dir ]] || die "$table $label-s$seed did not complete (see $runs)"
  echo "$done_dir"
}

# The rows of a table: "LABEL CONFIG SFT_LABEL SETS" (SFT_LABEL - for an SFT row; SETS are --set
# values separated by spaces, - for none).
rows_of() {
  local table=$1
  echo "sft sft.toml - -"
  echo "reinforce reinforce.toml sft -"
  echo "ppo ppo.toml sft -"
  echo "grpo grpo.toml sft -"
  if [[ $table == spmv-f32 && -n $HF_SHAPE ]]; then
    echo "sft-$HF_ROW sft.toml - $(hf_sets) train.text_corpus=[\"$ROOT/../shared/corpus/cuda\"]"
    echo "grpo-$HF_ROW grpo.toml sft-$HF_ROW $(hf_sets)"
  fi
  # The full study's other rows; under --pilot only where --only names them (the pilot's budgets).
  [[ $table == spmv-f32 && ($PILOT == 0 || -n $ONLY) ]] || return 0
  local variant
  for variant in grpo-symmetric grpo-seq-mean grpo-dr grpo-dynamic; do
    echo "$variant $variant.toml sft -"
  done
  echo 'grpo-log2 grpo.toml sft reward.shape="log2"'
  echo 'sft-features sft.toml - policy.matrix_input="features"'
  echo 'grpo-features grpo.toml sft-features policy.matrix_input="features"'
  echo 'sft-no-matrix sft.toml - policy.matrix_input="none"'
  echo 'grpo-no-matrix grpo.toml sft-no-matrix policy.matrix_input="none"'
  echo 'sft-medium sft.toml - policy.preset="medium"'
  echo 'grpo-medium grpo.toml sft-medium policy.preset="medium"'
}

# The --set values of the --hf rows' policy (no spaces inside one): the model folder `hf_model`
# makes, bf16 compute over fp32 master weights (fp32 on the smoke's CPU).
hf_sets() {
  local sets="agent.model.kind=\"hf\" agent.model.path=$OUT/models/$(basename "$HF_SHAPE" .json)"
  sets+=' agent.model.prompt="soft"'
  if [[ $SMOKE == 1 ]]; then
    sets+=' agent.model.dtype="float32" train.text_corpus_files=2'
  else
    sets+=' agent.model.dtype="bfloat16"'
  fi
  echo "$sets"
}

# hf_model: the --hf rows' initial model, OUT/models/NAME, made once from the shape with the
# project's tokenizer and seed 0 (the same weights on every host).
hf_model() {
  local dir
  dir=$OUT/models/$(basename "$HF_SHAPE" .json)
  [[ ! -f $dir/model.safetensors ]] || return 0
  local cmd=(agent init-hf --config "$HF_SHAPE" --tokenizer "$ROOT/experiments/models/tokenizer.json"
    --out "$dir" --seed 0)
  log "hf model: sparserl ${cmd[*]}"
  echo "sparserl ${cmd[*]}" >>"$OUT/commands.log"
  "$SPARSERL" "${cmd[@]}" >&2 || die "sparserl agent init-hf failed for $HF_SHAPE"
}

# The task of each table (and, in the smoke mode, room for its programs), and the regimes its
# benches read.
table_sets() {
  case "$1" in
    spmv-f32) echo "" ;;
    spmv-f64) echo 'data.dtype="f64"' ;;
    spmm-k32) echo 'data.op="spmm" data.k=32' ;;
  esac
  # (640: the --hf rows' BPE grammar mask needs 603, and every policy of a table, benched side by
  # side and started from one SFT policy, has the same budget.)
  [[ $SMOKE == 0 ]] || { [[ $1 == spmm-k32 ]] && echo env.max_tokens=1024 || echo env.max_tokens=640; }
}
table_regimes() { [[ $1 == spmv-f32 ]] && echo "" || echo 'data.regimes=["large"]'; }

# The table's teacher store, decompressed into OUT once (its path printed; nothing when the table
# has none): experiments/configs/study/teacher/TABLE.jsonl.gz, a measurement store that `sparserl
# tune --measurements` made on the GPU host with the SFT config's search settings. The SFT run
# that searches takes the store's recorded searches for the matrices they cover
# (train.teacher_store) and searches only the others.
teacher_store() {
  local gz="$ROOT/$CONFIGS/teacher/$1.jsonl.gz" out="$OUT/teacher/$1.jsonl"
  [[ -f $gz ]] || return 0
  if [[ ! -f $out ]]; then
    mkdir -p "$OUT/teacher"
    gzip -dc "$gz" >"$out.part"
    mv "$out.part" "$out"
  fi
  echo "$out"
}

# run_job "TABLE LABEL SEED CONFIG KEY=VALUE...": one `train`, each KEY=VALUE a --set.
run_job() {
  local fields sets=() kv
  read -ra fields <<<"$1"
  for kv in "${fields[@]:4}"; do sets+=(--set "$kv"); done
  train "${fields[@]:0:4}" "${sets[@]}" >/dev/null
}

# lanes JOB...: the `train` calls JOB ("TABLE LABEL SEED CONFIG ARGS...", no spaces inside an
# item), --gpus of them at once: lane g takes jobs g, g + N, ... one after another on its GPU, its
# stderr in $OUT/lanes/. One job, or --gpus 1, runs here with every GPU visible.
lanes() {
  local job g f pids=() failed=0
  if ((GPUS == 1 || $# == 1)); then
    for job in "$@"; do run_job "$job"; done
    return 0
  fi
  mkdir -p "$OUT/lanes"
  local jobs=("$@")
  # LibTorch's OpenMP pool takes every core in each process: N processes' small CPU ops at every
  # step then spin against each other, and sampling on the GPU ran 11x slower beside three busy
  # LibTorch processes on an H100 host (docs/study.md). Each lane gets its
  # share of the cores, unless OMP_NUM_THREADS is set.
  local threads=${OMP_NUM_THREADS:-$(($(nproc) / GPUS > 0 ? $(nproc) / GPUS : 1))}
  for ((g = 0; g < GPUS && g < ${#jobs[@]}; g++)); do
    (
      export CUDA_VISIBLE_DEVICES=${DEVICES[g]} OMP_NUM_THREADS=$threads
      for ((i = g; i < ${#jobs[@]}; i += GPUS)); do
        read -ra f <<<"${jobs[i]}"
        log "lane $g (GPU $CUDA_VISIBLE_DEVICES, $OMP_NUM_THREADS threads): ${f[0]} ${f[1]}-s${f[2]}"
        run_job "${jobs[i]}"
      done
    ) 2>>"$OUT/lanes/lane-$g.log" &
    pids+=($!)
  done
  for g in "${!pids[@]}"; do
    wait "${pids[g]}" || { failed=1; log "lane $g failed: $OUT/lanes/lane-$g.log"; tail -5 "$OUT/lanes/lane-$g.log" >&3; }
  done
  ((failed == 0)) || die "a lane failed (logs in $OUT/lanes)"
}

# Trains every row of table $1 (the SFT rows, then the RL rows from SFT seed 1's policies, each
# stage in lanes); prints the bench's policies as "NAME=CHECKPOINT" lines in the rows' order.
train_table() {
  local table=$1 stage label config from sets seed kv args sft jobs
  for stage in sft rl; do
    jobs=()
    while read -r label config from sets; do
      [[ $stage == sft && $from == - || $stage == rl && $from != - ]] || continue
      args=$(table_sets "$table" | tr '\n' ' ')
      [[ $sets == - ]] || args+=" $sets"
      if [[ $stage == sft ]]; then
        for ((seed = 1; seed <= SFT_SEEDS; seed++)); do
          selected "$table/$label-s$seed" && jobs+=("$table $label $seed $config $args")
        done
      else
        local rl_seeds=()
        for ((seed = 1; seed <= SEEDS; seed++)); do
          selected "$table/$label-s$seed" && rl_seeds+=("$seed")
        done
        ((${#rl_seeds[@]} > 0)) || continue
        sft=$(run_dir_with "$OUT/$table/runs/$from-s1" completed)
        [[ -n $sft ]] || die "$table $label: the SFT run $from-s1 has not completed"
        for seed in "${rl_seeds[@]}"; do
          jobs+=("$table $label $seed $config $args train.init_checkpoint=$sft/policies/sft")
        done
      fi
    done < <(rows_of "$table")
    if [[ $stage == sft && ${#jobs[@]} -gt 0 ]]; then
      # The template search once per table: the first SFT run (every GPU visible) searches - the
      # matrices the table's teacher store covers taken from the store - and saves its pairs
      # (sft-pairs.json); the table's other SFT runs - seeds, ablations - train on those pairs
      # (train.sft_pairs) instead of searching again, minutes a matrix on large ones.
      # sft-s1's pairs where that run is done already (an earlier call, or --only's earlier session).
      local first_fields pairs i store
      store=$(teacher_store "$table")
      if [[ -n $store ]]; then
        for ((i = 0; i < ${#jobs[@]}; i++)); do jobs[i]+=" train.teacher_store=$store"; done
      fi
      pairs=$(run_dir_with "$OUT/$table/runs/sft-s1" completed)
      if [[ -z $pairs && ${#jobs[@]} -gt 1 ]]; then
        read -ra first_fields <<<"${jobs[0]}"
        lanes "${jobs[0]}"
        pairs=$(run_dir_with "$OUT/$table/runs/${first_fields[1]}-s${first_fields[2]}" completed)
        jobs=("${jobs[@]:1}")
      fi
      if [[ -n $pairs && -f $pairs/sft-pairs.json ]]; then
        for ((i = 0; i < ${#jobs[@]}; i++)); do
          [[ -z $store ]] || jobs[i]=${jobs[i]/" train.teacher_store=$store"/}
          jobs[i]+=" train.sft_pairs=$pairs/sft-pairs.json"
        done
      fi
    fi
    ((${#jobs[@]} == 0)) || lanes "${jobs[@]}"
  done
  while read -r label config from sets; do
    local n=$SEEDS policy=rl
    [[ $from != - ]] || { n=$SFT_SEEDS; policy=sft; }
    for ((seed = 1; seed <= n; seed++)); do
      selected "$table/$label-s$seed" || continue
      echo "$label-s$seed=$(run_dir_with "$OUT/$table/runs/$label-s$seed" completed)/policies/$policy"
    done
  done < <(rows_of "$table")
}

# bench_run TABLE PART RUNS AGENTS POLICIES...: one `sparserl bench` of PART into RUNS, of AGENTS
# (a TOML list for bench.agents; empty: bench.toml's, the template search and random) and the
# policies NAME=CHECKPOINT; prints its run directory. A finished bench is kept unless what it
# compared changed.
bench_run() {
  local table=$1 part=$2 runs=$3 agents=$4
  shift 4
  local list="[]" record dir kv args=()
  if (($# > 0)); then
    list=$(printf '"%s",' "$@")
    list="[${list%,}]"
  fi
  record=$list
  [[ -z $agents ]] || record+=" agents $agents"
  dir=$(run_dir_with "$runs" completed)
  if [[ -n $dir ]] && ! cmp -s <(echo "$record") "$runs/policies.txt"; then
    die "$runs holds a bench of other policies ($runs/policies.txt): remove it to bench again"
  fi
  if [[ -z $dir ]]; then
    mkdir -p "$runs"
    echo "$record" >"$runs/policies.txt"
    for kv in $(table_sets "$table") $(table_regimes "$table"); do args+=(--set "$kv"); done
    [[ -z $agents ]] || args+=(--set "bench.agents=$agents")
    local cmd=(bench "$ROOT/$CONFIGS/bench.toml" --root "$ROOT" --runs-dir "$runs"
      "${args[@]}" --set "bench.policies=$list" "${PILOT_SETS[@]}" "${SMOKE_SETS[@]}" "${EXTRA[@]}")
    [[ $part == val ]] || cmd+=(--part "$part")
    # An --hf row's episodes hold its own tokenizer's ids, which the trajectory file does not keep:
    # `sparserl bench` refuses to record them (results.csv keeps every answer's program digest).
    local p
    for p in "$@"; do
      [[ ! ${p%%=*} =~ -$HF_ROW-s[0-9]+$ ]] || { cmd+=(--set bench.record_trajectories=false); break; }
    done
    log "$table bench $part: sparserl ${cmd[*]}"
    echo "sparserl ${cmd[*]}" >>"$OUT/commands.log"
    "$SPARSERL" "${cmd[@]}" >&2
    dir=$(run_dir_with "$runs" completed)
    [[ -n $dir ]] || die "$table bench $part did not complete (see $runs)"
  fi
  echo "$dir"
}

# compare_table TABLE PART BENCH_RUN...: `sparserl compare` of the benches into
# $OUT/tables/TABLE-PART/ (SFT-only the reference where it was benched).
compare_table() {
  local table=$1 part=$2
  shift 2
  local cmp=(compare "$@" --seeds-in-names --out "$OUT/tables/$table-$part")
  if [[ -z $ONLY ]] || compgen -G "$OUT/$table/bench-$part/sft-s*/" >/dev/null; then cmp+=(--reference sft); fi
  [[ $SMOKE == 0 ]] || cmp+=(--no-plots)
  log "$table compare $part: sparserl ${cmp[*]}"
  echo "sparserl ${cmp[*]}" >>"$OUT/commands.log"
  "$SPARSERL" "${cmp[@]}" >"$OUT/tables/$table-$part.txt"
}

# bench TABLE PART POLICIES...: one `sparserl bench` of every agent on PART, then its comparison.
bench() {
  local table=$1 part=$2 dir
  shift 2
  dir=$(bench_run "$table" "$part" "$OUT/$table/bench-$part" "" "$@")
  compare_table "$table" "$part" "$dir"
}

# bench_each TABLE PART POLICIES... (--only): the template search and random where selected, and
# each policy, benched alone into OUT/TABLE/bench-PART/NAME/; then the table of every agent bench
# of PART under OUT, this call's and those an earlier session left (none: no table).
bench_each() {
  local table=$1 part=$2 p a agents="" d dirs=()
  shift 2
  for a in template random; do selected "$table/$a" && agents+="\"$a\","; done
  [[ -z $agents ]] || bench_run "$table" "$part" "$OUT/$table/bench-$part/agents" "[${agents%,}]" >/dev/null
  for p in "$@"; do bench_run "$table" "$part" "$OUT/$table/bench-$part/${p%%=*}" "[]" "$p" >/dev/null; done
  for d in "$OUT/$table/bench-$part"/*/; do
    [[ -d $d ]] || continue
    d=$(run_dir_with "${d%/}" completed)
    [[ -z $d ]] || dirs+=("$d")
  done
  ((${#dirs[@]} == 0)) || compare_table "$table" "$part" "${dirs[@]}"
}

TABLES=(spmv-f32 spmv-f64 spmm-k32)
[[ $PILOT == 0 ]] || TABLES=(spmv-f32)
mkdir -p "$OUT/tables"
declare -A POLICIES
[[ -z $HF_SHAPE ]] || hf_model
for table in "${TABLES[@]}"; do
  mkdir -p "$OUT/$table"
  train_table "$table" >"$OUT/$table/policies.list"
  mapfile -t policies <"$OUT/$table/policies.list"
  POLICIES[$table]="${policies[*]}"
  if [[ -n $ONLY ]]; then
    # Each agent's test bench right after its val bench: no choice in the study reads either
    # (each row's policy is its run's last), so the test part is still read once per agent.
    # shellcheck disable=SC2086  # checkpoint paths hold no spaces: run directories are named safely
    bench_each "$table" val ${POLICIES[$table]}
    # shellcheck disable=SC2086
    [[ $TEST_PART == 0 ]] || bench_each "$table" test ${POLICIES[$table]}
    continue
  fi
  # shellcheck disable=SC2086
  bench "$table" val ${POLICIES[$table]}
done
if [[ $TEST_PART == 1 && -z $ONLY ]]; then
  for table in "${TABLES[@]}"; do
    # shellcheck disable=SC2086
    bench "$table" test ${POLICIES[$table]}
  done
fi
# What docs/examples/ keeps of the study (issue 26): each run's report.md and run.json, each
# bench's results and summary, the tables and the commands, without checkpoints or trajectories.
collect() {
  local into="$OUT/examples" f rel
  rm -rf "$into"
  mkdir -p "$into"
  cp "$OUT/study.txt" "$OUT/commands.log" "$into/"
  cp -r "$OUT/tables" "$into/"
  while IFS= read -r f; do
    rel=${f#"$OUT"/}
    mkdir -p "$into/$(dirname "$rel")"
    cp "$f" "$into/$rel"
  done < <(find "$OUT" -path "$into" -prune -o -type f \( -name report.md -o -name run.json \
    -o -name summary.csv -o -name results.csv \) -print)
  echo "$into"
}

echo "finished $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$OUT/study.txt"
for f in "$OUT"/tables/*/compare.md; do echo "table    $f"; done
echo "examples $(collect)   (reports, summaries and tables for docs/examples/)"
