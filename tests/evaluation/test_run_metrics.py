"""Every metric of one run from its directory: all_metrics with recorded resources, references, the
`libero-ll metrics --all` command and clean errors for incomplete run directories."""

import json
import math

import numpy as np
import pytest

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.evaluation.metrics import all_metrics, libero_metrics
from libero_ll.evaluation.resources import RunResources, TaskDataSize, TaskResources
from libero_ll.evaluation.runs import load_run, measure_run
from libero_ll.evaluation.success import SuccessTensor

NAN = float("nan")


def make_tensor(
    names=("a", "b"), curves=((0.0, 0.5, 1.0), (0.0, 0.5, 0.5)), matrix=((1.0, NAN), (0.25, 0.5))
):
    return SuccessTensor(
        task_names=list(names),
        eval_epochs=[[0, 5, 10] for _ in names],
        curves=[list(c) for c in curves],
        losses=[[] for _ in names],
        matrix=np.array(matrix, dtype=float),
    )


def make_run(path, tensor, learner="er", seed=1, resources=None, suite="quickstart", policy="resnet_t"):
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(
        f"name: test\nseed: {seed}\nsuite: {suite}\ntasks: {json.dumps(tensor.task_names)}\n"
        f"learner:\n  name: {learner}\npolicy:\n  name: {policy}\n"
        f"data:\n  dir: {path / 'no_data'}\n  demos_per_task: 2\ntrain:\n  window_stride: 1\n"
    )
    tensor.save(path / "success.json")
    if resources is not None:
        (path / "resources.json").write_text(json.dumps({"version": 1, "tasks": resources}))
    return path


RESOURCES = [
    {
        "task": "a",
        "index": 0,
        "params": 1000,
        "params_used": 1000,
        "memory_bytes": 400,
        "samples_seen": 10,
        "train_macs": 1000.0,
    },
    {
        "task": "b",
        "index": 1,
        "params": 1000,
        "params_used": 1000,
        "memory_bytes": 800,
        "samples_seen": 20,
        "train_macs": 2000.0,
    },
]


def resources(entries=RESOURCES):
    return RunResources([TaskResources(**e) for e in entries])


def test_all_metrics_keeps_the_libero_metrics_and_adds_the_rest():
    t = make_tensor()
    m = all_metrics(t)
    for key, value in libero_metrics(t).items():
        np.testing.assert_equal(m[key], value)
    assert m["A"] == pytest.approx((1.0 + 0.25 + 0.5) / 3)
    assert m["BWT"] == pytest.approx(-0.75) and m["REM"] == pytest.approx(0.25) and m["BWT_plus"] == 0.0
    assert math.isnan(m["FWT_prime"]) and "FWT_prime" in m["not_recorded"]
    assert m["R_per_task"] == pytest.approx([1.0, 0.375]) and m["F_final"] == pytest.approx(0.75)
    # Curve AUC by the trapezoid rule: (0.25 + 0.75) * 5 / 10; (0.25 + 0.5) * 5 / 10.
    assert m["train_auc_per_task"] == pytest.approx([0.5, 0.375])
    for c in ("MS", "SSS", "CE"):
        assert math.isnan(m[c]) and m["not_recorded"][c] == "resources.json not recorded"
    assert m["CL_score_criteria"] == ["A", "REM", "BWT_plus"]
    assert m["CL_score"] == pytest.approx((m["A"] + m["REM"] + 0.0) / 3)
    assert math.isnan(m["I"]) and math.isnan(m["FT"])


def test_resource_criteria_of_a_replay_learner_by_hand():
    sizes = [TaskDataSize(nbytes=800, windows=5), TaskDataSize(nbytes=800, windows=5)]
    m = all_metrics(make_tensor(), resources(), replay=True, data_sizes=sizes)
    assert m["MS"] == 1.0  # 4000 bytes of parameters after each task; the replay memory counts for SSS
    assert m["SSS"] == pytest.approx(1 - (400 / 1600 + 800 / 1600) / 2)
    # One pass = (macs / windows seen) * windows of the task: 500 and 500, against 1000 and 2000 spent.
    assert m["CE"] == pytest.approx((0.5 + 0.25) / 2)
    assert m["not_recorded"].keys() == {"FWT_prime", "I", "FT"}
    assert m["CL_score_criteria"] == ["A", "MS", "SSS", "CE", "REM", "BWT_plus"]


def test_resource_criteria_of_a_learner_keeping_buffers_with_the_model():
    m = all_metrics(make_tensor(), resources(), replay=False)
    assert m["MS"] == pytest.approx((1 + 4400 / 4800) / 2)  # 4 bytes per parameter plus the kept buffers
    assert m["SSS"] == 1.0  # no samples stored: the data's size is not needed
    assert math.isnan(m["CE"]) and "CE" in m["not_recorded"]  # no data size for the one-pass cost


def test_missing_resource_field_gives_nan_not_an_error():
    entries = [dict(RESOURCES[0]), {k: v for k, v in RESOURCES[1].items() if k != "train_macs"}]
    sizes = [TaskDataSize(800, 5), TaskDataSize(800, 5)]
    m = all_metrics(make_tensor(), resources(entries), replay=True, data_sizes=sizes)
    assert math.isnan(m["CE"]) and "train_macs" in m["not_recorded"]["CE"]
    assert not math.isnan(m["MS"]) and not math.isnan(m["SSS"])


def test_references_give_intransigence_and_forward_transfer(tmp_path):
    run = load_run(make_run(tmp_path / "run", make_tensor()))
    # A multitask reference holding the tasks in the other order; its final row counts.
    ref = make_run(tmp_path / "mtl", make_tensor(("b", "a"), matrix=((0.1, NAN), (0.8, 0.9))), learner="mtl")
    single_a = make_run(
        tmp_path / "single_a", make_tensor(("a",), ((0.0, 0.0, 1.0),), ((1.0,),)), learner="seql"
    )
    m = measure_run(run, load_run(ref), [load_run(single_a)])
    assert m["I_per_task"] == pytest.approx([0.9 - 1.0, 0.8 - 0.5])
    # FT_a: run AUC 0.5 against the single-task AUC 0.25 -> (0.5 - 0.25) / 0.75; no reference for b.
    assert m["FT_per_task"][0] == pytest.approx(1 / 3) and math.isnan(m["FT_per_task"][1])
    assert m["FT"] == pytest.approx(1 / 3)


def test_incomplete_run_directories_are_named(tmp_path):
    with pytest.raises(LiberoError, match=r"nope: no such folder \(give a run directory\)"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LiberoError, match=r"empty: not a run directory \(no config.yaml\)"):
        load_run(tmp_path / "empty")
    (tmp_path / "empty" / "config.yaml").write_text("seed: 1\n")
    with pytest.raises(LiberoError, match="it has no success.json"):
        load_run(tmp_path / "empty")


def test_metrics_command_all(tmp_path, capsys):
    run = make_run(tmp_path / "run", make_tensor(), resources=RESOURCES)
    assert main(["metrics", str(run), "--all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = measure_run(load_run(run))
    for key in ("fwt", "nbt", "auc", "A", "BWT", "REM", "MS", "CL_score", "R_final", "F_final"):
        assert out[key] == pytest.approx(expected[key])
    assert out["FWT_prime"] is None and out["SSS"] is None  # no demo files: data size unknown
    assert "SSS" in out["not_recorded"]

    assert main(["metrics", str(run), "--all"]) == 0
    text = capsys.readouterr().out
    assert "FWT 0.417" in text  # the default output comes first
    assert "A, accuracy" in text and "not recorded" in text and "CL_score criteria used" in text

    assert main(["metrics", str(run)]) == 0
    assert "A, accuracy" not in capsys.readouterr().out  # without --all: FWT/NBT/AUC only

    assert main(["metrics", str(run), "--reference", str(run), "--json"]) == 0
    # The run as its own reference: its final row (0.25, 0.5) against its diagonal (1.0, 0.5).
    assert json.loads(capsys.readouterr().out)["I_per_task"] == pytest.approx([-0.75, 0.0])

    assert main(["metrics", str(tmp_path), "--all"]) == 2
    assert "not a run directory (no config.yaml)" in capsys.readouterr().err


def test_recorded_data_sizes_give_sss_and_ce_without_the_demo_files(tmp_path):
    """A run copied to another machine (its demo files left behind) keeps every resource criterion."""
    recorded = [dict(e, data_bytes=800, data_windows=5) for e in RESOURCES]
    run = load_run(make_run(tmp_path / "run", make_tensor(), resources=recorded))
    m = measure_run(run)
    expected = all_metrics(make_tensor(), resources(recorded), replay=True,
                           data_sizes=[TaskDataSize(800, 5), TaskDataSize(800, 5)])
    assert m["SSS"] == pytest.approx(expected["SSS"]) and m["CE"] == pytest.approx(expected["CE"])
    assert not math.isnan(m["SSS"]) and not math.isnan(m["CE"])
    assert "SSS" not in m["not_recorded"] and "CE" not in m["not_recorded"]

    # Only the first task recorded (a run from before the fields, then resumed): the second comes from its file.
    import h5py

    data = tmp_path / "run2" / "no_data"
    data.mkdir(parents=True)
    with h5py.File(data / "b.hdf5", "w") as f:
        for i in range(2):
            f["data/demo_%d/actions" % i] = np.zeros((10, 7), dtype=np.float32)
    mixed = [dict(RESOURCES[0], data_bytes=800, data_windows=5), RESOURCES[1]]
    run2 = make_run(tmp_path / "run2" / "run", make_tensor(), resources=mixed)
    (run2 / "config.yaml").write_text((run2 / "config.yaml").read_text().replace(str(run2 / "no_data"), str(data)))
    m2 = measure_run(load_run(run2))
    want = all_metrics(make_tensor(), resources(mixed), replay=True,
                       data_sizes=[TaskDataSize(800, 5), TaskDataSize(2 * 10 * 7 * 4, 20)])
    assert m2["SSS"] == pytest.approx(want["SSS"]) and m2["CE"] == pytest.approx(want["CE"])


def test_intransigence_names_the_tasks_the_reference_lacks(tmp_path, capsys):
    """A reference without some of the run's tasks: I is the mean over the others, and says which are left out
    (as FT and the LIBERO metrics leave out what has no value); a reference with none of them: n/a and why."""
    three = make_tensor(
        ("a", "b", "c"), ((0.0, 0.5, 1.0), (0.0, 0.5, 0.5), (0.0, 0.25, 0.75)),
        ((1.0, NAN, NAN), (0.25, 0.5, NAN), (0.25, 0.5, 0.75)),
    )
    run = make_run(tmp_path / "run", three)
    ref = make_run(tmp_path / "mtl", make_tensor(("b", "a"), matrix=((0.1, NAN), (0.8, 0.9))), learner="mtl")
    m = measure_run(load_run(run), load_run(ref))
    assert m["I_per_task"][:2] == pytest.approx([0.9 - 1.0, 0.8 - 0.5]) and math.isnan(m["I_per_task"][2])
    assert m["I"] == pytest.approx((-0.1 + 0.3) / 2)
    assert "I" not in m["not_recorded"]  # a value, over the tasks the reference has
    assert "the reference run lacks task(s) c" in m["partial"]["I"] and "2 of 3 tasks" in m["partial"]["I"]

    # The note reaches `metrics --json`.
    assert main(["metrics", str(run), "--reference", str(ref), "--json"]) == 0
    assert "lacks task(s) c" in json.loads(capsys.readouterr().out)["partial"]["I"]
    # And the text of `metrics --all`, next to I's value; a metric that is n/a says "n/a", not "not recorded".
    assert main(["metrics", str(run), "--reference", str(ref), "--all"]) == 0
    text = capsys.readouterr().out
    i_line = next(line for line in text.splitlines() if "(the mean over 2 of 3 tasks" in line)
    assert "0.1000" in i_line and "the reference run lacks task(s) c)" in i_line
    assert "(n/a: no single-task reference runs given)" in text and "not recorded:" not in text

    other = make_run(tmp_path / "other", make_tensor(("x", "y")), learner="mtl")
    m = measure_run(load_run(run), load_run(other))
    assert math.isnan(m["I"]) and "I" not in m["partial"]
    assert m["not_recorded"]["I"] == "the reference run lacks task(s) a, b, c"


def test_forward_transfer_says_why_when_the_reference_reaches_auc_1(tmp_path):
    """FT_k = (AUC_k - AUC_ref) / (1 - AUC_ref) is undefined where the single-task reference reaches AUC 1."""
    run = load_run(make_run(tmp_path / "run", make_tensor()))
    perfect_a = load_run(make_run(tmp_path / "single_a", make_tensor(("a",), ((1.0, 1.0, 1.0),), ((1.0,),))))
    single_b = load_run(make_run(tmp_path / "single_b", make_tensor(("b",), ((0.0, 0.0, 1.0),), ((1.0,),))))

    # Only task a has a reference, and it reaches AUC 1: FT is n/a, and says why.
    m = measure_run(run, single_task=[perfect_a])
    assert math.isnan(m["FT"]) and np.isnan(m["FT_per_task"]).all()
    why = m["not_recorded"]["FT"]
    assert "the reference reaches AUC 1 on task(s) a, so FT is undefined there" in why
    assert "no single-task run learned task(s) b first" in why

    # Task b's reference is below 1: FT is FT_b, over the one task, with a note naming task a.
    m = measure_run(run, single_task=[perfect_a, single_b])
    assert math.isnan(m["FT_per_task"][0]) and m["FT"] == pytest.approx((0.375 - 0.25) / 0.75)
    assert "FT" not in m["not_recorded"]
    assert "the reference reaches AUC 1 on task(s) a, so FT is undefined there" in m["partial"]["FT"]
    assert "1 of 2 tasks" in m["partial"]["FT"]


def test_resources_recorded_as_zero_are_values_not_not_recorded():
    """A 0 in resources.json was measured: the criteria use it, and only a missing field is "not recorded"."""
    sizes = [TaskDataSize(800, 5), TaskDataSize(800, 5)]
    # A learner that keeps nothing (memory_bytes 0): MS counts the parameters only, SSS is 1.
    no_memory = [dict(e, memory_bytes=0) for e in RESOURCES]
    for replay in (False, True):
        m = all_metrics(make_tensor(), resources(no_memory), replay=replay, data_sizes=sizes)
        assert m["MS"] == 1.0 and m["SSS"] == 1.0 and m["CE"] == pytest.approx(0.375)
        assert not {"MS", "SSS", "CE"} & set(m["not_recorded"])

    # A task trained on no window (samples_seen 0, train_macs 0): CE divides by its cost of 0.
    untrained = [RESOURCES[0], dict(RESOURCES[1], samples_seen=0, train_macs=0.0)]
    m = all_metrics(make_tensor(), resources(untrained), replay=True, data_sizes=sizes)
    assert math.isnan(m["CE"]) and m["MS"] == 1.0
    why = m["not_recorded"]["CE"]
    assert "not recorded" not in why and "task(s) b" in why and "train_macs 0" in why
    # The same with the field missing is "not recorded".
    unseen = ("samples_seen", "train_macs")
    missing = [RESOURCES[0], {k: v for k, v in RESOURCES[1].items() if k not in unseen}]
    m = all_metrics(make_tensor(), resources(missing), replay=True, data_sizes=sizes)
    assert "not recorded" in m["not_recorded"]["CE"]

    # A model of 0 bytes (params 0, its memory stored samples) and training data of 0 bytes.
    m = all_metrics(make_tensor(), resources([dict(e, params=0) for e in RESOURCES]), replay=True,
                    data_sizes=[TaskDataSize(0, 5), TaskDataSize(0, 5)])
    assert math.isnan(m["MS"]) and math.isnan(m["SSS"])
    for c in ("MS", "SSS"):
        assert "not recorded" not in m["not_recorded"][c] and "0 bytes" in m["not_recorded"][c]
    assert "demo files" not in m["not_recorded"]["SSS"]


def test_every_metric_that_is_n_a_says_why():
    # docs/metrics.md promises it; a one-task run's BWT, REM, BWT+, NBT and F_K were null without a word.
    from libero_ll.evaluation.metrics import _SCALARS

    one = make_tensor(("a",), ((0.0, 0.5, 1.0),), ((1.0,),))
    for tensor in (one, make_tensor(), make_tensor(curves=((NAN,) * 3, (NAN,) * 3), matrix=((NAN, NAN),) * 2)):
        m = all_metrics(tensor)
        unexplained = [k for k in _SCALARS if math.isnan(m[k]) and k not in m["not_recorded"]]
        assert unexplained == [], unexplained
    m = all_metrics(one)
    assert m["not_recorded"]["BWT"].endswith("needs two or more tasks learned")
    assert "nbt" in m["not_recorded"] and "F_final" in m["not_recorded"]
    nothing = all_metrics(make_tensor(curves=((NAN,) * 3, (NAN,) * 3), matrix=((NAN, NAN),) * 2))
    assert nothing["not_recorded"]["auc"] == "no task's stage has ended yet: nothing learned to measure"


def test_a_mean_over_some_tasks_names_each_task_it_leaves_out(tmp_path):
    # Task b was never evaluated just after it was learnt: I's mean over a and c said nothing of it, and FT's
    # note named only one of the two tasks it left out.
    three = make_tensor(
        ("a", "b", "c"), ((0.0, 0.5, 1.0), (NAN, NAN, NAN), (0.0, 0.25, 0.75)),
        ((1.0, NAN, NAN), (0.25, NAN, NAN), (0.25, 0.5, 0.75)),
    )
    run = make_run(tmp_path / "run", three)
    ref = make_run(tmp_path / "mtl", make_tensor(("a", "b", "c"), ((0, 1, 1),) * 3, ((NAN,) * 3, (NAN,) * 3,
                                                                                     (0.9, 0.9, 0.9))),
                   learner="mtl")
    m = measure_run(load_run(run), load_run(ref))
    assert "2 of 3 tasks" in m["partial"]["I"]
    assert "the run has no success of its own just after learning task(s) b" in m["partial"]["I"]
    single_a = load_run(make_run(tmp_path / "single_a", make_tensor(("a",), ((0.0, 0.0, 1.0),), ((1.0,),))))
    m = measure_run(load_run(run), single_task=[single_a])
    assert "1 of 3 tasks" in m["partial"]["FT"]
    assert "no single-task run learned task(s) c first" in m["partial"]["FT"]
    assert "the run recorded no training curve of task(s) b" in m["partial"]["FT"]


def test_multitask_data_counts_as_stored_samples(tmp_path):
    # MTL keeps every task's demos, yet its memory counted as model memory: SSS 1 (no sample stored), which lifted
    # its CL_score above the learners that store a little. Runs that recorded memory_is_samples false included.
    from libero_ll.learners.registry import LEARNERS

    assert LEARNERS.get("mtl").memory_is_samples
    data = dict(data_bytes=1000, data_windows=5)
    entries = [{**e, "memory_bytes": 2000, **data} for e in RESOURCES]
    run = make_run(tmp_path / "mtl", make_tensor(), learner="mtl", resources=entries)
    text = json.loads((run / "resources.json").read_text())
    (run / "resources.json").write_text(json.dumps({**text, "memory_is_samples": False}))
    loaded = load_run(run)
    assert loaded.replay
    m = measure_run(loaded)
    assert m["SSS"] == 0.0  # all of the run's data (2000 bytes) stored
    assert m["MS"] == 1.0  # the model is its parameters alone


def test_a_value_that_rounds_to_zero_prints_without_a_minus():
    # I_k printed "-0.000" where a reference and the run differed by less than the last digit; a sweep's progress
    # lines, which print the same way, said "nan".
    from libero_ll.evaluation.metrics import metric_text

    assert metric_text(-1e-9) == "0.000" and metric_text(-0.1) == "-0.100" and metric_text(NAN) == "n/a"
    assert metric_text(-1e-9, "8.4f") == "  0.0000" and metric_text(-0.25, "7.3f") == " -0.250"
    assert metric_text(NAN, "7.3f", "    n/a") == "    n/a" and metric_text(0.5) == "0.500"
