"""Success tensor: the best epoch, JSON save/load with NaN, atomic writes and readable errors."""

import json
import math

import numpy as np
import pytest

from libero_ll.errors import LiberoError
from libero_ll.evaluation.success import SuccessTensor


def sample():
    t = SuccessTensor.empty(["a", "b"])
    t.eval_epochs[0] = [0, 5, 10, 15]
    t.curves[0] = [0.0, 0.6, 0.4, 0.6]
    t.losses[0] = [1.5, 1.2, float("nan")]
    t.matrix[0, 0] = 0.6
    t.matrix[0, 1] = 0.1
    return t


def test_empty_has_no_points_and_a_nan_matrix():
    t = SuccessTensor.empty(["a", "b", "c"])
    assert t.num_tasks == 3
    assert t.curves == [[], [], []] and t.eval_epochs == [[], [], []]
    assert t.matrix.shape == (3, 3) and np.isnan(t.matrix).all()


def test_best_is_the_max_at_its_earliest_epoch():
    t = sample()
    assert t.best(0) == (0.6, 5)
    t.curves[0] = [float("nan"), 0.2, 0.9, 0.1]
    assert t.best(0) == (0.9, 10)
    t.curves[0] = [0.0, 0.0, 0.0, 0.0]
    assert t.best(0) == (0.0, 0)
    with pytest.raises(ValueError, match="task 1"):
        t.best(1)


def test_save_and_load_round_trip_with_nan_as_null(tmp_path):
    path = tmp_path / "run" / "success.json"
    t = sample()
    t.save(path)
    raw = json.loads(path.read_text())
    assert raw["matrix"] == [[0.6, 0.1], [None, None]]
    assert raw["losses"][0] == [1.5, 1.2, None]
    back = SuccessTensor.load(path)
    assert back.task_names == ["a", "b"]
    assert back.eval_epochs == t.eval_epochs and back.curves == t.curves
    assert back.losses[0][:2] == [1.5, 1.2] and math.isnan(back.losses[0][2])
    np.testing.assert_array_equal(back.matrix, t.matrix)  # NaN positions compare equal here
    assert raw["kept_epochs"] == [None, None] and back.kept_epochs == [None, None]


def test_the_kept_epoch_is_saved_and_a_file_without_it_reads_as_before(tmp_path):
    path = tmp_path / "success.json"
    t = sample()
    t.kept_epochs[0] = 15  # a stage of several tasks kept its epoch 15 (0.6 too, but not the earliest)
    t.save(path)
    back = SuccessTensor.load(path)
    assert back.kept_epochs == [15, None] and back.best(0) == (0.6, 15) and back.kept_index(0) == 3
    raw = json.loads(path.read_text())
    del raw["kept_epochs"]
    raw["version"] = 1
    path.write_text(json.dumps(raw))
    old = SuccessTensor.load(path)
    assert old.kept_epochs == [None, None] and old.best(0) == (0.6, 5)


def test_a_file_of_a_newer_version_is_refused_naming_the_versions_read(tmp_path, capsys):
    # Before: read as if it were of this version, by metrics and report alike.
    from libero_ll.cli import main
    from libero_ll.evaluation.success import VERSION

    run = tmp_path / "run"
    path = run / "success.json"
    sample().save(path)
    (run / "config.yaml").write_text("name: fake\n")
    raw = json.loads(path.read_text())
    for version, says in ((VERSION + 1, f"is of version {VERSION + 1}, newer than this code reads (versions 1 to "
                                        f"{VERSION}); read it with the newer libero_ll that wrote it"),
                          ("2", f"has the version '2', not a version number (this code reads versions 1 to {VERSION})")):
        path.write_text(json.dumps({**raw, "version": version}))
        with pytest.raises(LiberoError) as e:
            SuccessTensor.load(path)
        assert str(e.value) == f"success tensor file {path} {says}"
        for argv in (["metrics", str(run)], ["report", str(run), "-o", str(tmp_path / "report")]):
            assert main(argv) == 2
            assert capsys.readouterr().err == f"error: success tensor file {path} {says}\n"
        assert not (tmp_path / "report").exists()
    with pytest.raises(ValueError, match=f"the success tensor is of version {VERSION + 1}, newer"):
        SuccessTensor.from_dict({**raw, "version": VERSION + 1})
    # The versions this code knows, and a file without one (version 1), read as before.
    for version in range(1, VERSION + 1):
        path.write_text(json.dumps({**raw, "version": version}))
        assert SuccessTensor.load(path).task_names == ["a", "b"]
    del raw["version"]
    path.write_text(json.dumps(raw))
    assert SuccessTensor.load(path).task_names == ["a", "b"]


def test_save_replaces_atomically_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "success.json"
    SuccessTensor.empty(["a"]).save(path)
    sample().save(path)
    assert SuccessTensor.load(path).task_names == ["a", "b"]
    assert [p.name for p in tmp_path.iterdir()] == ["success.json"]


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(LiberoError, match="missing.json"):
        SuccessTensor.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(LiberoError, match="bad.json"):
        SuccessTensor.load(bad)
    data = sample().to_dict()
    del data["curves"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    with pytest.raises(LiberoError, match=r"partial\.json.*curves"):
        SuccessTensor.load(partial)
    data = sample().to_dict()
    data["matrix"] = [[0.1]]
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps(data))
    with pytest.raises(LiberoError, match="shape.json"):
        SuccessTensor.load(shape)
    # No task at all: a run has one or more (it entered metrics and reports as a run of none).
    none = tmp_path / "none.json"
    none.write_text(json.dumps(SuccessTensor.empty([]).to_dict()))
    with pytest.raises(LiberoError, match=r"none\.json holds no tasks"):
        SuccessTensor.load(none)
    # Bytes that are no UTF-8 text gave a UnicodeDecodeError traceback.
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LiberoError, match=r"binary\.json is not UTF-8 text"):
        SuccessTensor.load(binary)


def test_inconsistent_sizes_are_rejected():
    with pytest.raises(ValueError, match="matrix"):
        SuccessTensor(["a", "b"], [[], []], [[], []], [[], []], np.zeros((1, 1)))
    with pytest.raises(ValueError, match="task 0"):
        SuccessTensor(["a"], [[0, 5]], [[0.1]], [[]], np.zeros((1, 1)))


def test_success_given_as_percentages_is_named(tmp_path):
    path = tmp_path / "success.json"
    sample().save(path)
    raw = json.loads(path.read_text())
    raw["matrix"][0][1] = 10.0
    path.write_text(json.dumps(raw))
    with pytest.raises(LiberoError, match=r"is malformed: matrix\[0\]\[1\] is 10.0; success fractions are in"):
        SuccessTensor.load(path)
    raw = json.loads(path.read_text())
    raw["matrix"][0][1], raw["curves"][0][1] = 0.1, 60
    path.write_text(json.dumps(raw))
    with pytest.raises(LiberoError, match=r"task 0: curve values must be success fractions in \[0, 1\]"):
        SuccessTensor.load(path)
