"""`libero-ll report` over real smoke runs (two learners x two seeds) and over hand-made runs: files,
local links only, table rows, CSV numbers equal to the metric functions, significance marks, task-order
comparison, and errors that leave an existing report in place."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.evaluation.metrics import libero_metrics
from libero_ll.evaluation.report import generate_report
from libero_ll.evaluation.runs import load_run, measure_run
from libero_ll.evaluation.stats import bootstrap_ci, mean, sem
from libero_ll.evaluation.success import SuccessTensor

REPO = Path(__file__).resolve().parents[2]
NAN = float("nan")


def _resources_by_hand(run_dir: Path) -> None:
    """A resources.json in the schema of the training loop, for runs made without one."""
    names = SuccessTensor.load(run_dir / "success.json").task_names
    tasks = [
        {
            "task": n,
            "index": k,
            "params": 12000,
            "params_used": 12000,
            "memory_bytes": 1000 * (k + 1),
            "samples_seen": 20 + 4 * k,
            "train_macs": 3.0e8 * (1 + 0.2 * k),
        }
        for k, n in enumerate(names)
    ]
    (run_dir / "resources.json").write_text(json.dumps({"version": 1, "tasks": tasks}))


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory) -> dict:
    """Real smoke runs: learners seql and er, seeds 1 and 2, one epoch each; demos collected once."""
    from omegaconf import OmegaConf

    root = tmp_path_factory.mktemp("smoke_runs")
    data = root / "data"
    dirs = {}
    for learner in ("seql", "er"):
        cfg = OmegaConf.load(REPO / "configs" / "smoke.yaml")
        cfg.learner.name = learner
        if learner != "er" and "options" in cfg.learner:
            cfg.learner.options = {}  # the preset's options are ER's
        config = root / f"{learner}.yaml"
        OmegaConf.save(cfg, config)
        for seed in (1, 2):
            out = root / f"{learner}_{seed}"
            overrides = [
                f"output_dir={out}",
                f"data.dir={data}",
                "data.demos_per_task=1",
                "train.epochs=1",
                "eval.rollouts=1",
                f"seed={seed}",
            ]
            assert main(["train", str(config), *overrides]) == 0
            run_dir = next(out.iterdir())
            if not (run_dir / "resources.json").exists():
                _resources_by_hand(run_dir)
            dirs[(learner, seed)] = run_dir
    return dirs


@pytest.fixture(scope="module")
def smoke_report(smoke_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report"
    assert main(["report", *map(str, smoke_runs.values()), "-o", str(out)]) == 0
    return out


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(text: str) -> float:
    return float(text) if text != "" else NAN


def test_report_files_reference_only_local_files(smoke_report):
    for name in ("report.html", "report.md", "libero_table.csv", "cl_criteria.csv", "runs.csv"):
        assert (smoke_report / name).is_file(), name
    page = (smoke_report / "report.html").read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    links = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sum(link.endswith(".png") for link in links) == 4 + 2 + 1  # heatmaps, curves, spider
    for link in links:
        assert not link.startswith("/") and ":" not in link, link
        assert (smoke_report / link).is_file(), link
    for link in re.findall(r"\]\(([^)]+)\)", (smoke_report / "report.md").read_text()):
        assert (smoke_report / link).is_file(), link
    assert not [p for p in smoke_report.parent.iterdir() if p.name.startswith(".report")]  # no temporary left


def test_tables_have_one_row_per_method_and_run(smoke_report, smoke_runs):
    rows = read_csv(smoke_report / "libero_table.csv")
    assert sorted((r["learner"], r["metric"]) for r in rows) == sorted(
        (learner, m) for learner in ("er", "seql") for m in ("fwt", "nbt", "auc")
    )
    assert all(r["n"] == "2" and r["suite"] == "quickstart" and r["policy"] == "resnet_t" for r in rows)
    md = (smoke_report / "report.md").read_text()
    results = md.split("### LIBERO metrics")[1].split("\n\n")[1].splitlines()
    assert results[0].startswith("| method | FWT (↑) | NBT (↓) | AUC (↑) |")
    assert [line.split("|")[1].strip() for line in results[2:]] == ["er", "seql"]
    html = (smoke_report / "report.html").read_text()
    assert "<td>er</td>" in html and "<td>seql</td>" in html
    runs = read_csv(smoke_report / "runs.csv")
    assert sorted(Path(r["run_dir"]) for r in runs) == sorted(p.resolve() for p in smoke_runs.values())
    # Where each run ran, from its environment.json.
    import torch

    assert all(r["device"].startswith("cpu (") and r["torch"] == torch.__version__ for r in runs)
    assert all(r["libero_ll"].startswith("0.") for r in runs)
    criteria = read_csv(smoke_report / "cl_criteria.csv")
    assert {r["metric"] for r in criteria} >= {
        "A",
        "REM",
        "BWT_plus",
        "MS",
        "SSS",
        "CE",
        "CL_score",
        "CL_stability",
    }


def test_csv_numbers_equal_the_metric_functions(smoke_report, smoke_runs):
    per_run = {}
    for row in read_csv(smoke_report / "runs.csv"):
        run = load_run(row["run_dir"])
        expected = measure_run(run)
        direct = libero_metrics(run.tensor)
        for key in ("fwt", "nbt", "auc"):
            assert num(row[key]) == pytest.approx(direct[key], nan_ok=True)
        for key in ("A", "BWT", "REM", "BWT_plus", "MS", "SSS", "CE", "CL_score", "R_final", "F_final"):
            assert num(row[key]) == pytest.approx(expected[key], nan_ok=True), key
        per_run[(row["learner"], int(row["seed"]))] = expected
    assert set(per_run) == set(smoke_runs)
    for row in read_csv(smoke_report / "libero_table.csv"):
        values = [per_run[(row["learner"], seed)][row["metric"]] for seed in (1, 2)]
        assert num(row["mean"]) == pytest.approx(mean(values))
        assert num(row["sem"]) == pytest.approx(sem(values))
        low, high = bootstrap_ci(values, 0.9, seed=0)
        assert (num(row["ci_low"]), num(row["ci_high"])) == pytest.approx((low, high))
    for row in read_csv(smoke_report / "cl_criteria.csv"):
        if row["metric"] != "CL_stability":
            values = [per_run[(row["learner"], seed)][row["metric"]] for seed in (1, 2)]
            assert num(row["mean"]) == pytest.approx(mean(values), nan_ok=True), row["metric"]


def test_a_folder_that_is_no_run_is_a_clean_error(smoke_runs, tmp_path, capsys):
    """A folder without config.yaml is no run (one with it but without success.json is a run killed before its
    first evaluation, left out and named: test_report_inputs.py)."""
    broken = tmp_path / "broken_run"
    broken.mkdir()
    (broken / "log.txt").write_text("x\n")
    assert main(["report", str(smoke_runs[("er", 1)]), str(broken), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and str(broken) in err and "config.yaml" in err
    assert not (tmp_path / "out").exists()


# --- hand-made runs: fast checks of the tables' marks and the task-order section -------------------------


def hand_run(
    path: Path, learner: str, seed: int, names: list[str], diag: list[float], last: list[float]
) -> Path:
    """A run directory written by hand: curves rising to ``diag``, final row ``last``."""
    K = len(names)
    matrix = np.full((K, K), NAN)
    for k in range(K):
        matrix[k, k] = diag[k]
    matrix[K - 1, : K - 1] = last[: K - 1]
    tensor = SuccessTensor(
        names, [[0, 5, 10]] * K, [[0.0, d / 2, d] for d in diag], [[] for _ in names], matrix
    )
    path.mkdir(parents=True)
    tensor.save(path / "success.json")
    (path / "config.yaml").write_text(
        f"name: hand\nseed: {seed}\nsuite: quickstart\ntasks: {json.dumps(names)}\n"
        f"learner:\n  name: {learner}\npolicy:\n  name: resnet_t\n"
    )
    return path


def test_significance_marks_and_bold_best(tmp_path):
    names = ["a", "b"]
    runs = []
    for seed, jitter in enumerate((0.0, 0.02, -0.02)):
        runs.append(
            hand_run(tmp_path / f"good{seed}", "good", seed, names, [0.9 + jitter, 0.9], [0.8 + jitter])
        )
        runs.append(
            hand_run(tmp_path / f"bad{seed}", "bad", seed, names, [0.3 + jitter, 0.3], [0.1 + jitter])
        )
    out = generate_report(runs, tmp_path / "report")
    md = (out / "report.md").read_text()
    good = next(line for line in md.splitlines() if line.startswith("| good |"))
    bad = next(line for line in md.splitlines() if line.startswith("| bad |"))
    fwt_good, fwt_bad = good.split("|")[2].strip(), bad.split("|")[2].strip()
    assert fwt_good.startswith("**") and fwt_good.endswith("*") and "†" not in fwt_good
    assert fwt_bad.endswith("†") and not fwt_bad.startswith("**")
    rows = {(r["learner"], r["metric"]): r for r in read_csv(out / "libero_table.csv")}
    assert (
        rows[("bad", "fwt")]["significant_vs_best"] == "True"
        and float(rows[("bad", "fwt")]["p_vs_best"]) < 0.05
    )
    assert rows[("good", "auc")]["best"] == "True"


def test_task_order_comparison(tmp_path):
    runs = [
        hand_run(tmp_path / "ab1", "er", 1, ["a", "b"], [0.8, 0.6], [0.4]),
        hand_run(tmp_path / "ab2", "er", 2, ["a", "b"], [0.7, 0.6], [0.5]),
        hand_run(tmp_path / "ba1", "er", 1, ["b", "a"], [0.5, 0.9], [0.2]),
    ]
    out = generate_report(runs, tmp_path / "report")
    html = (out / "report.html").read_text()
    assert "Task orders" in html and "T1 &gt; T2" in html and "T2 &gt; T1" in html
    rows = read_csv(out / "task_orders.csv")
    fwt = {r["task_order"]: num(r["mean"]) for r in rows if r["metric"] == "fwt"}
    per_run = [libero_metrics(load_run(p).tensor)["fwt"] for p in runs]
    assert fwt == pytest.approx({"a > b": mean(per_run[:2]), "b > a": per_run[2]})
    assert any(p.name.startswith("orders_") for p in (out / "plots").iterdir())


def test_task_order_bars_average_the_seeds_that_measured_a_task(tmp_path, monkeypatch):
    # One seed that never evaluated a task made its order's mean NaN, drawn as a bar of 0.
    from libero_ll.evaluation.report import plots

    drawn = {}
    real = plots.plot_order_comparison
    monkeypatch.setattr(plots, "plot_order_comparison",
                        lambda aucs, names, path: (drawn.update(aucs), real(aucs, names, path)))
    runs = [
        hand_run(tmp_path / "ab1", "er", 1, ["a", "b"], [0.8, NAN], [0.4]),
        hand_run(tmp_path / "ab2", "er", 2, ["a", "b"], [0.7, 0.6], [0.5]),
        hand_run(tmp_path / "ba1", "er", 1, ["b", "a"], [NAN, 0.9], [NAN]),
    ]
    never = SuccessTensor.load(runs[2] / "success.json")
    never.curves[0] = [NAN] * len(never.curves[0])  # b never evaluated, not even before training
    never.save(runs[2] / "success.json")
    generate_report(runs, tmp_path / "report", unfinished=True)
    b_of_ab2 = measure_run(load_run(runs[1]))["auc_per_task"][1]
    assert np.isfinite(b_of_ab2) and drawn["T1 > T2"]["b"] == pytest.approx(b_of_ab2)
    assert np.isnan(drawn["T2 > T1"]["b"])  # no run of that order measured it: no bar, "n/a"


def test_failed_regeneration_keeps_the_old_report(tmp_path):
    good = hand_run(tmp_path / "r1", "er", 1, ["a", "b"], [0.8, 0.6], [0.4])
    out = generate_report([good], tmp_path / "report")
    before = (out / "report.html").read_text()
    (tmp_path / "r2").mkdir()
    with pytest.raises(LiberoError, match="r2: not a run directory"):
        generate_report([good, tmp_path / "r2"], out)
    assert (out / "report.html").read_text() == before
    # A second good run replaces the report in place.
    generate_report([good, hand_run(tmp_path / "r3", "er", 2, ["a", "b"], [0.7, 0.6], [0.5])], out)
    assert (out / "report.html").read_text() != before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_refuses_to_replace_a_folder_that_is_not_a_report(tmp_path):
    run = hand_run(tmp_path / "r1", "er", 1, ["a"], [0.5], [])
    with pytest.raises(LiberoError, match="is not a report folder"):
        generate_report([run], tmp_path)  # the folder holding the runs
    assert (run / "success.json").exists()
    with pytest.raises(LiberoError, match="no run directory"):
        generate_report([], tmp_path / "out")


def test_a_report_folder_holding_files_of_ones_own_or_an_input_run_is_not_replaced(tmp_path):
    # Regenerating a report moved the whole folder aside and deleted it: notes put there went with it, and a run
    # copied into it and reported from there was deleted by its own report.
    import shutil

    from libero_ll.evaluation.report import MARKER

    run = hand_run(tmp_path / "r1", "er", 1, ["a", "b"], [0.8, 0.6], [0.4])
    out = generate_report([run], tmp_path / "report")
    listed = (out / MARKER).read_text().splitlines()
    assert listed[0] == "libero_ll report" and "report.html" in listed and any(n.startswith("plots/") for n in listed)
    generate_report([run], out)  # its own files: replaced
    (out / "my_notes.txt").write_text("notes")
    with pytest.raises(LiberoError, match=r"report is a report folder, but it holds my_notes.txt, which no report "
                                          r"wrote there"):
        generate_report([run], out)
    assert (out / "my_notes.txt").read_text() == "notes"
    (out / "my_notes.txt").unlink()
    shutil.copytree(run, out / "myrun")
    with pytest.raises(LiberoError, match=r"myrun is inside the report folder"):
        generate_report([out / "myrun"], out)
    assert (out / "myrun/success.json").exists()
    with pytest.raises(LiberoError, match=r"holds myrun/config.yaml and 1 more"):
        generate_report([run], out)
    shutil.rmtree(out / "myrun")
    # A report of an earlier version (its marker without the list) is replaced when it holds a report's usual
    # files only.
    (out / MARKER).write_text("libero_ll report\n")
    generate_report([run], out)
    (out / MARKER).write_text("libero_ll report\n")
    (out / "plots/mine.txt").write_text("x")
    with pytest.raises(LiberoError, match=r"holds plots/mine.txt, which no report wrote"):
        generate_report([run], out)


def test_runs_of_a_sweep_are_grouped_by_their_variant(smoke_runs, tmp_path):
    """Two ER runs (seeds 1, 2) copied twice and tagged as two variants of a sweep give two rows, named."""
    import shutil

    dirs = []
    for variant in ("train.lr=0.1", "train.lr=0.01"):
        for seed in (1, 2):
            d = tmp_path / f"{variant}_{seed}"
            shutil.copytree(smoke_runs[("er", seed)], d)
            (d / "sweep.json").write_text(json.dumps({"sweep": "s", "variant": variant, "order": None}))
            dirs.append(d)
    out = generate_report(dirs, tmp_path / "report")
    rows = read_csv(out / "libero_table.csv")
    assert {r["method"] for r in rows} == {"er [train.lr=0.1]", "er [train.lr=0.01]"}
    assert {r["variant"] for r in rows} == {"train.lr=0.1", "train.lr=0.01"}
    assert all(r["n"] == "2" for r in rows)
    runs = read_csv(out / "runs.csv")
    assert sorted(r["variant"] for r in runs) == ["train.lr=0.01"] * 2 + ["train.lr=0.1"] * 2
    assert "er [train.lr=0.01]" in (out / "report.html").read_text()
    (dirs[0] / "sweep.json").write_text("[1]")
    with pytest.raises(LiberoError, match="sweep.json does not hold a JSON object"):
        load_run(dirs[0])


def test_unfinished_runs_are_left_out_and_named_unless_asked_for(tmp_path, capsys):
    """A run that has not ended (killed, or paused with `train --stages`) has later tasks not learnt: the
    report leaves it out and says so, reports it as it stands with --unfinished, and metrics say so."""
    names = ["a", "b"]
    done = hand_run(tmp_path / "done", "er", 1, names, [0.8, 0.6], [0.5])
    paused = hand_run(tmp_path / "paused", "er", 2, names, [0.9, NAN], [NAN])
    (paused / "progress.json").write_text(json.dumps({"stage": 1, "phase": "start", "epoch": 0, "stages": 2}))
    # A run that ended has progress at its last stage: it is reported as usual.
    (done / "progress.json").write_text(json.dumps({"stage": 2, "phase": "start", "epoch": 0, "stages": 2}))
    out = tmp_path / "report"
    assert main(["report", str(done), str(paused), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"left out {paused}: unfinished, 1 of 2 stages ended" in printed and "(1 run;" in printed
    assert [r["run_dir"] for r in read_csv(out / "runs.csv")] == [str(done.resolve())]
    note = f"Left out, unfinished (--unfinished reports them as they stand): {paused.resolve()} (1 of 2 stages ended)."
    assert note in (out / "report.md").read_text()

    assert main(["report", str(done), str(paused), "-o", str(out), "--unfinished"]) == 0
    rows = {r["run_dir"]: r["unfinished"] for r in read_csv(out / "runs.csv")}
    assert rows == {str(done.resolve()): "", str(paused.resolve()): "1 of 2 stages ended"}
    assert "Unfinished runs, reported as they stand" in (out / "report.md").read_text()

    capsys.readouterr()
    assert main(["report", str(paused), "-o", str(out)]) == 2
    assert "every run given is unfinished" in capsys.readouterr().err
    assert rows == {r["run_dir"]: r["unfinished"] for r in read_csv(out / "runs.csv")}  # the last report stays

    assert main(["metrics", str(paused)]) == 0
    assert "unfinished: 1 of 2 stages ended; the metrics cover the tasks learnt so far" in capsys.readouterr().out
    assert main(["metrics", str(paused), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unfinished"] == {"stages_ended": 1, "stages": 2}
    assert main(["metrics", str(done), "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unfinished"] is None


def test_the_report_says_why_i_and_ft_leave_tasks_out_or_are_n_a(tmp_path):
    """The reasons of all_metrics reach the report's notes: a reference lacking a task (I over the others), a
    single-task reference at AUC 1 (FT n/a)."""
    run = hand_run(tmp_path / "run", "er", 1, ["a", "b"], [0.8, 0.6], [0.4])
    ref = hand_run(tmp_path / "mtl", "mtl", 1, ["a"], [0.9], [])
    perfect = tmp_path / "single_a"
    perfect.mkdir()
    SuccessTensor(["a"], [[0, 5, 10]], [[1.0, 1.0, 1.0]], [[]], np.array([[1.0]])).save(
        perfect / "success.json"
    )
    (perfect / "config.yaml").write_text((ref / "config.yaml").read_text().replace("mtl", "seql"))
    out = generate_report([run], tmp_path / "report", reference=ref, single_task=[perfect])
    md = (out / "report.md").read_text()
    assert ("over part of the tasks in some runs, I: the mean over 1 of 2 tasks: the reference run lacks "
            "task(s) b") in md
    assert "n/a in some runs, FT: the reference reaches AUC 1 on task(s) a, so FT is undefined there" in md
