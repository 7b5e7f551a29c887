#!/usr/bin/env python3
"""The study's summary table (issue 26) from the val and test tables `sparserl compare` wrote.

Reads TABLES/TABLE-val/compare.csv and TABLES/TABLE-test/compare.csv (as tools/study.sh and
`tools/study_session.sh merge` lay them out) and prints one markdown row per agent: its runs, and
for each part the IQM speedup over cuSPARSE's best path, its geometric mean, the IQM oracle
fraction, pass@1 and the share of answers below 0.5x, then P(agent > reference) on both parts -
each with its 95% bootstrap interval where the interval is not a point (an agent of one run has
nothing to resample in the speedup's interval). A second table gives pass@8 of correctness (the
unbiased estimate from the samples), the greedy answers' compile rate and the share of matrices
whose greedy answer is correct and not in the agent's training corpus (novel), on both parts.
Then issue 26's three aims on the test part, each measured against its threshold: every learned
agent's greedy correctness >= 95% (compare's correct_rate), the best learned agent's IQM oracle
fraction >= 0.90, and each RL agent ahead of the reference by more than its interval (P(agent >
reference) with its 95% interval above 0.5). Learned agents are all but template and random; RL
agents the learned ones whose names do not start with "sft". Figures are those of one regime
(default: large, the headline). Template, random and the reference come first, the other agents
in name order; an agent missing from one part is an error, as is a part's table missing.

Usage: tools/study_table.py TABLES [--table spmv-f32] [--regime large]
"""
import argparse
import csv
import os
import sys

FIRST = ("template", "random")
# (column title, metric, format): format "f" three decimals, "%" a percentage.
COLUMNS = (
    ("IQM speedup", "speedup_iqm", "f"),
    ("geomean", "speedup_geomean", "f"),
    ("IQM oracle fraction", "oracle_fraction_iqm", "f"),
    ("pass@1", "pass@1", "%"),
    ("answers < 0.5x", "slow_share", "%"),
)
# The second table's: correctness over the samples, the greedy answers' compile rate and novelty.
OUTCOMES = (
    ("pass@8", "pass@8", "%"),
    ("greedy compile", "compile_rate", "%"),
    ("novel correct answers", "novel_correct_share", "%"),
)


def read_table(path, regime):
    """({agent: {metric: row}}, [agents in order], reference or None) of one compare.csv."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such table (run sparserl compare first)")
    figures, order, reference = {}, [], None  # order: as compare.csv lists them
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"agent", "regime", "metric", "point", "low", "high", "runs", "versus"} - set(
            reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: not a compare.csv (no column {', '.join(sorted(missing))})")
        for line, row in enumerate(reader, start=2):
            if row["regime"] != regime:
                continue
            agent = row["agent"]
            if agent not in figures:
                figures[agent] = {}
                order.append(agent)
            figures[agent][row["metric"]] = row
            if row["metric"] == "probability_of_improvement" and row["versus"]:
                if reference not in (None, row["versus"]):
                    raise ValueError(f"{path}:{line}: two references, {reference} and {row['versus']}")
                reference = row["versus"]
    if not figures:
        raise ValueError(f"{path}: no figures of regime {regime!r}")
    return figures, order, reference


def cell(row, form):
    """'point [low, high]' (the interval left out where it is a point); 'n/a' for no figure."""
    if row is None or row["point"] == "":
        return "n/a"

    def show(text):
        value = float(text)
        return f"{100 * value:.1f}%" if form == "%" else f"{value:.3f}"

    point = show(row["point"])
    if row["low"] == "" or row["high"] == "" or float(row["low"]) == float(row["high"]):
        return point
    return f"{point} [{show(row['low'])}, {show(row['high'])}]"


def read_parts(tables, name, regime):
    """(val, test, agents in the table's order, reference) of TABLE-val and TABLE-test."""
    parts = {part: read_table(os.path.join(tables, f"{name}-{part}", "compare.csv"), regime)
             for part in ("val", "test")}
    (val, order, reference), (test, _, test_reference) = parts["val"], parts["test"]
    if reference != test_reference:
        raise ValueError(f"the val table's reference is {reference}, the test table's {test_reference}")
    for agent in order:
        if agent not in test:
            raise ValueError(f"{agent} is in the val table but not in the test table")
    for agent in test:
        if agent not in val:
            raise ValueError(f"{agent} is in the test table but not in the val table")
    first = [a for a in FIRST if a in val] + ([reference] if reference in val else [])
    return val, test, first + sorted(a for a in order if a not in first), reference


def rows_of(val, test, agents, columns, reference=None, improvement=False):
    """Markdown lines: agent, runs, each column on val then test, and with `improvement`
    P(agent > reference) on both parts."""
    titles = ["agent", "runs"]
    titles += [f"{part} {title}" for part in ("val", "test") for title, _, _ in columns]
    if improvement:
        titles.append(f"P(agent > {reference}) val / test" if reference else "P(agent > reference)")
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for agent in agents:
        runs = val[agent]["speedup_iqm"]["runs"] if "speedup_iqm" in val[agent] else "?"
        cells = [agent, runs]
        for figures in (val, test):
            cells += [cell(figures[agent].get(metric), form) for _, metric, form in columns]
        if improvement and agent == reference:
            cells.append("(reference)")
        elif improvement:
            cells.append(" / ".join(cell(f[agent].get("probability_of_improvement"), "f")
                                    for f in (val, test)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(tables, name, regime):
    """The summary table: speed, oracle fraction, pass@1, slow answers and P(> reference)."""
    return summary_rows(read_parts(tables, name, regime))


def outcomes_table(tables, name, regime):
    """The second table: pass@8, the greedy compile rate and the novel correct share."""
    return outcome_rows(read_parts(tables, name, regime))


def aims(tables, name, regime):
    """Issue 26's aims on the test part, one markdown line each, every figure with its verdict."""
    return aim_lines(read_parts(tables, name, regime), regime)


# The three outputs of read_parts()' figures (main reads the tables once for all three).
def summary_rows(parts):
    val, test, agents, reference = parts
    return rows_of(val, test, agents, COLUMNS, reference, improvement=True)


def outcome_rows(parts):
    val, test, agents, _ = parts
    return rows_of(val, test, agents, OUTCOMES)


def aim_lines(parts, regime):
    _, test, agents, reference = parts
    learned = [a for a in agents if a not in FIRST]
    rl = [a for a in learned if not a.startswith("sft")]

    def point(agent, metric):
        row = test[agent].get(metric)
        return None if row is None or row["point"] == "" else float(row["point"])

    def verdict(ok):
        return "met" if ok else "missed"

    lines = [f"Aims on the test part ({regime} regime):"]
    correct = [(a, point(a, "correct_rate")) for a in learned]
    if all(v is None for _, v in correct):
        lines.append("- greedy correctness >= 95%: n/a (no correct_rate in the tables: sparserl "
                     "compare before it)")
    else:
        cells = ", ".join(f"{a} {'n/a' if v is None else f'{100 * v:.1f}%'}" for a, v in correct)
        ok = all(v is not None and v >= 0.95 for _, v in correct)
        lines.append(f"- greedy correctness >= 95% for every learned agent: {verdict(ok)} ({cells})")
    fractions = [(point(a, "oracle_fraction_iqm"), a) for a in learned]
    fractions = [(v, a) for v, a in fractions if v is not None]
    if fractions:
        best, who = max(fractions)
        lines.append(f"- the best learned agent >= 0.90 of the oracle (IQM oracle fraction): "
                     f"{verdict(best >= 0.90)} ({who} {best:.3f})")
    else:
        lines.append("- the best learned agent >= 0.90 of the oracle: n/a (no oracle fraction)")
    for agent in rl:
        row = test[agent].get("probability_of_improvement")
        if row is None or row["point"] == "":
            lines.append(f"- {agent} ahead of {reference} beyond its interval: n/a")
            continue
        low = float(row["low"]) if row["low"] != "" else float(row["point"])
        lines.append(f"- {agent} ahead of {reference} beyond its interval (P(agent > "
                     f"{reference}) > 0.5 at its low end): {verdict(low > 0.5)} "
                     f"({cell(row, 'f')})")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", help="the folder holding TABLE-val/ and TABLE-test/")
    parser.add_argument("--table", default="spmv-f32")
    parser.add_argument("--regime", default="large")
    args = parser.parse_args(argv)
    try:
        parts = read_parts(args.tables, args.table, args.regime)
        print(summary_rows(parts))
        print()
        print(outcome_rows(parts))
        print()
        print(aim_lines(parts, args.regime))
    except (OSError, ValueError) as e:
        print(f"study_table: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
