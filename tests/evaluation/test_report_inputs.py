"""What `libero-ll report` is given: runs killed before their first evaluation, folders and files that are no
runs, runs of one method with the same seed, and runs whose tasks differ from the rest of their method's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from libero_ll.cli import main
from libero_ll.evaluation.success import SuccessTensor

NAN = float("nan")


def hand_run(path: Path, seed: int, names: list[str], diag: list[float], last: list[float], learner: str = "er",
             started: str | None = None, epochs: int = 2) -> Path:
    """A finished run written by hand (as in test_report.py): curves rising to ``diag``, final row ``last``;
    ``started`` is its first session's start in environment.json."""
    K = len(names)
    matrix = np.full((K, K), NAN)
    for k in range(K):
        matrix[k, k] = diag[k]
    matrix[K - 1, : K - 1] = last[: K - 1]
    tensor = SuccessTensor(names, [[0, 5, 10]] * K, [[0.0, d / 2, d] for d in diag], [[] for _ in names], matrix)
    path.mkdir(parents=True)
    tensor.save(path / "success.json")
    (path / "config.yaml").write_text(
        f"name: hand\nseed: {seed}\nsuite: quickstart\ntasks: {json.dumps(names)}\n"
        f"learner:\n  name: {learner}\npolicy:\n  name: resnet_t\ntrain:\n  epochs: {epochs}\n"
    )
    if started is not None:
        (path / "environment.json").write_text(
            json.dumps({"version": 1, "sessions": [{"started": started, "device": "cpu"}]})
        )
    return path


def killed_before_first_evaluation(path: Path) -> Path:
    """What a run leaves when it is killed before its first evaluation: its config, log and task copies, no
    success.json, no progress.json."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("name: hand\nseed: 100\nsuite: quickstart\nlearner:\n  name: mtl\n"
                                      "policy:\n  name: resnet_t\n")
    (path / "log.txt").write_text("run started\n")
    (path / "tasks").mkdir()
    return path


def run_dirs_of(out: Path) -> list[str]:
    with open(out / "runs.csv", newline="") as f:
        return sorted(r["run_dir"] for r in csv.DictReader(f))


def test_a_run_killed_before_its_first_evaluation_is_left_out_and_named(tmp_path, capsys):
    done = hand_run(tmp_path / "runs" / "er_seed100", 100, ["a", "b"], [0.8, 0.6], [0.5])
    killed = killed_before_first_evaluation(tmp_path / "runs" / "mtl_seed100")
    out = tmp_path / "report"
    for extra in ([], ["--unfinished"]):  # it has nothing to report even as it stands
        assert main(["report", f"{done}/", f"{killed}/", "-o", str(out), *extra]) == 0, extra
        printed = capsys.readouterr().out
        assert f"left out {killed}: unfinished, no evaluation saved yet (no success.json)" in printed, printed
        assert "(1 run;" in printed
        assert run_dirs_of(out) == [str(done.resolve())]
        md = (out / "report.md").read_text()
        assert "no evaluation saved yet" in md and str(killed.resolve()) in md
    # Given alone, there is nothing to report: an error, and the last report stays.
    assert main(["report", str(killed), "-o", str(out), "--unfinished"]) == 2
    err = capsys.readouterr().err
    assert "every run given is unfinished" in err and str(killed) in err and "Traceback" not in err
    assert run_dirs_of(out) == [str(done.resolve())]


def test_a_folder_or_file_that_is_no_run_is_an_error(tmp_path, capsys):
    done = hand_run(tmp_path / "r1", 1, ["a", "b"], [0.8, 0.6], [0.5])
    stray = tmp_path / "notes"
    stray.mkdir()
    (stray / "todo.txt").write_text("x\n")
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    for given, words in ((stray, "not a run directory (no config.yaml)"),
                         (afile, "is a file, not a run directory")):
        assert main(["report", str(done), str(given), "-o", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert f"error: {given}: {words}" in err and "Traceback" not in err, err
        assert not (tmp_path / "out").exists()


def test_a_runs_damaged_config_is_read_as_every_command_reads_it(tmp_path, capsys):
    # Before: report read config.yaml with a reader of its own: another line, column and wording for a damaged
    # file than train --resume, evaluate and metrics gave, and an empty one was reported (learner and policy "?").
    done = hand_run(tmp_path / "r1", 1, ["a", "b"], [0.8, 0.6], [0.5])
    damaged = hand_run(tmp_path / "r2", 2, ["a", "b"], [0.8, 0.6], [0.5])
    out = tmp_path / "out"
    for text in ("name: hand\nseed: [1,\n", ""):
        (damaged / "config.yaml").write_text(text)
        errors = []
        for argv in (["report", str(done), str(damaged), "-o", str(out)], ["evaluate", str(damaged)]):
            assert main(argv) == 2
            errors.append(capsys.readouterr().err.replace(str(damaged.resolve()), str(damaged)))
        assert errors[0] == errors[1], errors
        assert errors[0].startswith(f"error: {damaged / 'config.yaml'}: the run's own config "), errors[0]
        assert not out.exists()
    (damaged / "config.yaml").write_text("name: hand\nseed: [1,\n")
    assert main(["report", str(damaged), "-o", str(out)]) == 2
    assert "is damaged (not valid YAML: expected the node content, but found '<stream end>' at line 3, column 1)" \
        in capsys.readouterr().err


def test_runs_of_one_method_with_the_same_seed_are_not_two_seeds(tmp_path, capsys):
    """Two ER seed-1 runs (the second a rerun with other settings) are one seed: the latest started is reported,
    the other named as left out in a warning (printed and in the report), with how their configs differ."""
    names = ["a", "b"]
    first = hand_run(tmp_path / "er_seed1_first", 1, names, [0.9, 0.8], [0.7], started="2026-01-02T10:00:00+00:00")
    rerun = hand_run(tmp_path / "er_seed1_rerun", 1, names, [0.1, 0.1], [0.0], epochs=0,
                     started="2026-01-03T10:00:00+00:00")
    other = hand_run(tmp_path / "er_seed2", 2, names, [0.8, 0.7], [0.6], started="2026-01-01T10:00:00+00:00")
    # The same seed under another task order is a task-order run, not a repeat.
    order = hand_run(tmp_path / "er_seed1_ba", 1, ["b", "a"], [0.8, 0.7], [0.6], started="2026-01-01T10:00:00+00:00")
    out = tmp_path / "report"
    assert main(["report", str(rerun), str(first), str(other), str(order), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    warnings = [line for line in printed.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, printed
    assert "same seed 1" in warnings[0] and "not independent seeds" in warnings[0]
    assert f"only the latest started, {rerun.resolve()}, is reported, {first.resolve()} left out" in warnings[0]
    assert "train.epochs: 2 (er_seed1_first), 0 (er_seed1_rerun)" in warnings[0]
    # The rerun's settings differ from the other seeds' too, which are reported with it as one method.
    assert "configs differ besides seed and task order" in warnings[1]
    assert "train.epochs: 2 (er_seed1_ba), 0 (er_seed1_rerun), 2 (er_seed2)" in warnings[1]
    assert "(3 runs;" in printed
    assert run_dirs_of(out) == sorted(str(p.resolve()) for p in (rerun, other, order))
    with open(out / "libero_table.csv", newline="") as f:
        assert {r["n"] for r in csv.DictReader(f)} == {"3"}
    md = (out / "report.md").read_text()
    assert all(w.replace("warning:", "Warning:", 1) in md for w in warnings)


def test_a_rerun_stopped_partway_does_not_displace_a_whole_run_of_the_same_seed(tmp_path, capsys):
    names = ["a", "b"]
    whole = hand_run(tmp_path / "er_seed1", 1, names, [0.9, 0.8], [0.7], started="2026-01-02T10:00:00+00:00")
    rerun = hand_run(tmp_path / "er_seed1_again", 1, names, [0.5, 0.4], [0.3], started="2026-01-03T10:00:00+00:00")
    (rerun / "progress.json").write_text(json.dumps({"stage": 1, "phase": "train", "epoch": 1, "stages": 2}))
    out = tmp_path / "report"
    assert main(["report", str(whole), str(rerun), "-o", str(out), "--unfinished"]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    assert any(f"only the latest started of those that have ended, {whole.resolve()}, is reported, "
               f"{rerun.resolve()} left out" in w for w in warnings), warnings
    assert run_dirs_of(out) == [str(whole.resolve())]


def test_runs_on_other_tasks_than_their_method_are_named(tmp_path, capsys):
    """A run that learnt other tasks (here one task twice) is named in a warning and is no other task order."""
    ab1 = hand_run(tmp_path / "ab1", 1, ["a", "b"], [0.8, 0.6], [0.4])
    ab2 = hand_run(tmp_path / "ab2", 2, ["a", "b"], [0.7, 0.6], [0.5])
    twice = hand_run(tmp_path / "aa3", 3, ["a", "a"], [0.5, 0.9], [0.2])
    out = tmp_path / "report"
    assert main(["report", str(ab1), str(ab2), str(twice), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    warnings = [line for line in printed.splitlines() if line.startswith("warning:")]
    assert any(f"{twice.resolve()} names a more than once in its tasks (a, a)" in w for w in warnings), printed
    assert any(f"{twice.resolve()} learnt other tasks (a, a) than the method's other runs (a, b)" in w
               for w in warnings), printed
    md = (out / "report.md").read_text()
    assert "learnt other tasks" in md
    assert "## Task orders" not in md and not (out / "task_orders.csv").exists()


def test_learner_and_policy_settings_differ_alike_wherever_the_config_gave_them(tmp_path):
    # A run with policy.cfg.embed_size=32 (or learner.options.keep_fraction=0.9) was averaged with runs of the
    # preset's 16 (0.25) without a warning: an empty cfg/options of the others left the key out of the comparison.
    from omegaconf import OmegaConf

    from libero_ll.evaluation.runs import DEFAULT_VALUE, config_differences, load_run

    def run(name, seed, **overrides):
        path = hand_run(tmp_path / name, seed, ["a", "b"], [0.8, 0.6], [0.4], learner="packnet")
        cfg = OmegaConf.load(path / "config.yaml")
        cfg.learner.by_name = {"packnet": {"keep_fraction": 0.25}, "er": {"buffer": 1000}}
        cfg.learner.options = {}
        cfg.policy.by_name = {"resnet_t": {"embed_size": 16}, "vit_t": {"embed_size": 64}}
        cfg.policy.cfg = {}
        for key, value in overrides.items():
            OmegaConf.update(cfg, key.replace("__", "."), value)
        OmegaConf.save(cfg, path / "config.yaml")
        return load_run(path)

    base = run("base", 1)
    assert config_differences([base, run("same", 2, policy__cfg={"embed_size": 16})]) == {}
    assert config_differences([base, run("wide", 3, policy__cfg={"embed_size": 32})]) == {
        "policy.cfg.embed_size": ["16", "32"]}
    assert config_differences([base, run("keep", 4, learner__options={"keep_fraction": 0.9})]) == {
        "learner.options.keep_fraction": ["0.25", "0.9"]}
    assert config_differences([base, run("by_name", 5, learner__by_name__packnet__keep_fraction=0.9)]) == {
        "learner.options.keep_fraction": ["0.25", "0.9"]}
    # A setting only one run gives is shown against the others' default; another learner's presets do not count.
    assert config_differences([base, run("extra", 6, learner__options={"finetune_epochs": 3},
                                         learner__by_name__er__buffer=5)]) == {
        "learner.options.finetune_epochs": [DEFAULT_VALUE, "3"]}
