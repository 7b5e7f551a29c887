# tools/lib/runs.sh: what the drivers of several runs (tools/study.sh, tools/teacher_table.sh) share
# about the source tree their tables name and the run directories they resume: the tree's commit,
# refused when it has local changes unless allowed, and the run directory under a folder whose
# run.json has a given status. Sourced, not run; the sourcing script defines die().

# record_tree ROOT ALLOW_DIRTY FILE COMMAND: refuses a tree whose tracked files changed (unless
# ALLOW_DIRTY is 1) and appends its commit, the UTC start and COMMAND to FILE.
record_tree() {
  local root=$1 allow_dirty=$2 file=$3 command=$4 commit changes
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  changes=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null || echo "not a git checkout")
  if [[ -n $changes && $allow_dirty == 0 ]]; then
    echo "$changes" | head -5 >&2
    die "the source tree $root has local changes: commit them (the tables must name a clean commit) or pass --allow-dirty"
  fi
  {
    echo "commit   $commit$([[ -n $changes ]] && echo ' (local changes)')"
    echo "started  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command  $command"
  } >>"$file"
}

# run_dir_with DIR STATUS: the run directory under DIR whose run.json's status matches the extended
# regular expression STATUS (completed, interrupted|running); nothing when there is none.
run_dir_with() {
  local dir=$1 status=$2 d
  [[ -d $dir ]] || return 0
  for d in "$dir"/*/; do
    [[ -f $d/run.json ]] || continue
    if grep -Eq "\"status\": *\"($status)\"" "$d/run.json"; then
      echo "${d%/}"
      return 0
    fi
  done
}
