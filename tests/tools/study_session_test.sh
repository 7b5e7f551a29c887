#!/usr/bin/env bash
# The device kit of the study's GPU sessions (tools/study_session.sh, docs/study.md "The cut, second
# start") on the CPU with the smoke study: `pack` a commit's shallow tree, then two "sessions" on
# fresh trees that keep nothing but what the first one's `collect` brought back, laid out as the
# committed examples folder is. The first trains SFT seed 1 and benches it, the template search and
# random; its collect returns the reports, run.json files, benches and tables, and SFT seed 1's
# weights without the optimizer state. The second restores that folder, trains GRPO seed 1 from the
# restored SFT policy without training SFT or benching the template search again, tables every
# agent of both, and does not send the restored weights back; each session's collect returns its
# own benches' trajectories. A third session runs two lanes of tools/study_session_lanes.sh (a host of
# two GPUs), REINFORCE and PPO from the restored policy, each in its own tree; `merge` brings the
# lanes' collect into a copy of the examples folder and tables every agent. Skipped (77) without ../shared's
# matrices or where the source is not a git checkout.
# Usage: study_session_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"
git -C "$SRC" rev-parse --verify -q HEAD >/dev/null || { echo "skipped: $SRC is not a git checkout"; exit 77; }
cd "$SRC"
# The kit's settings of every call: the smoke study in temporary folders.
with_kit() {
  KIT=$WORK/kit SHARED=$SHARED STUDY_SPARSERL=$SPARSERL STUDY_ARGS="--smoke --pilot --seeds 1 --sft-seeds 1" \
    STUDY_SETS="--set bench.record_trajectories=true" STUDY_OUT=runs/study-kit DEADLINE=$(($(date +%s) + 300)) "$@"
}
kit() { with_kit bash "$SRC/tools/study_session.sh" "$@"; }
kit_lanes() { with_kit bash "$SRC/tools/study_session_lanes.sh" "$@"; }

# pack: the commit's tree alone (one commit of history) and the shared matrices.
kit pack HEAD >"$WORK/pack.out" 2>&1 || { cat "$WORK/pack.out"; fail "pack failed"; }
[[ $(cat "$WORK/kit/pin.commit") == $(git rev-parse HEAD) ]] || fail "pin.commit is not HEAD"
tar tzf "$WORK/kit/pin.tgz" >"$WORK/pin.list"  # a listing first: grep -q would end tar early (pipefail)
grep -qx 'w/tools/study.sh' "$WORK/pin.list" || fail "pin.tgz holds no w/tools/study.sh"
tar tzf "$WORK/kit/shared.tgz" >"$WORK/shared.list"
grep -qx 'matrices/INDEX.csv' "$WORK/shared.list" || fail "shared.tgz holds no matrices/INDEX.csv"

# 1. The first session: SFT seed 1, the template search and random.
STUDY_TREE=$WORK/one/w OUT=$WORK/back1 STUDY_EXAMPLES=$WORK/examples \
  STUDY_ONLY="'^spmv-f32/(sft-s1|template|random)\$'" kit setup study poll collect >"$WORK/one.out" 2>&1 ||
  { cat "$WORK/one.out"; fail "the first session failed"; }
grep -q "study calls ended: exit 0" "$WORK/one.out" || { cat "$WORK/one.out"; fail "the first session's study failed"; }
[[ $(git -C "$WORK/one/w" log --format=%H | wc -l) == 1 ]] || fail "the pinned tree holds more than one commit"
tar tzf "$WORK/back1/examples.tgz" >"$WORK/back1.list"
for want in 'study.txt' 'commands.log' 'spmv-f32/runs/sft-s1/.*/run.json' 'spmv-f32/bench-val/agents/.*/results.csv' \
  'spmv-f32/bench-test/sft-s1/policies.txt' 'tables/spmv-f32-test/compare.md'; do
  grep -Eq "^(\./)?$want$" "$WORK/back1.list" || fail "examples.tgz lacks $want"
done
! grep -q 'model.pt\|trajectories.h5' "$WORK/back1.list" || fail "examples.tgz holds weights or trajectories"
tar tzf "$WORK/back1/policy-sft-s1.tgz" >"$WORK/policy.list"
grep -q 'policies/sft/model.pt$' "$WORK/policy.list" || fail "policy-sft-s1.tgz lacks model.pt"
! grep -q 'optimizer.pt\|rng.pt' "$WORK/policy.list" || fail "policy-sft-s1.tgz holds the optimizer state"
tar tzf "$WORK/back1/bench-trajectories.tgz" | sort >"$WORK/h5.list"
[[ $(grep -c 'bench-\(val\|test\)/\(agents\|sft-s1\)/.*/trajectories.h5$' "$WORK/h5.list") == 4 ]] ||
  fail "bench-trajectories.tgz: $(cat "$WORK/h5.list")"
# A later call's collect on the same host sends neither those trajectories nor the weights again.
STUDY_TREE=$WORK/one/w OUT=$WORK/back1b kit collect >"$WORK/one-b.out" 2>&1 || fail "the second collect failed"
[[ -f $WORK/back1b/examples.tgz && ! -f $WORK/back1b/bench-trajectories.tgz && ! -f $WORK/back1b/policy-sft-s1.tgz ]] ||
  fail "the second collect sent again: $(ls "$WORK/back1b")"

# What a developer commits between sessions: the examples folder with SFT seed 1's weights.
mkdir -p "$WORK/examples"
tar xzf "$WORK/back1/examples.tgz" -C "$WORK/examples"
tar xzf "$WORK/back1/policy-sft-s1.tgz" -C "$WORK/examples"

# 2. A fresh host: GRPO seed 1 from the restored SFT policy.
STUDY_TREE=$WORK/two/w OUT=$WORK/back2 STUDY_EXAMPLES=$WORK/examples \
  STUDY_ONLY="'^spmv-f32/grpo-s1\$'" kit setup study poll collect >"$WORK/two.out" 2>&1 ||
  { cat "$WORK/two.out"; fail "the second session failed"; }
grep -q "study calls ended: exit 0" "$WORK/two.out" || { cat "$WORK/two.out"; fail "the second session's study failed"; }
out=$WORK/two/w/runs/study-kit
sft=$(cd "$out" && ls -d spmv-f32/runs/sft-s1/*/)
grep -q "train.init_checkpoint=$out/${sft}policies/sft" "$out/commands.log" ||
  fail "GRPO did not start from the restored SFT policy"
[[ $(grep -c "sparserl train .*study/sft.toml" "$out/commands.log") == 1 ]] ||
  fail "SFT was trained again: $(grep -c 'study/sft.toml' "$out/commands.log") SFT commands"
[[ $(grep -c "runs-dir [^ ]*/bench-val/agents " "$out/commands.log") == 1 ]] || fail "the template search was benched again"
for part in val test; do
  agents=$(grep ",all,compile_rate," "$out/tables/spmv-f32-$part/compare.csv" | cut -d, -f1 | sort | tr '\n' ' ')
  [[ $agents == "grpo random sft template " ]] || fail "second session, $part: agents $agents"
done
[[ ! -f $WORK/back2/policy-sft-s1.tgz ]] || fail "the second session sent the restored SFT weights back"
tar tzf "$WORK/back2/bench-trajectories.tgz" >"$WORK/h5-2.list"
[[ $(grep -c 'trajectories.h5$' "$WORK/h5-2.list") == 2 && $(grep -c 'grpo-s1' "$WORK/h5-2.list") == 2 ]] ||
  fail "the second session's bench-trajectories.tgz: $(cat "$WORK/h5-2.list")"
tar tzf "$WORK/back2/examples.tgz" >"$WORK/back2.list"
grep -q 'spmv-f32/runs/grpo-s1/.*/run.json' "$WORK/back2.list" || fail "examples.tgz lacks GRPO's run"
grep -q 'spmv-f32/runs/grpo-s1/.*/metrics.jsonl' "$WORK/back2.list" || fail "examples.tgz lacks GRPO's metrics.jsonl"
! grep -q 'runs/sft-s1/.*/metrics.jsonl' "$WORK/back2.list" || fail "examples.tgz holds an SFT run's metrics.jsonl"

# 3. A host of two GPUs (tools/study_session_lanes.sh): REINFORCE seed 1 in lane 0 and PPO seed 1
# in lane 1, each in its own tree restored from the same folder, each lane's calls and collect its own.
# Lane 1 runs a tree of its own that is there already (LANE_TREE_1, as the session's tree on the
# host; marked) with --hf: SFT with a tiny HF model too.
mkdir -p "$WORK/own" && tar xzf "$WORK/kit/pin.tgz" -C "$WORK/own" && touch "$WORK/own/w/OWN_TREE" || fail "the own tree"
STUDY_TREE=$WORK/three/w OUT=$WORK/back3 STUDY_EXAMPLES=$WORK/examples KIT_SCRIPT=$SRC/tools/study_session.sh \
  LANE_ONLY_0="'^spmv-f32/reinforce-s1\$'" LANE_ONLY_1="'^spmv-f32/ppo-s1\$' '^spmv-f32/sft-hf-s1\$' '^spmv-f32/grpo-hf-s1\$'" \
  LANE_TREE_1=$WORK/own/w LANE_ARGS_1="--smoke --pilot --seeds 1 --sft-seeds 1 --hf experiments/models/qwen2-tiny.json" \
  kit_lanes setup study poll collect >"$WORK/three.out" 2>&1 || { cat "$WORK/three.out"; fail "the lanes session failed"; }
[[ ! -e $WORK/three/w1 ]] || fail "lane 1 made a copy of the pinned tree instead of running its own"
own=$WORK/own/w/runs/study-kit
grep -q "sparserl train .*study/ppo.toml" "$own/commands.log" || fail "lane 1 did not train PPO in its own tree"
grep -q "sparserl agent init-hf .*qwen2-tiny.json" "$own/commands.log" || fail "lane 1 made no HF model"
grep -q 'config.model.kind = hf' "$own"/spmv-f32/runs/sft-hf-s1/*/policies/sft/checkpoint.txt ||
  fail "sft-hf-s1's policy is no HF model"
grep -q 'spmv-f32/runs/grpo-hf-s1/.*/metrics.jsonl' <(tar tzf "$WORK/back3/lane-1/examples.tgz") ||
  fail "lane 1's examples.tgz lacks grpo-hf's metrics.jsonl (an RL row's variant)"
[[ $(grep -c "study calls ended: exit 0" "$WORK/three.out") == 2 ]] || { cat "$WORK/three.out"; fail "a lane's study failed"; }
for lane in 0:reinforce:ppo:three/w 1:ppo:reinforce:own/w; do
  IFS=: read -r g mine other tree <<<"$lane"
  log=$WORK/$tree/runs/study-kit/commands.log
  grep -q "sparserl train .*study/$mine.toml" "$log" || fail "lane $g did not train $mine"
  ! grep -q "sparserl train .*study/$other.toml" "$log" || fail "lane $g trained $other too"
  [[ $(grep -c "sparserl train .*study/sft.toml .*runs-dir [^ ]*/runs/sft-s1 " "$log") == 1 ]] || fail "lane $g trained SFT again"
  tar tzf "$WORK/back3/lane-$g/examples.tgz" >"$WORK/back3-$g.list"
  grep -q "spmv-f32/runs/$mine-s1/.*/run.json" "$WORK/back3-$g.list" || fail "lane $g's examples.tgz lacks $mine"
  ! grep -q "spmv-f32/runs/$other-s1/" "$WORK/back3-$g.list" || fail "lane $g's examples.tgz holds $other"
  grep -q "spmv-f32/bench-test/$mine-s1/.*/results.csv" "$WORK/back3-$g.list" || fail "lane $g did not bench $mine on test"
done

# 4. merge (here): the lanes' collect into a copy of the examples folder. Lane 1's folder also
# holds a run the session's end cut off (its run.json "running"), which merge leaves out.
cp -r "$WORK/examples" "$WORK/merged"
mkdir -p "$WORK/cut/x/spmv-f32/runs/grpo-s9/study-grpo__9__20261129T000000Z"
tar xzf "$WORK/back3/lane-1/examples.tgz" -C "$WORK/cut/x"
echo '{"status": "running"}' >"$WORK/cut/x/spmv-f32/runs/grpo-s9/study-grpo__9__20261129T000000Z/run.json"
(cd "$WORK/cut/x" && tar czf "$WORK/back3/lane-1/examples.tgz" .)
before=$(wc -l <"$WORK/merged/commands.log")
# A later call whose lane 1 brought back only its study.log (the device tool's eight files a call
# left the rest out): merge takes lane 1's examples.tgz and oracle.tgz from the earlier call.
mkdir -p "$WORK/back4/lane-1" && cp -r "$WORK/back3/lane-0" "$WORK/back4/" &&
  cp "$WORK/back3/lane-1/study.log" "$WORK/back4/lane-1/" || fail "the later call's folder"
# The folder named relative to the working directory, as the docs' command names it.
(cd "$WORK" && STUDY_EXAMPLES=merged STUDY_SPARSERL=$SPARSERL bash "$SRC/tools/study_session.sh" merge \
  "$WORK/back4" "$WORK/back3") >"$WORK/merge.out" 2>&1 || { cat "$WORK/merge.out"; fail "merge failed"; }
m=$WORK/merged
for r in reinforce ppo; do
  compgen -G "$m/spmv-f32/runs/$r-s1/*/run.json" >/dev/null || fail "merge: no $r-s1 run in the examples folder"
  [[ $(grep -c "sparserl train .*study/$r.toml" "$m/commands.log") == 1 ]] || fail "merge: commands.log's $r lines"
done
[[ ! -e $m/spmv-f32/runs/grpo-s9 ]] || fail "merge copied a run the session's end cut off"
[[ $(head -n "$before" "$m/commands.log") == "$(cat "$WORK/examples/commands.log")" ]] || fail "merge changed commands.log's first lines"
for part in val test; do
  agents=$(grep ",all,compile_rate," "$m/tables/spmv-f32-$part/compare.csv" | cut -d, -f1 | sort | tr '\n' ' ')
  [[ $agents == "grpo-hf ppo random reinforce sft sft-hf template " ]] || fail "merge, $part table: agents $agents"
done
grep -q 'lane-0' "$m/study.log" && grep -q 'lane-1' "$m/study.log" || fail "merge: study.log lacks a lane's log"
[[ $(tar tzf "$m"/bench-trajectories-*.tgz | grep -c 'trajectories.h5$') == 4 ]] || fail "merge: the trajectories' archive"
# A session not restored from the folder as it is now (session 2's, from the folder before the merge).
! STUDY_EXAMPLES=$m STUDY_SPARSERL=$SPARSERL bash "$SRC/tools/study_session.sh" merge "$WORK/back2" >"$WORK/merge2.out" 2>&1 ||
  fail "merge took a session that was not restored from the folder"
grep -q "does not begin with" "$WORK/merge2.out" || { cat "$WORK/merge2.out"; fail "merge's error names no cause"; }
echo "study session kit: pack, two sessions on fresh trees, the second from the restored SFT policy; two lanes; merge"
