#!/usr/bin/env python3
"""tools/teacher_table.py: issue 25's table from the bench runs of tools/teacher_table.sh.

Reads OUT/PART/TABLE/GROUP/<run>/results.csv (the newest completed run of each job; the template
agent's rows) and writes OUT/teacher-PART.md: the tree and commands (OUT/teacher-PART.txt,
OUT/commands.log), then per table (spmv-f32, spmm-f64-k32, ...) the geomean speedup over
cuSPARSE's best path, the slowest matrix and the regular families' share of copy bandwidth, each
against the issue's aims (SpMV: geomean >= 1.3x, no matrix below 0.95x, >= 85% of copy bandwidth
on stencil, banded and block families; SpMM: geomean >= 1.5x), and a row per matrix with what
limits it: the winning design point, the program's roofline fraction, cuSPARSE's winning path
and that path's own fraction (the same bytes over its time), and the search's wall time. Without a GPU (tested = 0) every speed
figure is n/a and no aim is judged. Also OUT/teacher-PART.csv, one row per table and figure.
With --sizes DIR (a `sparserl tune` output over diagonal matrices, gen-v1/diagonal?n=N: a pure
stream of val, col_idx, row_ptr, x and y), a last section: the copy roofline by size - per dtype
and N the compulsory megabytes, the best correct program's time and its fraction of copy
bandwidth - what the regular families' fractions compare with at their own size.
Usage: tools/teacher_table.py OUT [--part val|test] [--sizes DIR]
"""
import argparse
import csv
import json
import math
import re
import sys
from pathlib import Path

REGULAR = {"stencil", "banded", "block-aligned", "block-unaligned"}
SPMV_GEOMEAN, FLOOR, REGULAR_BANDWIDTH, SPMM_GEOMEAN = 1.3, 0.95, 0.85, 1.5


def completed_run(job_dir):
    """The newest run directory under job_dir whose run.json says completed, or None."""
    runs = []
    for run_json in job_dir.glob("*/run.json"):
        try:
            status = json.loads(run_json.read_text()).get("status")
        except (OSError, json.JSONDecodeError) as error:
            sys.exit(f"teacher_table: {run_json}: {error}")
        if status == "completed" and (run_json.parent / "results.csv").is_file():
            runs.append(run_json.parent)
    return max(runs, key=lambda p: p.name) if runs else None


def number(row, key, path):
    value = row.get(key, "")
    if value in ("", "n/a", "nan"):
        return None
    try:
        return float(value)
    except ValueError:
        sys.exit(f"teacher_table: {path}: column {key} of {row.get('matrix')}: '{value}' is not a number")


def read_table(part_dir):
    """{table: [matrix row dicts]} over every job of the part, and the run directories read."""
    tables, runs = {}, []
    for job_dir in sorted(p for p in part_dir.glob("*/*") if p.is_dir()):
        run = completed_run(job_dir)
        if run is None:
            continue
        runs.append(run)
        path = run / "results.csv"
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                if row.get("agent") != "template":
                    continue
                tested = row.get("tested") == "1"
                correct = row.get("correct") == "1"
                m = {
                    "matrix": row["matrix"], "family": row.get("family", ""),
                    "nnz": int(row["nnz"]), "job": f"{job_dir.parent.name}/{job_dir.name}",
                    "tested": tested, "correct": correct,
                    "speedup": number(row, "speedup", path) if tested and correct else None,
                    "fraction": number(row, "bandwidth_fraction", path) if tested else None,
                    "candidate_us": number(row, "candidate_us", path) if tested else None,
                    "cusparse_us": number(row, "cusparse_us", path) if tested else None,
                    "path": row.get("cusparse_path") or "n/a",
                    "search_s": number(row, "search_seconds", path),
                    "design": row.get("design") or "n/a",
                }
                if m["fraction"] and m["candidate_us"] and m["cusparse_us"]:
                    m["cusparse_fraction"] = m["fraction"] * m["candidate_us"] / m["cusparse_us"]
                else:
                    m["cusparse_fraction"] = None
                tables.setdefault(job_dir.parent.name, []).append(m)
    return tables, runs


def pct(x):
    return "n/a" if x is None else f"{100 * x:.0f}%"


def times(x):
    return "n/a" if x is None else f"{x:.3f}x"


def summarize(table, rows):
    """The table's figures and its aims: a list of (figure, value, aim, met) tuples."""
    spmv = table.startswith("spmv")
    timed = [r for r in rows if r["speedup"] is not None]
    failed = [r for r in rows if r["tested"] and not r["correct"]]
    out = [("matrices", str(len(rows)), "", None), ("timed and correct", str(len(timed)), "", None)]
    if failed:
        out.append(("failed (not correct)", ", ".join(r["matrix"] for r in failed), "none", False))
    if not timed:
        out.append(("speed", "n/a (no GPU: only the compile stage ran)", "", None))
        return out
    geomean = math.exp(sum(math.log(r["speedup"]) for r in timed) / len(timed))
    aim = SPMV_GEOMEAN if spmv else SPMM_GEOMEAN
    out.append(("geomean speedup over cuSPARSE's best path", times(geomean), f">= {aim}x", geomean >= aim))
    faster = sum(r["speedup"] > 1 for r in timed)
    out.append(("faster than cuSPARSE", f"{faster} of {len(timed)}", "", None))
    slowest = min(timed, key=lambda r: r["speedup"])
    below = [r for r in timed if r["speedup"] < FLOOR]
    out.append(("slowest", f"{times(slowest['speedup'])} ({slowest['matrix']})",
                f">= {FLOOR}x" if spmv else "", (not below) if spmv else None))
    if spmv:
        regular = [r for r in timed if r["family"] in REGULAR and r["fraction"] is not None]
        if regular:
            low = [r for r in regular if r["fraction"] < REGULAR_BANDWIDTH]
            out.append(("regular families' copy bandwidth",
                        f"{pct(min(r['fraction'] for r in regular))}-{pct(max(r['fraction'] for r in regular))}"
                        f", {len(regular) - len(low)} of {len(regular)} at >= {pct(REGULAR_BANDWIDTH)}",
                        f">= {pct(REGULAR_BANDWIDTH)}", not low))
    searched = [r["search_s"] for r in rows if r["search_s"] is not None]
    if searched:
        out.append(("search wall time per matrix", f"{min(searched):.1f}-{max(searched):.1f} s", "", None))
    return out


def limit(r, spmv):
    """What limits a matrix short of an aim, in words ("" when it meets them)."""
    if r["speedup"] is None:
        return "not timed" if not r["tested"] else "not correct"
    notes = []
    if spmv and r["speedup"] < FLOOR:
        notes.append(f"below {FLOOR}x: cuSPARSE {r['path']} at {pct(r['cusparse_fraction'])} of copy bandwidth")
    if spmv and r["family"] in REGULAR and r["fraction"] is not None and r["fraction"] < REGULAR_BANDWIDTH:
        notes.append(f"regular at {pct(r['fraction'])} of copy bandwidth")
    return "; ".join(notes)


def stream_by_size(sizes_dir):
    """Lines of the copy-roofline section from a tune's candidates.csv over diagonal matrices."""
    path = sizes_dir / "candidates.csv"
    if not path.is_file():
        sys.exit(f"teacher_table: {path}: no such file (--sizes wants a `sparserl tune` output folder)")
    best = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            size = re.search(r"diagonal\?n=(\d+)", row.get("uri", ""))
            if not size or row.get("timed") != "1" or row.get("correct") != "1":
                continue
            fraction, us = number(row, "bandwidth_fraction", path), number(row, "median_us", path)
            key = (row["dtype"], int(size.group(1)))
            if fraction is not None and (key not in best or fraction > best[key][0]):
                best[key] = (fraction, us, row.get("design_id", ""))
    lines = ["## Copy roofline by size (diagonal matrices: a pure stream)", "",
             "| dtype | rows | compulsory MB | best us | fraction of copy bandwidth | design |",
             "|---|---|---|---|---|---|"]
    for (dtype, n), (fraction, us, design) in sorted(best.items()):
        vb = 8 if dtype == "f64" else 4
        mb = (n * (vb + 4) + (n + 1) * 4 + 2 * n * vb) / 1e6
        lines.append(f"| {dtype} | {n} | {mb:.1f} | {us:.1f} | {pct(fraction)} | {design} |")
    return lines + [""]


def write(out_dir, part, tables, runs, sizes_dir=None):
    lines = [f"# The teacher against cuSPARSE's best path: bench-v2 large {part}", ""]
    tree = out_dir / f"teacher-{part}.txt"
    if tree.is_file():
        lines += ["```", *tree.read_text().splitlines(), "```", ""]
    commands = out_dir / "commands.log"
    if commands.is_file():
        lines += ["Commands run:", "", "```", *commands.read_text().splitlines(), "```", ""]
    lines += ["Runs read: " + ", ".join(str(r.relative_to(out_dir)) for r in runs), ""]
    figures = []
    for table in sorted(tables, key=lambda t: (not t.startswith("spmv"), t)):
        rows = sorted(tables[table], key=lambda r: (r["family"], r["matrix"]))
        spmv = table.startswith("spmv")
        lines += [f"## {table}", "", "| figure | value | aim | met |", "|---|---|---|---|"]
        for name, value, aim, met in summarize(table, rows):
            lines.append(f"| {name} | {value} | {aim} | {'' if met is None else ('yes' if met else 'no')} |")
            figures.append([table, name, value, aim, "" if met is None else int(met)])
        lines += ["", "| matrix | family | nnz | speedup | design | roofline fraction | cuSPARSE path"
                  " | its fraction | search s | what limits it |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            search = "n/a" if r["search_s"] is None else f"{r['search_s']:.1f}"
            lines.append(f"| {r['matrix']} | {r['family']} | {r['nnz']} | {times(r['speedup'])} | "
                         f"{r['design']} | {pct(r['fraction'])} | {r['path']} | {pct(r['cusparse_fraction'])} | {search} | "
                         f"{limit(r, spmv)} |")
        lines.append("")
    if sizes_dir is not None:
        lines += stream_by_size(sizes_dir)
    (out_dir / f"teacher-{part}.md").write_text("\n".join(lines) + "\n")
    with (out_dir / f"teacher-{part}.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["table", "figure", "value", "aim", "met"])
        w.writerows(figures)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder of tools/teacher_table.sh's runs")
    parser.add_argument("--part", choices=["val", "test"], default="val")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    parser.add_argument("--sizes", type=Path, help="a `sparserl tune` output over diagonal matrices")
    args = parser.parse_args()
    part_dir = args.out / args.part
    if not part_dir.is_dir():
        sys.exit(f"teacher_table: {part_dir}: no such folder (run tools/teacher_table.sh --part {args.part} first)")
    tables, runs = read_table(part_dir)
    if not tables:
        sys.exit(f"teacher_table: {part_dir}: no completed bench run with template rows")
    text = write(args.out, args.part, tables, runs, args.sizes)
    if not args.quiet:
        print(text)


if __name__ == "__main__":
    main()
