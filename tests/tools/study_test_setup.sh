# Sourced by the study's script tests (study_smoke_test.sh, study_pilot_resume_test.sh) with their
# arguments SPARSERL SOURCE_DIR SHARED_DIR: sets those three, exits 77 (skipped) without
# ../shared's matrices, makes WORK (removed at exit) and defines fail().
set -euo pipefail
SPARSERL=$1
SRC=$2
SHARED=$3
[[ -f $SHARED/matrices/INDEX.csv ]] || { echo "skipped: no $SHARED/matrices"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/study_test.XXXXXX")
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
