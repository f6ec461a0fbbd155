"""Reports over many runs: `generate_report` groups runs by (suite, learner, policy) across seeds and writes
a self-contained HTML page with PNG figures, plus the same tables as Markdown and CSV, into a folder that
appears atomically."""

from __future__ import annotations

import html
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from libero_ll.errors import LiberoError

MARKER = ".libero_ll_report"  # marks a folder as a report, so regenerating may replace it
MARKER_HEADER = "libero_ll report"  # the marker's first line; the files the report wrote follow, one a line


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def generate_report(
    run_dirs: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    reference: str | os.PathLike | None = None,
    single_task: Sequence[str | os.PathLike] = (),
    epsilon: float = 1.0,
    confidence: float = 0.9,
    alpha: float = 0.05,
    seed: int = 0,
    command: str | None = None,
    unfinished: bool = False,
    log: Callable[[str], None] | None = None,
    reported: list | None = None,
) -> Path:
    """Write the report of some runs into ``out_dir``.

    ``out_dir`` is built in a temporary folder beside it and renamed into place, so a failure leaves an
    existing report untouched. An existing ``out_dir`` is replaced only when it is an earlier report.

    Args:
        run_dirs: run directories (each with config.yaml and success.json).
        out_dir: the report folder: report.html, report.md, *.csv and plots/.
        reference: a reference (multitask) run directory for intransigence.
        single_task: single-task run directories for Continual World's forward transfer.
        epsilon: CE's scaling factor ε.
        confidence: coverage of the bootstrap intervals (0.9: 90%).
        alpha: significance level of Welch's t-test in the tables.
        seed: seeds the bootstrap.
        command: the command line that made the report, shown in it.
        unfinished: report runs that have not ended (killed, or paused with `train --stages`) as they stand,
            marked as such; by default they are left out, and the report names them.
        log: receives a line for each run left out, and a "warning: ..." line for each doubt about the
            grouping (runs of one method with the same seed and task order, of which only the latest started
            is reported; runs on other tasks than the rest of their method; configs that differ).
        reported: when given, the paths of the runs reported are appended to it.
    Returns:
        ``out_dir`` as a Path.
    Raises:
        LiberoError: no run given, a folder that is missing or not a run directory, every run unfinished
            (without ``unfinished``; a run with no evaluation saved yet is left out either way), or an
            ``out_dir`` that exists and is not a report.
    """
    from libero_ll.evaluation.report.tables import MeasuredRun
    from libero_ll.evaluation.runs import NotEvaluatedYet, group_runs, load_run, measure_run, unfinished_note

    out_dir = Path(out_dir)
    if not run_dirs:
        raise LiberoError("report: no run directory given")
    if (
        out_dir.exists()
        and not (out_dir / MARKER).exists()
        and (not out_dir.is_dir() or any(out_dir.iterdir()))
    ):
        raise LiberoError(f"{out_dir} exists and is not a report folder; choose another output folder")
    paths = list(dict.fromkeys(Path(p).resolve() for p in run_dirs))
    check_replaceable(out_dir, [*paths, *([Path(reference)] if reference else []), *map(Path, single_task)])
    runs, not_evaluated = [], []
    for p in paths:
        try:
            runs.append(load_run(p))
        except NotEvaluatedYet:
            # Killed (or still running) before its first evaluation: nothing to report, even as it stands.
            not_evaluated.append(p)
    # A run that has not ended would enter the tables with its later tasks unlearnt.
    left_out = [] if unfinished else [r for r in runs if r.unfinished]
    if len(left_out) + len(not_evaluated) == len(paths):
        listed = "; ".join([f"{r.path} ({unfinished_note(r)})" for r in left_out]
                           + [f"{p} (no evaluation saved yet)" for p in not_evaluated])
        raise LiberoError(
            f"report: every run given is unfinished: {listed}; continue them with `libero-ll train --resume "
            "RUN_DIR`" + (", or report them as they stand with --unfinished" if left_out else "")
        )
    for r in left_out:
        _say(log, f"left out {r.path}: unfinished, {unfinished_note(r)} (--unfinished reports it as it stands)")
    for p in not_evaluated:
        _say(log, f"left out {p}: unfinished, no evaluation saved yet (no success.json): nothing to report")
    runs = [r for r in runs if not r.unfinished] if left_out else runs
    notes = []
    as_they_stand = [r for r in runs if r.unfinished]
    for listed, what in (
        (as_they_stand, "Unfinished runs, reported as they stand (their later tasks not learnt)"),
        (left_out, "Left out, unfinished (--unfinished reports them as they stand)"),
    ):
        if listed:
            notes.append(f"{what}: " + "; ".join(f"{r.path} ({unfinished_note(r)})" for r in listed) + ".")
    if not_evaluated:
        notes.append("Left out, unfinished with no evaluation saved yet (no success.json: killed, or still running, "
                     "before their first evaluation): " + "; ".join(map(str, not_evaluated)) + ".")
    kept, warnings = _check_groups(group_runs(runs))
    kept_paths = {r.path for r in kept}
    runs = [r for r in runs if r.path in kept_paths]  # in the order given
    for line in warnings:
        _say(log, f"warning: {line}")
    notes += [f"Warning: {line}" for line in warnings]
    if reported is not None:
        reported.extend(r.path for r in runs)
    ref = load_run(reference) if reference else None
    singles = [load_run(p) for p in single_task]
    measured = [MeasuredRun(r, measure_run(r, ref, singles, epsilon)) for r in runs]
    by_path = {m.run.path: m for m in measured}
    groups = {k: [by_path[r.path] for r in g] for k, g in group_runs(runs).items()}

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.tmp-"))
    try:
        _write(tmp, groups, measured, ref, singles, confidence, alpha, seed, command, notes)
        written = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        (tmp / MARKER).write_text("\n".join([MARKER_HEADER, *written]) + "\n", encoding="utf-8")
        _replace_dir(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def check_replaceable(out_dir: Path, inputs: list[Path]) -> None:
    """Refuse to replace the report folder `out_dir` when it holds an input of the report (a run copied into it)
    or any file a report did not write there (notes of one's own): replacing the folder would delete them. The
    marker lists what the report wrote; a marker without the list (reports of earlier versions) stands for a
    report's usual files (pages and tables at the top, pictures under plots/)."""
    if not (out_dir / MARKER).is_file():
        return
    here = out_dir.resolve()
    for p in inputs:
        p = p.resolve()
        if p == here or here in p.parents:
            raise LiberoError(f"{p} is inside the report folder {out_dir}, which a new report replaces (deleting "
                              "it): move the run out, or write the report to another folder")
    lines = (out_dir / MARKER).read_text(encoding="utf-8", errors="replace").splitlines()
    listed = set(lines[1:])
    foreign = []
    for f in sorted(out_dir.rglob("*")):
        if f.is_dir() or f.name == MARKER:
            continue
        name = f.relative_to(out_dir).as_posix()
        usual = (f.parent == out_dir and f.suffix in (".html", ".md", ".csv")) or (
            f.parent == out_dir / "plots" and f.suffix == ".png")
        if not (name in listed if len(lines) > 1 else usual):
            foreign.append(name)
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise LiberoError(f"{out_dir} is a report folder, but it holds {foreign[0]}{more}, which no report wrote "
                          "there; a new report replaces the whole folder: move those out, or write the report to "
                          "another folder")


def _replace_dir(new: Path, target: Path) -> None:
    """Move ``new`` to ``target``; an existing ``target`` is moved aside first and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
        os.rmdir(old)
        os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _at(values: Sequence[float], i: int) -> float:
    """values[i], NaN past the end."""
    return float(values[i]) if i < len(values) else math.nan


def _finite_mean(values) -> float:
    """The mean of the values that are numbers (a seed that never evaluated a task has NaN); NaN when none is."""
    kept = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return sum(kept) / len(kept) if kept else math.nan


def _say(log: Callable[[str], None] | None, line: str) -> None:
    if log is not None:
        log(line)


def _check_groups(groups: dict) -> tuple[list, list[str]]:
    """The runs to report, and a warning line for each doubt about how they were grouped (suite, learner,
    policy, variant): runs of one method with the same seed and task order (only the latest started of them
    is kept: they are not independent seeds), runs whose tasks differ from the rest of their method's or
    name a task twice, and settings that differ between runs of one method."""
    from libero_ll.evaluation.report.tables import method_labels
    from libero_ll.evaluation.runs import (
        config_differences,
        config_edited,
        edited_config_warning,
        main_task_set,
        same_seed_runs,
        task_set,
    )

    labels = method_labels(list(groups))
    kept, warnings = [], []
    for key, group in groups.items():
        name = f"{labels[key]} (suite {key[0]}, learner {key[1]}, policy {key[2]}" + (
            f", variant {key[3]})" if key[3] else ")")
        dropped = set()
        for same in same_seed_runs(group):
            latest, earlier = same[-1], same[:-1]
            dropped.update(r.path for r in earlier)
            differ = config_differences(same)
            how = ("; their configs differ in " + "; ".join(
                f"{k}: " + ", ".join(f"{v} ({r.path.name})" for v, r in zip(values, same))
                for k, values in differ.items()) if differ else "")
            # A run stopped partway gives way to a whole one (same_seed_runs puts the one to report last).
            which = ("the latest started of those that have ended"
                     if latest.unfinished is None and any(r.unfinished is not None for r in earlier)
                     else "the latest started")
            warnings.append(
                f"{name}: runs {', '.join(str(r.path) for r in same)} have the same seed {latest.seed} and task "
                f"order, so they are not independent seeds; only {which}, {latest.path}, is reported, "
                f"{', '.join(str(r.path) for r in earlier)} left out (give the one you mean){how}"
            )
        group = [r for r in group if r.path not in dropped]
        kept += group
        main = main_task_set(group)
        for r in group:
            if config_edited(r.path, r.sessions):
                warnings.append(f"{name}: {edited_config_warning(r.path)}")
            twice = sorted({n for n in r.task_order if r.task_order.count(n) > 1})
            if twice:
                warnings.append(f"{name}: {r.path} names {', '.join(twice)} more than once in its tasks "
                                f"({', '.join(r.task_order)})")
            if task_set(r) != main:
                warnings.append(
                    f"{name}: {r.path} learnt other tasks ({', '.join(r.task_order)}) than the method's other "
                    f"runs ({', '.join(main)}): its metrics are averaged with theirs, over other tasks; it is not "
                    "in the task-order comparison"
                )
        differ = config_differences(group)
        if differ:
            warnings.append(f"{name}: the runs' configs differ besides seed and task order, yet are reported as "
                            "one method: " + "; ".join(
                                f"{k}: " + ", ".join(f"{v} ({r.path.name})" for v, r in zip(values, group))
                                for k, values in differ.items()))
    return kept, warnings


def _write(tmp: Path, groups: dict, measured: list, ref, singles, confidence, alpha, seed, command,
           notes: list[str]) -> None:
    """Write every file of the report (pages, CSV tables, plots/) into the folder ``tmp``."""
    from libero_ll.evaluation import cl_metrics as cl
    from libero_ll.evaluation.report import plots, render, tables
    from libero_ll.evaluation.runs import main_task_set, task_set

    plots_dir = tmp / "plots"
    plots_dir.mkdir()
    labels = tables.method_labels(list(groups))
    suites = {k[0] for k in groups}

    def title_of(key) -> str:
        return labels[key] if len(suites) == 1 else f"{labels[key]} ({key[0]})"

    main = tables.libero_table(groups, alpha, confidence, seed)
    crit, means = tables.criteria_table(groups, confidence, seed)
    every = tables.runs_table(measured)
    csvs = {"libero_table.csv": main.records, "cl_criteria.csv": crit.records, "runs.csv": every.records}

    html_body = [
        "<h1>Lifelong-learning report</h1>",
        f'<p class="note">{_count(len(measured), "run")}, {_count(len(groups), "method")}; generated '
        f"{datetime.now().strftime('%Y-%m-%d %H:%M')}"
        + (f"; command: <code>{html.escape(command)}</code>" if command else "")
        + "</p>",
    ]
    if ref is not None:
        html_body.append(f'<p class="note">reference run (intransigence): {html.escape(str(ref.path))}</p>')
    if singles:
        listed = ", ".join(html.escape(str(s.path)) for s in singles)
        html_body.append(f'<p class="note">single-task runs (forward transfer): {listed}</p>')
    md = ["# Lifelong-learning report", "", f"{_count(len(measured), 'run')}, {_count(len(groups), 'method')}.", ""]
    if command:
        md += [f"Command: `{command}`", ""]
    for note in notes:
        html_body.append(f'<p class="note">{html.escape(note)}</p>')
        md += [note, ""]

    html_body += ["<h2>Results</h2>", render.table_html(main)]
    md += ["## Results", "", render.table_markdown(main)]

    html_body += ["<h2>Continual-learning criteria</h2>", render.table_html(crit)]
    md += ["## Continual-learning criteria", "", render.table_markdown(crit)]
    axes = [c for c in cl.CRITERIA if any(not math.isnan(m.get(c, math.nan)) for m in means.values())]
    if len(axes) >= 3:
        plots.plot_spider(means, axes, plots_dir / "spider.png")
        html_body.append(
            render.figure_html("plots/spider.png", "CL criteria per method (larger area is better)")
        )
        md += ["![CL criteria per method](plots/spider.png)", ""]
    else:
        note = f"Spider chart left out: only {len(axes)} criteria recorded ({', '.join(axes) or 'none'})."
        html_body.append(f'<p class="note">{html.escape(note)}</p>')
        md += [note, ""]

    html_body.append("<h2>Per method</h2>")
    md += ["## Per method", ""]
    for key, runs in groups.items():
        slug = _slug("_".join(key))
        name = title_of(key)
        html_body.append(
            f"<h3>{html.escape(name)}: suite {html.escape(key[0])}, learner {html.escape(key[1])}, "
            f"policy {html.escape(key[2])}" + (f", {html.escape(key[3])}" if key[3] else "") + "</h3>"
        )
        md += [f"### {name}", ""]
        curve_file = f"plots/curves_{slug}.png"
        seeds = [f"seed {m.run.seed}" for m in runs]
        plots.plot_task_curves(
            [m.run.tensor for m in runs], seeds, f"{name}: success per task", tmp / curve_file
        )
        html_body.append(
            render.figure_html(curve_file, f"{name}: success of each task over the lifelong run")
        )
        md += [f"![{name}: per-task success]({curve_file})", ""]
        figs = []
        for i, m in enumerate(runs):
            heat = f"plots/matrix_{slug}_{i}_seed{_slug(str(m.run.seed))}.png"
            plots.plot_heatmap(m.run.tensor, f"{name}, seed {m.run.seed}", tmp / heat)
            figs.append(render.figure_html(heat, f"success matrix: {m.run.path.name}"))
            md.append(f"![success matrix {m.run.path.name}]({heat})")
        html_body.append('<div class="figs">' + "".join(figs) + "</div>")
        md.append("")

    order_records = []
    for key, runs in groups.items():
        # Orders of the same tasks only: a run that learnt other tasks is no other order.
        main = main_task_set([m.run for m in runs])
        by_order = tables.order_groups([m for m in runs if task_set(m.run) == main])
        if len(by_order) < 2:
            continue
        if len(order_records) == 0:
            html_body.append("<h2>Task orders</h2>")
            md += ["## Task orders", ""]
        t = tables.order_table(title_of(key), by_order, confidence, seed)
        order_records += t.records
        task_names = sorted(next(iter(by_order)))
        aucs = {}
        for order, oruns in by_order.items():
            label = tables.order_label(order, list(by_order))
            # The mean over the runs that measured the task, as the tables take it (NaN when none did; a run's
            # list stops at its last task whose stage ended).
            aucs[label] = {
                n: _finite_mean([_at(m.metrics["auc_per_task"], m.run.task_order.index(n)) for m in oruns])
                for n in task_names
                if all(n in m.run.task_order for m in oruns)
            }
        fig = f"plots/orders_{_slug('_'.join(key))}.png"
        plots.plot_order_comparison(aucs, task_names, tmp / fig)
        html_body += [
            render.table_html(t),
            render.figure_html(fig, f"{title_of(key)}: AUC per task under each order"),
        ]
        md += [render.table_markdown(t), f"![task orders]({fig})", ""]
    if order_records:
        csvs["task_orders.csv"] = order_records

    html_body += ["<h2>Runs</h2>", render.table_html(every)]
    md += ["## Runs", "", render.table_markdown(every)]
    links = " ".join(f'<a href="{n}">{n}</a>' for n in csvs)
    html_body.append(
        f'<p class="note">Tables as CSV: {links}; as Markdown: <a href="report.md">report.md</a></p>'
    )

    for name, records in csvs.items():
        (tmp / name).write_text(render.records_csv(records), encoding="utf-8")
    (tmp / "report.md").write_text("\n".join(md), encoding="utf-8")
    (tmp / "report.html").write_text(
        render.page_html("Lifelong-learning report", html_body), encoding="utf-8"
    )


def _count(n: int, noun: str) -> str:
    """ "1 run", "2 runs"."""
    return f"{n} {noun}{'s' if n != 1 else ''}"
