#!/usr/bin/env bash
# The study spread over GPU sessions whose hosts keep nothing (tools/study.sh --only, docs/study.md)
# on the CPU: a first call trains and benches SFT seed 1, one GRPO seed and the template and random
# agents; a second call on a fresh output folder that holds only what a session carries back and
# forth - SFT seed 1's run.json, policy and pairs, and the benches' folders - trains a second GRPO
# seed and a REINFORCE seed from that SFT policy without training SFT or benching the template
# search again, and its tables compare every agent of both calls (GRPO with two runs). Also: a
# name --only does not select is neither trained nor benched, and an RL run whose SFT run is
# missing is refused by name; under --pilot, --only may name a row of the full study (grpo-log2).
# Skipped (77) without ../shared's matrices.
# Usage: study_sessions_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"
study() {
  "$SRC/tools/study.sh" --smoke --pilot --allow-dirty --sparserl "$SPARSERL" --seeds 2 \
    --set "data.index_dirs=[\"$SHARED/matrices\", \"$SHARED/matrices/real\"]" "$@"
}
agents_of() { grep ",all,compile_rate," "$1" | cut -d, -f1 | sort | tr '\n' ' '; }

# 1. The first session.
study --out "$WORK/one" --only '^spmv-f32/(sft-s1|grpo-s1|template|random)$' >"$WORK/one.out" 2>"$WORK/one.err" ||
  { tail -30 "$WORK/one.err"; fail "the first session failed"; }
[[ $(ls "$WORK/one/spmv-f32/runs" | tr '\n' ' ') == "grpo-s1 sft-s1 " ]] ||
  fail "the first session trained $(ls "$WORK/one/spmv-f32/runs")"
for part in val test; do
  [[ $(ls "$WORK/one/spmv-f32/bench-$part" | tr '\n' ' ') == "agents grpo-s1 sft-s1 " ]] ||
    fail "the first session's $part benches: $(ls "$WORK/one/spmv-f32/bench-$part")"
  agents=$(agents_of "$WORK/one/tables/spmv-f32-$part/compare.csv")
  [[ $agents == "grpo random sft template " ]] || fail "first session, $part: agents $agents"
done

# 2. A fresh host: only the carried files.
sft=$(cd "$WORK/one" && ls -d spmv-f32/runs/sft-s1/*/)
mkdir -p "$WORK/two/$sft"
cp "$WORK/one/$sft"/{run.json,sft-pairs.json} "$WORK/two/$sft/"
# The SFT policy without its optimizer state and generator (optimizer.pt is twice the weights: 30 MB
# of the small preset, over what a device call brings back in one file): the RL rows load its weights.
mkdir -p "$WORK/two/$sft/policies/sft"
for f in "$WORK/one/$sft"/policies/sft/*; do
  case ${f##*/} in optimizer.pt | rng.pt) ;; *) cp "$f" "$WORK/two/$sft/policies/sft/" ;; esac
done
[[ -f $WORK/two/$sft/policies/sft/model.pt && ! -f $WORK/two/$sft/policies/sft/optimizer.pt ]] ||
  fail "the carried SFT policy: $(ls "$WORK/two/$sft/policies/sft")"
cp -r "$WORK/one/spmv-f32/bench-val" "$WORK/one/spmv-f32/bench-test" "$WORK/two/spmv-f32/"
study --out "$WORK/two" --only '^spmv-f32/(grpo-s2|reinforce-s1)$' >"$WORK/two.out" 2>"$WORK/two.err" ||
  { tail -30 "$WORK/two.err"; fail "the second session failed"; }
[[ $(ls "$WORK/two/spmv-f32/runs" | tr '\n' ' ') == "grpo-s2 reinforce-s1 sft-s1 " ]] ||
  fail "the second session trained $(ls "$WORK/two/spmv-f32/runs")"
grep -q "train.init_checkpoint=$WORK/two/$sft" "$WORK/two/commands.log" ||
  fail "the RL runs did not start from the carried SFT policy"
! grep -q "runs-dir $WORK/two/spmv-f32/bench-val/agents" "$WORK/two/commands.log" ||
  fail "the second session benched the template search again"
for part in val test; do
  csv=$WORK/two/tables/spmv-f32-$part/compare.csv
  agents=$(agents_of "$csv")
  [[ $agents == "grpo random reinforce sft template " ]] || fail "second session, $part: agents $agents"
  grep -q "^5 agents, 5 run directories" "$WORK/two/tables/spmv-f32-$part/compare.md" ||
    fail "second session, $part: $(sed -n 3p "$WORK/two/tables/spmv-f32-$part/compare.md")"
done

# 2b. Under --pilot, --only may name a row of the full study: grpo-log2 from the carried SFT policy,
# on the pilot's budgets, in the tables beside the pilot's rows.
study --out "$WORK/two" --only '^spmv-f32/grpo-log2-s1$' >"$WORK/log2.out" 2>"$WORK/log2.err" ||
  { tail -30 "$WORK/log2.err"; fail "the pilot's grpo-log2 call failed"; }
grep -q "study/grpo.toml .*runs-dir $WORK/two/spmv-f32/runs/grpo-log2-s1 .*reward.shape=\"log2\" .*train.init_checkpoint=$WORK/two/$sft" \
  "$WORK/two/commands.log" || fail "grpo-log2 did not train with the log2 shape from the carried SFT policy"
[[ $(ls "$WORK/two/spmv-f32/runs" | tr '\n' ' ') == "grpo-log2-s1 grpo-s2 reinforce-s1 sft-s1 " ]] ||
  fail "the grpo-log2 call trained $(ls "$WORK/two/spmv-f32/runs")"
agents=$(agents_of "$WORK/two/tables/spmv-f32-test/compare.csv")
[[ $agents == "grpo grpo-log2 random reinforce sft template " ]] || fail "grpo-log2 call, test: agents $agents"

# 3. An RL run without its SFT run is refused, naming it.
if study --out "$WORK/three" --only '^spmv-f32/ppo-s1$' >"$WORK/three.out" 2>"$WORK/three.err"; then
  fail "ppo-s1 without sft-s1 ran"
fi
grep -q "ppo: the SFT run sft-s1 has not completed" "$WORK/three.err" || fail "$(tail -3 "$WORK/three.err")"
echo "study sessions: two calls, the second from the carried SFT policy and benches, one table of five agents"
