#!/usr/bin/env bash
# sparserl-agents-bench --hf DIR --train-step (docs/agents.md, "What fits"): full fine-tuning and
# LoRA with gradient checkpointing each run timed steps on the tiny Qwen2 fixture and say what they
# train - every parameter, or the adapters alone (fewer) - and, without a GPU, that the memory
# figure is n/a rather than a number. Also its --hf-generate mode: PolicyAgent::generate with the
# fixture's weights and tokenizer under the BPE grammar mask times whole completions, its
# overlapped steps drawing what --no-overlap-steps draws, and the mode without --hf is refused,
# naming what it needs.
# Usage: agents_bench_train_step_test.sh BENCH FIXTURE_DIR
set -euo pipefail
BENCH=$1
FIXTURE=$2
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
full=$("$BENCH" --hf "$FIXTURE" --train-step --batch 2 --tokens 16 --repeat 1 --threads 1)
lora=$("$BENCH" --hf "$FIXTURE" --train-step --batch 2 --tokens 16 --repeat 1 --threads 1 \
  --lora-rank 4 --checkpointing)
echo "$full"
echo "$lora"
grep -q "^train    step 1: .* tokens/s, loss [0-9.]*$" <<<"$full" || fail "full: no timed step"
grep -q "^train    step 1: .* tokens/s, loss [0-9.]*$" <<<"$lora" || fail "LoRA: no timed step"
grep -q "full fine-tuning, .* gradient checkpointing off" <<<"$full" || fail "full: not full"
grep -q "LoRA rank 4, .* gradient checkpointing on" <<<"$lora" || fail "LoRA: not LoRA"
parameters() { sed -n 's/^hf .*: \([0-9]*\) parameters,.*/\1/p' <<<"$1"; }
trainable() { sed -n 's/.*, \([0-9]*\) trainable parameters,.*/\1/p' <<<"$1"; }
[[ $(trainable "$full") == "$(parameters "$full")" ]] || fail "full fine-tuning does not train every parameter"
[[ $(trainable "$lora") -lt $(trainable "$full") ]] || fail "LoRA trains as many parameters as full fine-tuning"
if [[ ${CUDA_VISIBLE_DEVICES-} == "" ]] && ! command -v nvidia-smi >/dev/null; then
  grep -q "^GPU memory: n/a (device cpu)$" <<<"$full" || fail "a CPU run printed a memory figure"
fi

generate=$("$BENCH" --hf "$FIXTURE" --hf-generate --batch 4 --tokens 640 --repeat 1 --threads 1)
echo "$generate"
grep -q "^hf $FIXTURE: [0-9]* parameters, device cpu, batch 4, 640 tokens" <<<"$generate" ||
  fail "generate: no header"
run='^generate run 1: [0-9.]+ s, ([1-9][0-9]*) tokens \([0-9.]+ per row\), [0-9]+ tokens/s; ([0-9]+) steps, masks [0-9.]+ s \([0-9.]+ us a row and step\), waiting for the draws [0-9.]+ s, other host work -?[0-9.]+ s \(the masks.? upload [0-9.]+ s, decode steps.? calls [0-9.]+ s; 0 CUDA graphs captured in [0-9.]+ s\); steps overlapped; tokens digest ([0-9a-f]{16})$'
line=$(grep -E "$run" <<<"$generate") || fail "generate: no timed run with its profile"
[[ $line =~ $run ]]
tokens=${BASH_REMATCH[1]} steps=${BASH_REMATCH[2]} digest=${BASH_REMATCH[3]}
# The steps are the longest row's tokens: at most the limit, at least a row's share of the tokens.
((steps <= 640 && steps * 4 >= tokens)) || fail "generate: $steps steps for $tokens tokens of 4 rows"
# The BPE rows' masks are filled on LibTorch's threads: three threads draw what one draws.
threaded=$("$BENCH" --hf "$FIXTURE" --hf-generate --batch 4 --tokens 640 --repeat 1 --threads 3)
grep -q "tokens digest $digest$" <<<"$threaded" ||
  fail "generate: three threads drew other tokens than one ($threaded)"
# The steps read back before each decode step (the order before the overlap) draw the same tokens.
read_back=$("$BENCH" --hf "$FIXTURE" --hf-generate --batch 4 --tokens 640 --repeat 1 --threads 1 --no-overlap-steps)
grep -q "steps read back first; tokens digest $digest$" <<<"$read_back" ||
  fail "generate: the read-back steps drew other tokens than the overlapped ($read_back)"
# The decode mode, with the decoder's inference copies and without (--per-call-casts).
for casts in "" --per-call-casts; do
  decode=$("$BENCH" --hf "$FIXTURE" --batch 2 --tokens 8 --repeat 1 --threads 1 --dtype bfloat16 $casts)
  grep -Eq "^decode   run 1: [0-9.]+ s, [0-9]+ tokens/s \(0 CUDA graphs\)$" <<<"$decode" || fail "decode $casts: no timed run"
done
if refusal=$("$BENCH" --hf-generate --repeat 1 2>&1); then fail "--hf-generate without --hf ran"; fi
grep -q "needs --hf FOLDER" <<<"$refusal" || fail "--hf-generate without --hf: $refusal"
echo "train steps: full and LoRA timed, trainable parameters told apart; generate timed under the BPE mask"
