#!/usr/bin/env bash
# The study's --hf rows on the CPU (tools/study.sh --smoke --pilot --hf SHAPE, docs/study.md): the
# tiny Qwen2 shape is initialised once into OUT/models/, SFT with it (sft-hf) pretrains on the CUDA
# corpus beside the design space's programs and trains on sft-s1's pairs, GRPO (grpo-hf) starts
# from sft-hf's policy with the same model settings, both are benched beside SFT on val and test
# (without trajectories, which bench refuses to record for an HF policy, where the others record);
# a second call initialises nothing again; a missing shape file is refused before anything runs;
# --hf-row names another pair of rows (sft-NAME, grpo-NAME) beside them.
# Skipped (77) without ../shared's matrices.
# Usage: study_hf_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"
[[ -d $SRC/../shared/corpus/cuda ]] || { echo "skipped: no $SRC/../shared/corpus/cuda (the --hf rows read it there)"; exit 77; }

run() {
  "$SRC/tools/study.sh" --smoke --pilot --allow-dirty --sparserl "$SPARSERL" --out "$WORK/study" \
    --sft-seeds 1 --seeds 1 --set "data.index_dirs=[\"$SHARED/matrices\", \"$SHARED/matrices/real\"]" \
    --set bench.record_trajectories=true "$@"
}

# 1. A shape file that is not there: refused, nothing made.
set +e
refusal=$(run --hf "$WORK/none.json" --only '^spmv-f32/sft-hf-s1$' 2>&1)
status=$?
set -e
[[ $status == 2 ]] || fail "a missing shape: exit status $status, expected 2"
grep -q "no model shape file $WORK/none.json" <<<"$refusal" || fail "a missing shape: $refusal"
[[ ! -e $WORK/study/commands.log ]] || fail "a missing shape: commands.log written"

# 2. SFT seed 1, then the HF rows.
run --hf "$SRC/experiments/models/qwen2-tiny.json" --only '^spmv-f32/(sft-s1|sft-hf-s1|grpo-hf-s1)$' \
  >"$WORK/first.txt" 2>"$WORK/first.err" || { tail -30 "$WORK/first.err"; fail "the --hf study failed"; }
out=$WORK/study
log=$out/commands.log
[[ $(grep -c "sparserl agent init-hf --config $SRC/experiments/models/qwen2-tiny.json" "$log") == 1 ]] ||
  fail "the tiny model was not initialised once: $(grep -c init-hf "$log")"
[[ -f $out/models/qwen2-tiny/model.safetensors ]] || fail "no model folder in $out/models"
sft=$(grep "sparserl train .*runs-dir $out/spmv-f32/runs/sft-hf-s1 " "$log") || fail "sft-hf-s1 was not trained"
for want in 'agent.model.kind="hf"' "agent.model.path=$out/models/qwen2-tiny" "train.text_corpus=\[\"$SRC/../shared/corpus/cuda\"\]" \
  "train.sft_pairs=$out/spmv-f32/runs/sft-s1/"; do
  grep -q -- "$want" <<<"$sft" || fail "sft-hf-s1's command lacks $want"
done
checkpoint=$(ls "$out"/spmv-f32/runs/sft-hf-s1/*/policies/sft/checkpoint.txt)
grep -qx 'config.model.kind = hf' "$checkpoint" || fail "sft-hf-s1's policy is no HF model"
grpo=$(grep "sparserl train .*study/grpo.toml .*runs-dir $out/spmv-f32/runs/grpo-hf-s1 " "$log") || fail "grpo-hf-s1 was not trained"
grep -q -- "train.init_checkpoint=$out/spmv-f32/runs/sft-hf-s1/.*/policies/sft" <<<"$grpo" || fail "grpo-hf did not start from sft-hf"
grep -q -- 'agent.model.kind="hf"' <<<"$grpo" || fail "grpo-hf's command lacks the HF model"
# The benches of the HF rows do not record trajectories (bench refuses an HF policy's), the others do.
compgen -G "$out/spmv-f32/bench-val/sft-s1/*/trajectories.h5" >/dev/null || fail "sft-s1's bench recorded no trajectories"
! compgen -G "$out/spmv-f32/bench-val/sft-hf-s1/*/trajectories.h5" >/dev/null || fail "sft-hf-s1's bench recorded trajectories"
for part in val test; do
  agents=$(grep ",all,compile_rate," "$out/tables/spmv-f32-$part/compare.csv" | cut -d, -f1 | sort | tr '\n' ' ')
  [[ $agents == "grpo-hf sft sft-hf " ]] || fail "$part table: agents $agents"
done

# 3. Again: everything is done, the model is not made again.
run --hf "$SRC/experiments/models/qwen2-tiny.json" --only '^spmv-f32/(sft-s1|sft-hf-s1|grpo-hf-s1)$' \
  >"$WORK/second.txt" 2>"$WORK/second.err" || { tail -30 "$WORK/second.err"; fail "the second call failed"; }
[[ $(grep -c "init-hf" "$log") == 1 ]] || fail "the second call initialised the model again"
grep -q "spmv-f32 sft-hf-s1: done" "$WORK/second.err" || fail "the second call trained sft-hf again"
# 4. Rows of another name beside them (--hf-row): sft-hf-long from the same model folder, its bench
# without trajectories, in the tables beside the first rows; a name that is no row name is refused.
set +e
refusal=$(run --hf "$SRC/experiments/models/qwen2-tiny.json" --hf-row 'Long-s2' 2>&1)
status=$?
set -e
[[ $status == 2 ]] && grep -q -- "--hf-row: 'Long-s2' is not a row name" <<<"$refusal" ||
  fail "a bad --hf-row: exit status $status, $refusal"
run --hf "$SRC/experiments/models/qwen2-tiny.json" --hf-row hf-long --only '^spmv-f32/sft-hf-long-s1$' \
  >"$WORK/third.txt" 2>"$WORK/third.err" || { tail -30 "$WORK/third.err"; fail "the --hf-row call failed"; }
long=$(grep "sparserl train .*runs-dir $out/spmv-f32/runs/sft-hf-long-s1 " "$log") || fail "sft-hf-long-s1 was not trained"
grep -q -- "agent.model.path=$out/models/qwen2-tiny" <<<"$long" || fail "sft-hf-long-s1 did not start from the model folder"
[[ $(grep -c "init-hf" "$log") == 1 ]] || fail "the --hf-row call initialised the model again"
! compgen -G "$out/spmv-f32/bench-val/sft-hf-long-s1/*/trajectories.h5" >/dev/null ||
  fail "sft-hf-long-s1's bench recorded trajectories"
for part in val test; do
  agents=$(grep ",all,compile_rate," "$out/tables/spmv-f32-$part/compare.csv" | cut -d, -f1 | sort | tr '\n' ' ')
  [[ $agents == "grpo-hf sft sft-hf sft-hf-long " ]] || fail "$part table with --hf-row: agents $agents"
done
echo "study --hf: the tiny model made once, sft-hf and grpo-hf trained on it and benched beside SFT; --hf-row rows beside them"
