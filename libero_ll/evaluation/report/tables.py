"""The report's tables, built once and rendered as HTML, Markdown and CSV.

- the LIBERO paper's Tables 1-2: rows are methods, columns FWT/NBT/AUC per suite, mean ± standard error
  over seeds, the best in bold, a mark where the difference to the best is significant (Welch);
- the CL criteria of the metrics paper with CL_score and CL_stability, plus R_K, F_K, I and FT;
- every scalar metric of every run;
- the same method under different task orders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from libero_ll.evaluation import cl_metrics as cl
from libero_ll.evaluation.runs import Run, unfinished_note
from libero_ll.evaluation.stats import Summary, summarize, welch_t_test

# LIBERO metrics: key, header, True when higher is better.
LIBERO_COLUMNS = (("fwt", "FWT (↑)", True), ("nbt", "NBT (↓)", False), ("auc", "AUC (↑)", True))
# The CL criteria table: key, header, True when higher is better.
CRITERIA_COLUMNS = (
    ("A", "A", True),
    ("REM", "REM", True),
    ("BWT_plus", "BWT+", True),
    ("FWT_prime", "FWT'", True),
    ("MS", "MS", True),
    ("SSS", "SSS", True),
    ("CE", "CE", True),
    ("CL_score", "CL_score", True),
    ("CL_score_W2", "CL_score W2", True),
    ("CL_score_W3", "CL_score W3", True),
)
EXTRA_COLUMNS = (
    ("R_final", "R_K", True),
    ("F_final", "F_K (↓)", False),
    ("I", "I (↓)", False),
    ("FT", "FT (CW)", True),
)
# Every scalar of ``all_metrics`` that goes into the per-run table.
RUN_SCALARS = (
    "fwt",
    "nbt",
    "auc",
    "A",
    "BWT",
    "REM",
    "BWT_plus",
    "FWT_prime",
    "MS",
    "SSS",
    "CE",
    "CL_score",
    "CL_score_W2",
    "CL_score_W3",
    "R_final",
    "F_final",
    "I",
    "FT",
)
SIGNIFICANT = "†"  # differs significantly from the best of its column
BEST_SIGNIFICANT = "*"  # best, and significantly better than every other row


@dataclass
class MeasuredRun:
    """A run and its metrics (``measure_run``)."""

    run: Run
    metrics: dict


@dataclass
class Cell:
    """One table cell: its text, and how to show it."""

    text: str
    bold: bool = False
    mark: str = ""


@dataclass
class Table:
    """A table ready to render: a title, headers, rows of cells, notes, and the CSV records behind it."""

    title: str
    headers: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)


def fmt(summary: Summary) -> str:
    """Mean ± standard error with two decimals (the mean alone for a single seed; "n/a" for none)."""
    if summary.n == 0 or math.isnan(summary.mean):
        return "n/a"
    if math.isnan(summary.sem):
        return f"{summary.mean:.2f}"
    return f"{summary.mean:.2f} ± {summary.sem:.2f}"


def method_labels(keys: Sequence[tuple[str, str, str, str]]) -> dict[tuple[str, str, str, str], str]:
    """A row label per (suite, learner, policy, variant): the learner, the policy, or both, whichever
    varies, then the variant of a sweep's run in brackets when there is one."""
    learners = {k[1] for k in keys}
    policies = {k[2] for k in keys}
    out = {}
    for key in keys:
        if len(policies) == 1:
            out[key] = key[1]
        elif len(learners) == 1:
            out[key] = key[2]
        else:
            out[key] = f"{key[1]} / {key[2]}"
        if key[3]:
            out[key] += f" [{key[3]}]"
    return out


def _values(runs: Sequence[MeasuredRun], key: str) -> list[float]:
    return [float(r.metrics[key]) for r in runs]


def _method_record(gkey: tuple[str, str, str, str]) -> dict:
    """The columns naming a method; "variant" only for a sweep's runs that have one."""
    rec = {"suite": gkey[0], "learner": gkey[1], "policy": gkey[2]}
    if gkey[3]:
        rec["variant"] = gkey[3]
    return rec


def _summary_record(gkey: tuple[str, str, str, str], metric: str, values: list[float], s: Summary) -> dict:
    return {
        **_method_record(gkey),
        "metric": metric,
        "n": s.n,
        "mean": s.mean,
        "sem": s.sem,
        "ci_low": s.ci_low,
        "ci_high": s.ci_high,
        "values": ";".join(repr(v) for v in values),
    }


def libero_table(groups: dict, alpha: float = 0.05, confidence: float = 0.9, seed: int = 0) -> Table:
    """FWT/NBT/AUC per suite (columns) and method (rows), as in the LIBERO paper's Tables 1-2.

    Args:
        groups: (suite, learner, policy, variant) → list of ``MeasuredRun`` (one per seed).
        alpha: significance level of Welch's two-tailed t-test against the best row of each column.
        confidence: coverage of the bootstrap intervals in the CSV records.
        seed: seeds the bootstrap.
    """
    labels = method_labels(list(groups))
    suites = sorted({k[0] for k in groups})
    methods = sorted({labels[k] for k in groups})
    by_cell = {(labels[k], k[0]): (k, runs) for k, runs in groups.items()}
    headers = ["method"] + [
        f"{suite} {h}" if len(suites) > 1 else h for suite in suites for _, h, _ in LIBERO_COLUMNS
    ]
    cells: dict[tuple[str, str, str], Cell] = {}
    records = []
    for suite in suites:
        for key, _, higher in LIBERO_COLUMNS:
            present = [(m, by_cell[(m, suite)]) for m in methods if (m, suite) in by_cell]
            stats = {
                m: (_values(runs, key), summarize(_values(runs, key), confidence, seed))
                for m, (_, runs) in present
            }
            ranked = [m for m in stats if not math.isnan(stats[m][1].mean)]
            best = (max if higher else min)(ranked, key=lambda m: stats[m][1].mean) if ranked else None
            p_values = {m: welch_t_test(stats[m][0], stats[best][0]).p for m in ranked if best and m != best}
            best_sig = bool(p_values) and all(p < alpha for p in p_values.values())
            for m, (gkey, _) in present:
                values, s = stats[m]
                p = p_values.get(m, math.nan)
                mark = SIGNIFICANT if p < alpha else (BEST_SIGNIFICANT if m == best and best_sig else "")
                # Ties with the best are bold too: the rows cannot be told apart.
                tied = best is not None and s.mean == stats[best][1].mean
                cells[(m, suite, key)] = Cell(fmt(s), bold=tied, mark=mark)
                rec = _summary_record(gkey, key, values, s)
                rec.update(method=m, best=bool(tied), p_vs_best=p, significant_vs_best=bool(p < alpha))
                records.append(rec)
    rows = [
        [Cell(m)] + [cells.get((m, suite, key), Cell("")) for suite in suites for key, _, _ in LIBERO_COLUMNS]
        for m in methods
    ]
    notes = [
        "Mean ± standard error over the runs (seeds, and task orders where a method has several); the best of "
        "each column (and any tie with it) in bold.",
        (
            f"{SIGNIFICANT}: differs from the best of its column by Welch's two-tailed t-test, p < {alpha}; "
            f"{BEST_SIGNIFICANT}: the best is significantly better than every other row."
        ),
        "FWT and AUC: higher is better; NBT: lower is better.",
    ]
    return Table("LIBERO metrics (FWT, NBT, AUC)", headers, rows, notes, records)


def criteria_table(
    groups: dict, confidence: float = 0.9, seed: int = 0
) -> tuple[Table, dict[str, dict[str, float]]]:
    """The CL criteria, CL_score and CL_stability, and R_K, F_K, I, FT per method and suite.

    CL_stability is 1 − Σ_c w_c std(c) over the method's seeds (equal weights, over the criteria
    recorded).

    Returns:
        The table, and per row label the criteria means (for the spider chart).
    """
    labels = method_labels(list(groups))
    suites = {k[0] for k in groups}
    columns = CRITERIA_COLUMNS + EXTRA_COLUMNS
    headers = ["method"] + [h for _, h, _ in columns] + ["CL_stability"]
    rows, records, means = [], [], {}
    for gkey, runs in groups.items():
        label = labels[gkey] if len(suites) == 1 else f"{labels[gkey]} ({gkey[0]})"
        row = [Cell(label)]
        means[label] = {}
        for key, _, _ in columns:
            values = _values(runs, key)
            s = summarize(values, confidence, seed)
            row.append(Cell(fmt(s)))
            records.append(_summary_record(gkey, key, values, s))
            means[label][key] = s.mean
        stability = cl.cl_stability([r.metrics for r in runs], "equal", skip_missing=True)
        row.append(Cell("n/a" if math.isnan(stability) else f"{stability:.4f}"))
        records.append(
            {
                **_method_record(gkey),
                "metric": "CL_stability",
                "n": len(runs),
                "mean": stability,
                "sem": math.nan,
                "ci_low": math.nan,
                "ci_high": math.nan,
                "values": "",
            }
        )
        rows.append(row)
    measured = [r for g in groups.values() for r in g]
    # Why a metric is n/a (not recorded, or undefined on what was recorded); which tasks a mean leaves out.
    missing = sorted({f"{c}: {why}" for r in measured for c, why in r.metrics["not_recorded"].items()})
    partial = sorted({f"{c}: {why}" for r in measured for c, why in r.metrics.get("partial", {}).items()})
    notes = [
        "Criteria of Díaz-Rodríguez et al. in [0, 1], higher is better; mean ± standard error over the runs (seeds and task orders).",
        "CL_score weights: equal, W2 and W3 of the paper, renormalised over the criteria recorded.",
        (
            "R_K: mean success after the last task; F_K: forgetting after it; I: intransigence against the "
            "reference run; FT: Continual World forward transfer against the single-task runs."
        ),
    ]
    notes += [f"n/a in some runs, {m}" for m in missing]
    notes += [f"over part of the tasks in some runs, {m}" for m in partial]
    return Table("CL criteria, CL_score and CL_stability per method", headers, rows, notes, records), means


def runs_table(measured: Sequence[MeasuredRun]) -> Table:
    """Every scalar metric of every run (one row per run)."""
    variants = any(m.run.variant for m in measured)
    headers = ["run", "suite", "learner", "policy"] + ["variant"] * variants + ["seed"] + list(RUN_SCALARS)
    rows, records = [], []
    for m in measured:
        r = m.run
        rec = {"run_dir": str(r.path), **_method_record(r.method), "seed": r.seed,
               "task_order": " > ".join(r.task_order), **r.ran_on,
               "unfinished": unfinished_note(r) if r.unfinished else ""}
        rec.update({k: float(m.metrics[k]) for k in RUN_SCALARS})
        records.append(rec)
        rows.append(
            [Cell(r.path.name), Cell(r.suite), Cell(r.learner), Cell(r.policy)]
            + [Cell(r.variant)] * variants
            + [Cell(str(r.seed))]
            + [Cell("n/a" if math.isnan(rec[k]) else f"{rec[k]:.3f}") for k in RUN_SCALARS]
        )
    return Table("Every run", headers, rows, [], records)


def order_groups(runs: Sequence[MeasuredRun]) -> dict[tuple[str, ...], list[MeasuredRun]]:
    """The runs of one method split by task order, orders sorted."""
    out: dict[tuple[str, ...], list[MeasuredRun]] = {}
    for m in runs:
        out.setdefault(m.run.task_order, []).append(m)
    return dict(sorted(out.items()))


def order_label(order: Sequence[str], all_orders: Sequence[Sequence[str]]) -> str:
    """A short label of a task order: task numbers in the first order's numbering, e.g. "T2 > T1 > T3"."""
    first = list(all_orders[0])
    index = {n: i for i, n in enumerate(sorted(first))}
    return " > ".join(f"T{index[n] + 1}" if n in index else n for n in order)


def order_table(method: str, by_order: dict, confidence: float = 0.9, seed: int = 0) -> Table:
    """FWT/NBT/AUC of one method under each task order (rows), mean ± standard error over seeds."""
    orders = list(by_order)
    headers = ["task order", "runs"] + [h for _, h, _ in LIBERO_COLUMNS]
    rows, records = [], []
    for order, runs in by_order.items():
        label = order_label(order, orders)
        row = [Cell(label), Cell(str(len(runs)))]
        for key, _, _ in LIBERO_COLUMNS:
            values = _values(runs, key)
            s = summarize(values, confidence, seed)
            row.append(Cell(fmt(s)))
            rec = _summary_record(runs[0].run.method, key, values, s)
            rec["task_order"] = " > ".join(order)
            records.append(rec)
        rows.append(row)
    names = sorted(orders[0])
    notes = ["Tasks: " + "; ".join(f"T{i + 1} = {n}" for i, n in enumerate(names))]
    return Table(f"Task orders: {method}", headers, rows, notes, records)
