#!/usr/bin/env bash
# Issue 25's table driver on the CPU (tools/teacher_table.sh, tools/teacher_table.py;
# docs/design-space.md): its jobs (table x family group) run in two lanes and come out as one table
# per op, dtype and K, a second call runs nothing again, bad arguments are refused before anything
# runs, a failing job leaves the others' table and fails the call by name; and the table's
# figures - geomean, slowest matrix, the regular families' copy bandwidth, the aims met or not,
# what limits each matrix - from hand-made results with known answers, an interrupted run and the
# agents other than the template search left out. Skipped (77) without ../shared's matrices.
# Usage: teacher_table_test.sh SPARSERL SOURCE_DIR SHARED_DIR
source "$(dirname "${BASH_SOURCE[0]}")/study_test_setup.sh" "$@"
T=$SRC/tools/teacher_table.sh

# 1. Refusals: nothing runs, exit status 2, the argument named.
expect_refusal() {  # TEXT ARGS...
  local text=$1 out status
  shift
  set +e
  out=$("$T" --sparserl "$SPARSERL" --out "$WORK/refused" --allow-dirty "$@" 2>&1)
  status=$?
  set -e
  [[ $status == 2 ]] || fail "$*: exit status $status, expected 2 ($out)"
  grep -q -- "$text" <<<"$out" || fail "$*: no '$text' in: $out"
  [[ ! -e $WORK/refused/commands.log ]] || fail "$*: a bench ran"
}
expect_refusal "--part: train" --part train
expect_refusal "'spmv-f16'" --tables spmv-f16
expect_refusal "'spmm-f32'" --tables spmm-f32
expect_refusal "--group: 'irregular'" --group irregular
expect_refusal "no job matches" --only nothing-matches

# 2. Two tables x two groups on two small shared matrices, compile stage only, in two lanes.
run() {
  "$T" --sparserl "$SPARSERL" --out "$WORK/table" --allow-dirty --tables spmv-f32,spmm-f64-k8 \
    --group all: --group newman:Newman --analytic --gpus 2 \
    --set "data.index_dirs=[\"$SHARED/matrices\", \"$SHARED/matrices/real\"]" --set "data.data_dir=\"$WORK/data\"" --set 'data.regimes=["small"]' \
    --set 'data.sources=["shared"]' --set bench.max_tasks=2 --set bench.template_budget=1 \
    --set bench.oracle_budget=1 --set report.plots=false "$@"
}
CUDA_VISIBLE_DEVICES=6,3 run >"$WORK/first.md" 2>"$WORK/first.err" || { tail -20 "$WORK/first.err"; fail "the first call failed"; }
for lane in "0 (GPU 6): spmv-f32 all" "1 (GPU 3): spmv-f32 newman" "0 (GPU 6): spmm-f64-k8 all"; do
  grep -q "lane $lane" "$WORK/first.err" || fail "no job in lane $lane: $(grep lane "$WORK/first.err")"
done
[[ $(grep -c "^sparserl bench" "$WORK/table/commands.log") == 4 ]] || fail "not 4 benches: $(cat "$WORK/table/commands.log")"
grep -q 'data.op="spmm" --set data.dtype="f64" --set data.k=8 --set bench.template_measurements=""' \
  "$WORK/table/commands.log" || fail "spmm-f64-k8's settings: $(cat "$WORK/table/commands.log")"
grep -q 'data.families=\["Newman"\]' "$WORK/table/commands.log" || fail "the newman group's families"
md=$WORK/table/teacher-val.md
[[ -f $md ]] || fail "no teacher-val.md"
cmp -s "$md" "$WORK/first.md" || fail "the printed table is not teacher-val.md"
grep -q "^## spmv-f32$" "$md" && grep -q "^## spmm-f64-k8$" "$md" || fail "a table is missing: $(grep '^## ' "$md")"
grep -q "commit   .*" "$md" || fail "the table does not name its tree"
grep -q "n/a (no GPU: only the compile stage ran)" "$md" || fail "no GPU, yet speed figures"
grep -q "| suitesparse-v1/Newman/adjnoun | Newman | 850 | n/a | [a-z_]* .*|" "$md" || fail "no adjnoun row with its design: $(grep adjnoun "$md")"
# A second call: every job done, nothing benched again.
run >"$WORK/second.md" 2>"$WORK/second.err" || fail "the second call failed"
[[ $(grep -c "^sparserl bench" "$WORK/table/commands.log") == 4 ]] || fail "the second call benched again"
[[ $(grep -c ": done (" "$WORK/second.err") == 4 ]] || fail "the second call: $(cat "$WORK/second.err")"

# A job that fails (a family the split lacks) leaves the others' table, and the call fails naming it.
set +e
run --out "$WORK/failing" --group bogus:NoSuchFamily >"$WORK/failing.md" 2>"$WORK/failing.err"
status=$?
set -e
[[ $status == 2 ]] || fail "a failing job: exit status $status"
grep -q "these jobs failed .*: spmv-f32 bogus" "$WORK/failing.err" || fail "the failed job is not named: $(tail -3 "$WORK/failing.err")"
grep -q "^## spmm-f64-k8$" "$WORK/failing/teacher-val.md" || fail "no table of the jobs that ran"

# 3. The figures from known results: SpMV f32 (one failure, one matrix below 0.95x, a regular
#    matrix under 85% of copy bandwidth; an interrupted run and a random agent's row ignored) and
#    SpMM f32 K = 32 (geomean sqrt(2.0 * 1.2) = 1.549x: met).
header="matrix,nnz,agent,compiled,correct,candidate_us,cusparse_us,speedup,bandwidth_fraction,tested,family,cusparse_path,search_seconds,design"
mkrun() {  # DIR STATUS ROWS...
  local dir=$1 status=$2
  shift 2
  mkdir -p "$dir"
  echo "{\"status\": \"$status\"}" >"$dir/run.json"
  printf '%s\n' "$header" "$@" >"$dir/results.csv"
}
K=$WORK/known
mkrun "$K/val/spmv-f32/regular/b__0__1" completed \
  "gen-v1/stencil,100,template,1,1,60,90,1.5,0.9,1,stencil,CSR_ALG2,4.5" \
  "gen-v1/banded,100,template,1,1,75,90,1.2,0.8,1,banded,CSR_ALG1,3.0" \
  "gen-v1/banded,100,random,1,0,,,,,1,banded,CSR_ALG1,"
mkrun "$K/val/spmv-f32/irregular/b__0__2" completed \
  "gen-v1/rmat,200,template,1,1,100,90,0.9,0.3,1,rmat,COO_ALG1,12.0,coo_segmented items=1 block=128" \
  "gen-v1/lp,200,template,1,0,,,,,1,lp,CSR_ALG2,8.0"
mkrun "$K/val/spmv-f32/irregular/b__0__1" interrupted "gen-v1/old,1,template,1,1,1,50,50,1,1,rmat,CSR_ALG2,1"
mkrun "$K/val/spmm-f32-k32/all/b__0__1" completed \
  "gen-v1/a,10,template,1,1,10,20,2.0,0.5,1,banded,SPMM_CSR_ALG2,1" \
  "gen-v1/b,10,template,1,1,10,12,1.2,0.4,1,rmat,SPMM_CSR_ALG1,2"
python3 "$SRC/tools/teacher_table.py" "$K" --part val --quiet || fail "teacher_table.py on known results"
csv=$K/teacher-val.csv
expect() {  # LINE in teacher-val.csv
  grep -qxF "$1" "$csv" || fail "no '$1' in teacher-val.csv: $(cat "$csv")"
}
expect "spmv-f32,matrices,4,,"
expect "spmv-f32,timed and correct,3,,"
expect "spmv-f32,failed (not correct),gen-v1/lp,none,0"
expect "spmv-f32,geomean speedup over cuSPARSE's best path,1.174x,>= 1.3x,0"
expect "spmv-f32,slowest,0.900x (gen-v1/rmat),>= 0.95x,0"
expect "spmv-f32,regular families' copy bandwidth,\"80%-90%, 1 of 2 at >= 85%\",>= 85%,0"
expect "spmv-f32,search wall time per matrix,3.0-12.0 s,,"
expect "spmm-f32-k32,geomean speedup over cuSPARSE's best path,1.549x,>= 1.5x,1"
md=$K/teacher-val.md
grep -q "gen-v1/old" "$md" && fail "the interrupted run was read"
grep -qF "| gen-v1/rmat | rmat | 200 | 0.900x | coo_segmented items=1 block=128 | 30% | COO_ALG1 | 33% | 12.0 | below 0.95x: cuSPARSE COO_ALG1 at 33% of copy bandwidth |" "$md" ||
  fail "rmat's row: $(grep rmat "$md")"
grep -qF "| gen-v1/banded | banded | 100 | 1.200x | n/a | 80% | CSR_ALG1 | 67% | 3.0 | regular at 80% of copy bandwidth |" "$md" ||
  fail "banded's row: $(grep banded "$md")"
grep -qF "| gen-v1/lp | lp | 200 | n/a | n/a | n/a | CSR_ALG2 | n/a | 8.0 | not correct |" "$md" || fail "lp's row: $(grep lp "$md")"

# 4. The copy roofline by size (--sizes: a tune over diagonal matrices): the best correct timed
#    candidate per dtype and size; wrong and untimed candidates ignored; a folder without
#    candidates.csv refused.
S=$WORK/sizes
mkdir -p "$S"
printf '%s\n' "uri,dtype,design_id,timed,correct,median_us,bandwidth_fraction" \
  "gen-v1/diagonal?n=1000000,f32,csr_scalar block=128 unroll=1 ldg=0,1,1,8.0,0.50" \
  "gen-v1/diagonal?n=1000000,f32,ell block=128 unroll=1 ldg=0,1,1,6.0,0.66" \
  "gen-v1/diagonal?n=1000000,f32,csr_vector lanes=2,1,0,1.0,0.99" \
  "gen-v1/diagonal?n=50000000,f64,csr_scalar block=256 unroll=1 ldg=1,1,1,320.0,0.91" >"$S/candidates.csv"
python3 "$SRC/tools/teacher_table.py" "$K" --part val --quiet --sizes "$S" || fail "teacher_table.py --sizes"
grep -qF "| f32 | 1000000 | 20.0 | 6.0 | 66% | ell block=128 unroll=1 ldg=0 |" "$md" ||
  fail "the f32 size row: $(grep -A4 'Copy roofline' "$md")"
grep -qF "| f64 | 50000000 | 1600.0 | 320.0 | 91% | csr_scalar block=256 unroll=1 ldg=1 |" "$md" ||
  fail "the f64 size row: $(grep -A5 'Copy roofline' "$md")"
grep -q "99%" "$md" && fail "a wrong candidate was counted"
python3 "$SRC/tools/teacher_table.py" "$K" --part val --quiet --sizes "$WORK/nowhere" 2>/dev/null &&
  fail "--sizes without candidates.csv was accepted"
echo "teacher_table: passed"
