#!/usr/bin/env bash
# The study's driver end to end on the CPU (tools/study.sh --smoke, docs/study.md): every config of
# experiments/configs/study/ trains, chains and is benched, and every table of the val and the test
# part comes out with every agent in it, and the files for docs/examples/ beside them, with the runs
# of each stage trained in two lanes (--gpus 2); a second call, in one lane, trains nothing again;
# a source tree with local changes is refused before anything runs. Skipped (77) without ../shared's
# matrices.
# Usage: study_smoke_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"

# 1. A tree with local changes is refused, naming the way out; nothing is made.
git init -q "$WORK/tree"
mkdir -p "$WORK/tree/tools/lib"
cp "$SRC/tools/study.sh" "$WORK/tree/tools/"
cp "$SRC/tools/lib/runs.sh" "$WORK/tree/tools/lib/"
git -C "$WORK/tree" add tools/study.sh tools/lib/runs.sh
git -C "$WORK/tree" -c user.email=t@t -c user.name=t commit -qm tree
echo "# changed" >>"$WORK/tree/tools/study.sh"
set +e
refusal=$("$WORK/tree/tools/study.sh" --smoke --sparserl "$SPARSERL" --out "$WORK/dirty" 2>&1)
status=$?
set -e
[[ $status == 2 ]] || fail "a dirty tree: exit status $status, expected 2"
grep -q "has local changes" <<<"$refusal" || fail "a dirty tree: $refusal"
[[ ! -e $WORK/dirty/study.txt ]] || fail "a dirty tree: study.txt written"

# 2. The smoke study: one seed of everything (the full study has 5 RL and 2 SFT seeds), the runs
#    of a stage two at a time (the devices named are not used: the smoke policy runs on the CPU).
run() {
  "$SRC/tools/study.sh" --smoke --allow-dirty --sparserl "$SPARSERL" --out "$WORK/study" \
    --seeds 1 --sft-seeds 1 --set "data.index_dirs=[\"$SHARED/matrices\", \"$SHARED/matrices/real\"]" \
    --set train.record_trajectories=true "$@"  # (for tools/update_phases.py below)
}
# Each lane gets half of the cores for LibTorch's threads (OMP_NUM_THREADS unset).
(unset OMP_NUM_THREADS; CUDA_VISIBLE_DEVICES=7,5 run --gpus 2) >"$WORK/first.txt" 2>"$WORK/first.err" ||
  { tail -30 "$WORK/first.err"; fail "the smoke study failed"; }
t=$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))
# A table's first SFT run alone (every GPU visible: the template search), the other SFT runs in
# lanes on its pairs, then the RL runs in lanes.
grep -q "spmv-f32 sft-s1: sparserl train" "$WORK/first.err" || fail "sft-s1 did not run first, alone"
grep -q "lane .*: spmv-f32 sft-s1" "$WORK/first.err" && fail "sft-s1 ran in a lane"
for lane in "0 (GPU 7, $t threads): spmv-f32 sft-features-s1" \
  "1 (GPU 5, $t threads): spmv-f32 sft-no-matrix-s1" \
  "1 (GPU 5, $t threads): spmv-f32 ppo-s1" "0 (GPU 7, $t threads): spmm-k32 grpo-s1"; do
  grep -q "lane $lane" "$WORK/first.err" || fail "no run in lane $lane: $(grep -m4 'lane ' "$WORK/first.err")"
done
grep -q "^run directory: $WORK/study/spmv-f32/runs/sft-no-matrix-s1/" "$WORK/study/lanes/lane-1.log" ||
  fail "lane 1's log holds no training of sft-no-matrix"
grep -q "sft-features.*train.sft_pairs=$WORK/study/spmv-f32/runs/sft-s1/.*/sft-pairs.json" \
  "$WORK/study/commands.log" || fail "sft-features does not train on sft-s1's pairs"
grep -q "runs-dir $WORK/study/spmv-f32/runs/sft-s1 .*train.sft_pairs=" "$WORK/study/commands.log" &&
  fail "sft-s1 was given pairs instead of searching"
# spmv-f32's teacher store (experiments/configs/study/teacher/) goes to the run that searches, and
# only to it; the smoke's two small shared matrices are not in it, so both are searched.
store="$WORK/study/teacher/spmv-f32.jsonl"
[[ -s $store ]] || fail "the spmv-f32 teacher store was not decompressed into $store"
grep -q "runs-dir $WORK/study/spmv-f32/runs/sft-s1 .*train.teacher_store=$store" \
  "$WORK/study/commands.log" || fail "sft-s1 was not given the teacher store"
grep -q "sft-features.*train.teacher_store=" "$WORK/study/commands.log" &&
  fail "sft-features was given the teacher store beside sft-s1's pairs"
grep -q "sft: 0 pairs from the measurement store $store for 0 of 2 training matrices" \
  "$WORK/first.err" || fail "sft-s1 did not read the teacher store: $(grep -m3 'sft:' "$WORK/first.err")"

expect_agents() {  # TABLE AGENT...
  local table=$1 part csv
  shift
  for part in val test; do
    csv="$WORK/study/tables/$table-$part/compare.csv"
    [[ -f $csv ]] || fail "no $csv"
    [[ -f $WORK/study/tables/$table-$part/compare.md ]] || fail "no compare.md for $table-$part"
    for agent in "$@"; do
      grep -q "^$agent,all,compile_rate," "$csv" || fail "$table-$part: no compile_rate row of $agent"
    done
    # The agents and no others: template, random and one per row.
    local n
    n=$(grep -c ",all,compile_rate," "$csv")
    [[ $n == "$#" ]] || fail "$table-$part: $n agents, expected $#"
  done
}
main=(template random sft reinforce ppo grpo)
expect_agents spmv-f32 "${main[@]}" grpo-symmetric grpo-seq-mean grpo-dr grpo-dynamic grpo-log2 \
  sft-features grpo-features sft-no-matrix grpo-no-matrix sft-medium grpo-medium
expect_agents spmv-f64 "${main[@]}"
expect_agents spmm-k32 "${main[@]}"
grep -q "^commit " "$WORK/study/study.txt" || fail "study.txt names no commit"
grep -q 'study/grpo.toml .*runs-dir [^ ]*/runs/grpo-log2-s1 .*reward.shape="log2"' "$WORK/study/commands.log" ||
  fail "grpo-log2 does not train with the log2 speed shape"
# The RL rows start from their SFT row's run, with the configs' budget of sampled programs.
grep -q "train.init_checkpoint=$WORK/study/spmv-f32/runs/sft-features-s1/.*/policies/sft" \
  "$WORK/study/commands.log" || fail "grpo-features does not start from sft-features"

# What docs/examples/ would keep: tables, reports and summaries, never weights.
[[ -f $WORK/study/examples/tables/spmv-f32-test/compare.md ]] || fail "examples: no tables"
ls "$WORK"/study/examples/spmv-f32/bench-test/*/summary.csv >/dev/null || fail "examples: no summary"
ls "$WORK"/study/examples/spmv-f32/runs/grpo-s1/*/report.md >/dev/null || fail "examples: no report"
[[ -z $(find "$WORK/study/examples" -name '*.pt') ]] || fail "examples: weights copied"
# Every training run's report has the curves its config asks for (PPO's losses are not `loss`, SFT
# logs no reward): a config naming a statistic its algorithm does not log shows here. Not
# grpo-dynamic: the compile-only reward gives every group of its one update one reward, dynamic
# sampling skips them all, and a skipped update takes no step and logs no loss.
absent=$(grep -l "Not logged by this run" "$WORK"/study/*/runs/*/*/report.md | grep -v /grpo-dynamic-s) \
  && fail "reports missing configured curves: $absent"

# Where an RL run's updates spent their evaluation (tools/update_phases.py, docs/study.md): the
# smoke's grpo-s1 is one update of one task's 2 programs, compiled on the CPU.
# (The first python with h5py: the system's, which tools/setup.sh provides it to, where python3
# on PATH is another.)
py=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import h5py' 2>/dev/null; then py=$candidate && break; fi
done
if [[ -n $py ]]; then
  grpo_run=$(ls -d "$WORK"/study/spmv-f32/runs/grpo-s1/*/ | head -1)
  phases=$("$py" "$SRC/tools/update_phases.py" "$grpo_run") || fail "update_phases.py: $phases"
  grep -q ": 2 programs, 2 an update, 1 updates, 1 tasks" <<<"$phases" || fail "phases: $phases"
  grep -q "^| 1 | 2 | 1 | 1 | [0-2] | 0.0 | 0.0 | .*compile=" <<<"$phases" || fail "phases: $phases"
else
  echo "study smoke: h5py missing, tools/update_phases.py not checked"
fi

# 3. Resumable: the second call finds every run and bench finished and trains nothing.
run >"$WORK/second.txt" 2>"$WORK/second.err" || { tail -30 "$WORK/second.err"; fail "second call"; }
if grep -q "sparserl train\|sparserl bench\|resuming" "$WORK/second.err"; then
  fail "the second call ran again: $(grep -m3 'sparserl train\|sparserl bench\|resuming' "$WORK/second.err")"
fi
grep -q ": done (" "$WORK/second.err" || fail "the second call did not find the runs done"
echo "study smoke: every table and agent present; the second call trained nothing"
