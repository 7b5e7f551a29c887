#!/usr/bin/env bash
# The study's pilot (tools/study.sh --pilot, docs/study.md) on the CPU, stopped the way a device
# call's time limit stops it and started again: `timeout` signals the whole process group, the RL
# run in progress saves a checkpoint and says `interrupted`, and the same command resumes that run
# (`sparserl train --resume`), trains the rest and produces the tables. The resumed run logs every
# update exactly once. Also: the pilot's rows and table are the cut ones (sft, reinforce, ppo, grpo;
# spmv-f32 only). Skipped (77) without ../shared's matrices.
# Usage: study_pilot_resume_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"
UPDATES=20
study=("$SRC/tools/study.sh" --smoke --pilot --allow-dirty --sparserl "$SPARSERL" --out "$WORK/pilot"
  --seeds 1 --set "data.index_dirs=[\"$SHARED/matrices\", \"$SHARED/matrices/real\"]"
  --set "train.rl_updates=$UPDATES")
REINFORCE=$WORK/pilot/spmv-f32/runs/reinforce-s1

# 1. Started in its own process group; stopped as `timeout` stops a command once the first RL run
#    has logged an update.
setsid "${study[@]}" >"$WORK/first.out" 2>"$WORK/first.err" &
leader=$!
for _ in $(seq 1 1200); do
  if compgen -G "$REINFORCE/*/metrics.jsonl" >/dev/null &&
    grep -q '"stage":"rl"' "$REINFORCE"/*/metrics.jsonl; then
    break
  fi
  kill -0 "$leader" 2>/dev/null || { tail -20 "$WORK/first.err"; fail "the pilot ended before it was stopped"; }
  sleep 0.1
done
kill -TERM -- "-$leader"
wait "$leader" && fail "the stopped pilot exited 0" || true
# The shell goes at once; sparserl finishes its step, saves a checkpoint and exits.
for _ in $(seq 1 600); do
  kill -0 -- "-$leader" 2>/dev/null || break
  sleep 0.1
done
kill -0 -- "-$leader" 2>/dev/null && fail "processes of the stopped pilot still run after 60 s"
grep -Eq '"status": *"interrupted"' "$REINFORCE"/*/run.json ||
  fail "the stopped run is not interrupted: $(grep '"status"' "$REINFORCE"/*/run.json)"
before=$(grep -c '"stage":"rl"' "$REINFORCE"/*/metrics.jsonl)
[[ $before -lt $UPDATES ]] || fail "the run was not stopped early ($before of $UPDATES updates)"

# 2. The same command resumes it and finishes the pilot.
"${study[@]}" >"$WORK/second.out" 2>"$WORK/second.err" || { tail -30 "$WORK/second.err"; fail "the resumed pilot failed"; }
grep -q "reinforce-s1: resuming" "$WORK/second.err" || fail "the second call did not resume reinforce-s1"
grep -Eq '"status": *"completed"' "$REINFORCE"/*/run.json || fail "the resumed run did not complete"
[[ $(ls -d "$REINFORCE"/*/ | wc -l) == 1 ]] || fail "the resumed run made a second run directory"
steps=$(python3 - "$REINFORCE"/*/metrics.jsonl <<'PY'
import json, sys
print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1]) if json.loads(l).get("stage") == "rl"))
PY
)
[[ $steps == "$(seq -s ' ' 1 $UPDATES)" ]] || fail "the resumed run's RL steps are not 1..$UPDATES once each: $steps"

# 3. The pilot's cut: one table, four rows, template and random beside them.
for part in val test; do
  csv=$WORK/pilot/tables/spmv-f32-$part/compare.csv
  [[ -f $csv ]] || fail "no $csv"
  agents=$(grep ",all,compile_rate," "$csv" | cut -d, -f1 | sort | tr '\n' ' ')
  [[ $agents == "grpo ppo random reinforce sft template " ]] || fail "$part: agents $agents"
done
[[ ! -e $WORK/pilot/spmv-f64 && ! -e $WORK/pilot/spmm-k32 ]] || fail "the pilot made other tables"
echo "study pilot: stopped at $before of $UPDATES updates, resumed, every step once, one table of four rows"
