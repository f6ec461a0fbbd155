"""Code of one's own (`plugins`): the example learner and policy of examples/plugins/ train, pause, resume from
another folder, evaluate and report through the CLI, in the processes a run starts too; what a run records of
them; and the messages for plugins that cannot be used."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.experiments.config import load_config
from libero_ll.experiments.lifelong import run_lifelong
from libero_ll.learners.registry import LEARNERS

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "plugins"
FAST = ["train.epochs=2", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]

# A small conv_t network on the smoke preset's tasks (the smoke preset sizes only the built-in policies).
CONV_T = """\
name: mine
num_threads: 1
suite: quickstart
tasks: [put_the_alphabet_soup_in_the_basket, put_the_black_bowl_on_the_plate]
language_encoder: task_id
data: {{dir: {data}, demos_per_task: 2, expert_max_steps: 300}}
env: {{image_size: 32, robot_mesh: collision}}
train: {{epochs: 2, batch_size: 8, window_stride: 10}}
eval: {{every: 1, rollouts: 2, max_steps: 4, init_states: 1, workers: 2, overlap: true}}
output_dir: {runs}
plugins: [l2_learner.py, conv_t_policy.py]
policy:
  name: conv_t
  cfg: {{embed_size: 16, conv_channels: [8, 16], extra_embedding_size: 8, language_proj_size: 8,
         transformer_layers: 1, heads: 2, head_size: 8, mlp_size: 16, gmm_hidden: [32]}}
learner:
  name: l2
  options: {{lambda: 10.0}}
"""


@pytest.fixture(autouse=True)
def fresh_imports(fresh_plugins):
    """Each test imports the plugins anew (tests/conftest.py's `fresh_plugins`)."""


def _copy_examples(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in EXAMPLES.glob("*.py"):
        shutil.copy(f, folder / f.name)
    return folder


def test_a_learner_and_a_policy_of_ones_own_through_the_cli(tmp_path, smoke_data, monkeypatch, capsys):
    """Trained with the evaluation in a process of its own and its environment workers (each finds the
    policy's class by name), paused, resumed from another folder after the learner's file changed, evaluated
    again and reported."""
    work = _copy_examples(tmp_path / "work")
    (work / "mine.yaml").write_text(CONV_T.format(data=smoke_data, runs=tmp_path / "runs"))
    monkeypatch.chdir(work)
    assert main(["train", "mine.yaml", "--stages", "1"]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    plugins = json.loads((run_dir / "environment.json").read_text())["sessions"][0]["plugins"]
    assert [(p["entry"], Path(p["file"]).name) for p in plugins] == [
        ("l2_learner.py", "l2_learner.py"), ("conv_t_policy.py", "conv_t_policy.py")]
    assert plugins[0]["sha256"] == __import__("hashlib").sha256((work / "l2_learner.py").read_bytes()).hexdigest()
    resources = json.loads((run_dir / "resources.json").read_text())
    assert resources["memory_is_samples"] is False
    assert resources["tasks"][0]["memory_bytes"] > 0  # the anchor kept after the first task

    with open(work / "l2_learner.py", "a") as f:
        f.write("# edited\n")
    # The second stage in the training process (a resume may change these), which saves the processes' start.
    config = (run_dir / "config.yaml").read_text()
    assert "overlap: true" in config and "workers: 2" in config
    (run_dir / "config.yaml").write_text(config.replace("overlap: true", "overlap: false").replace("workers: 2",
                                                                                                   "workers: 1"))
    monkeypatch.chdir(tmp_path)  # the relative plugin paths are found from the folder the run started in
    capsys.readouterr()
    assert main(["train", "--resume", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"warning: plugin l2_learner.py: {work / 'l2_learner.py'} has changed since the run started" in out
    assert "done: 2 tasks" in out
    assert (run_dir / "final_policy.pt").exists()

    assert main(["evaluate", str(run_dir), "--rollouts", "1", "--workers", "1"]) == 0
    assert main(["report", str(run_dir), "-o", str(tmp_path / "report")]) == 0
    assert "conv_t" in (tmp_path / "report" / "report.md").read_text()

    # The memory counts as stored samples when the learner says it is (l2 is no replay learner by name).
    from libero_ll.evaluation.runs import load_run

    assert load_run(run_dir).replay is False
    resources = json.loads((run_dir / "resources.json").read_text())
    (run_dir / "resources.json").write_text(json.dumps({**resources, "memory_is_samples": True}))
    assert load_run(run_dir).replay is True


def test_the_example_learner_pulls_later_training_towards_the_last_tasks_weights(tmp_path):
    import numpy as np

    from libero_ll.data.dataset import SequenceDataset, TaskData
    from libero_ll.experiments.plugins import import_plugins
    from libero_ll.learners import TrainConfig, make_learner
    from libero_ll.policies import make_policy

    import_plugins([str(_copy_examples(tmp_path) / "l2_learner.py")])
    tiny = {"image_keys": ["agentview_rgb"], "lowdim_keys": ["gripper_states"], "embed_size": 8,
            "encoder_width": 4, "encoder_blocks": 1, "extra_embedding_size": 8, "language_proj_size": 8,
            "transformer_layers": 1, "heads": 1, "head_size": 8, "mlp_size": 8, "gmm_hidden": [16],
            "num_keypoints": 4, "seq_len": 4}
    meta = {"image_shape": (16, 16, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": 2}

    def task(k: int) -> TaskData:
        rng = np.random.default_rng(k)
        demos = [{"agentview_rgb": rng.integers(0, 255, (12, 16, 16, 3), dtype=np.uint8),
                  "gripper_states": rng.normal(size=(12, 2)).astype(np.float32),
                  "actions": rng.uniform(-1, 1, (12, 7)).astype(np.float32)} for _ in range(3)]
        return TaskData(k, demos, np.eye(2, dtype=np.float32)[k])

    def moved_in_task_2(lam: float) -> float:
        torch.manual_seed(0)
        policy = make_policy("resnet_t", tiny, meta)
        learner = make_learner("l2", policy, TrainConfig(epochs=1, batch_size=4, lr=1e-2), {"lambda": lam})
        for k in (0, 1):
            learner.start_task(k, task(k))
            learner.train_epoch(SequenceDataset([task(k)], 4, ["agentview_rgb", "gripper_states"]))
            if k == 0:
                learner.end_task(0, task(0))
                anchor = {n: p.detach().clone() for n, p in policy.named_parameters()}
                assert learner.memory_bytes() == sum(t.numel() * 4 for t in anchor.values())
        return sum(float((p.detach() - anchor[n]).norm()) for n, p in policy.named_parameters())

    assert moved_in_task_2(1e4) < 0.2 * moved_in_task_2(0.0)


def test_the_example_learner_resumes_as_an_uninterrupted_run(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    _copy_examples(tmp_path / "code")
    plugin = f"plugins=[{tmp_path / 'code' / 'l2_learner.py'}]"

    def weights(run_dir: Path, name: str = "final_policy.pt") -> dict:
        return torch.load(run_dir / name, weights_only=True)["policy"]

    def config(folder: str):
        return make_smoke_config(tmp_path / folder, smoke_data, *FAST, plugin, "learner.name=l2",
                                 "learner.options.lambda=100")

    # Built as a sweep's worker builds its run's config, from a plain mapping, without load_config: the run
    # imports its plugins itself.
    from omegaconf import OmegaConf

    from libero_ll.experiments.config import ExperimentConfig

    plain = OmegaConf.to_container(make_smoke_config(tmp_path / "whole", smoke_data, *FAST), resolve=True)
    plain["plugins"] = [str(tmp_path / "code" / "l2_learner.py")]
    plain["learner"].update(name="l2", options={"lambda": 100.0})
    assert "l2" not in LEARNERS
    whole = run_lifelong(OmegaConf.merge(OmegaConf.structured(ExperimentConfig), plain), log=lambda s: None,
                         envs=smoke_envs)
    paused = run_lifelong(config("paused"), log=lambda s: None, envs=smoke_envs, max_stages=1)
    anchor = torch.load(paused / "resume.pt", weights_only=True)["learner"]["anchor"]
    first = weights(paused, "checkpoints/task00_best.pt")
    assert anchor and all(torch.equal(anchor[k], first[k]) for k in anchor)  # the weights kept for task 1
    run_lifelong(load_config(paused / "config.yaml"), log=lambda s: None, resume=paused, envs=smoke_envs)
    a, b = weights(paused), weights(whole)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((paused / "success.json").read_text()) == json.loads((whole / "success.json").read_text())


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


@pytest.mark.parametrize("name, text, message", [
    # Before, the file was named twice: "plugins: syntax.py: /tmp/.../syntax.py:2:7: invalid syntax".
    ("syntax.py", "x = 1\ndef f(:\n", "plugins: syntax.py:2:7: invalid syntax"),
    ("raises.py", "import os\n\nraise RuntimeError('boom')\n",
     "plugins: raises.py:3: RuntimeError: boom (--debug shows the traceback)"),
    ("needs.py", "import not_installed_anywhere\n",
     "plugins: needs.py:1: ModuleNotFoundError: No module named 'not_installed_anywhere'"),
    ("taken.py", "from libero_ll.learners import Learner, register_learner\n\n@register_learner('er')\n"
                 "class Mine(Learner):\n    pass\n",
     "plugins: taken.py: learner 'er' is registered twice (the name is taken); choose another name"),
    ("func.py", "from libero_ll.learners import register_learner\n\n@register_learner('func_learner')\n"
                "def mine(policy, train, options):\n    pass\n",
     "plugins: func.py: learner 'func_learner' cannot be registered: mine is not a class deriving from "
     "libero_ll.learners.Learner"),
    ("listed.py", "from libero_ll.learners import Learner, register_learner\n\n"
                  "@register_learner('listed_learner')\nclass Mine(Learner):\n    options = ['alpha']\n",
     "plugins: listed.py: learner 'listed_learner' cannot be registered: Mine.options must be a dict of option "
     "names and their defaults, not list"),
    ("notpol.py", "from libero_ll.policies import register_policy\n\n@register_policy('not_a_policy')\n"
                  "class Mine:\n    pass\n",
     "plugins: notpol.py: policy 'not_a_policy' cannot be registered: Mine is not a class deriving from "
     "libero_ll.policies.BasePolicy"),
    ("noconf.py", "from libero_ll.policies import BasePolicy, register_policy\n\n"
                  "@register_policy('no_config')\nclass Mine(BasePolicy):\n    pass\n",
     "plugins: noconf.py: policy 'no_config' cannot be registered: Mine.config_class must be a dataclass (a "
     "PolicyConfig subclass), not None"),
    ("json.py", "X = 1\n", "plugins: json.py: a module named 'json' is already imported from"),
    ("my-code.py", "X = 1\n", "plugins: my-code.py: 'my-code' cannot be a module's name"),
])
def test_a_plugin_that_cannot_be_used_is_named_with_where_it_went_wrong(tmp_path, monkeypatch, name, text, message):
    _write(tmp_path, name, text)
    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path, "mine.yaml", f"plugins: [{name}]\n")
    with pytest.raises(LiberoError) as e:
        load_config(config)
    assert str(e.value).startswith("mine.yaml: ") or str(e.value).startswith(f"{config}: ")
    assert message.format(dir=tmp_path) in str(e.value)
    assert Path(name).stem not in sys.modules or name == "json.py"  # nothing half-imported is left behind


def test_a_plugin_error_names_the_file_once(tmp_path, monkeypatch):
    # Before: "plugins: /x/bad.py: /x/bad.py:2:7: invalid syntax".
    bad = _write(tmp_path / "code", "bad_once.py", "x = 1\ndef f(:\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LiberoError) as e:
        load_config(None, [f"plugins=[{bad}]"])
    assert str(e.value) == f"override plugins=[{bad}]: plugins: {bad}:2:7: invalid syntax"
    # The deepest line of the plugin's own code, its path relative as given.
    _write(tmp_path / "code", "helper_once.py", "raise ValueError('deep')\n")
    _write(tmp_path / "code", "user_once.py", "import helper_once\n")
    with pytest.raises(LiberoError) as e:
        load_config(None, ["plugins=[code/user_once.py]"])
    assert str(e.value).endswith("plugins: code/user_once.py:1: ValueError: deep (--debug shows the traceback)")
    # A module is named as given, then the file its error came from.
    module = _write(tmp_path, "module_once.py", "raise ValueError('mod')\n")
    with pytest.raises(LiberoError) as e:
        load_config(None, ["plugins=[module_once]"])
    assert str(e.value).endswith(f"plugins: module_once: {module}:1: ValueError: mod (--debug shows the traceback)")


def test_missing_plugins_and_unknown_names_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LiberoError, match=r"^override plugins=\[nope.py\]: plugins: nope.py: no such file "
                                          rf"\(relative paths start from {tmp_path}\)"):
        load_config(None, ["plugins=[nope.py]"])
    with pytest.raises(LiberoError, match=r"no module 'my_lab.nope' \(looked for from .* and on the Python path\)"):
        load_config(None, ["plugins=[my_lab.nope]"])
    with pytest.raises(LiberoError, match=r"plugins takes a list, e.g. plugins=\[a,b\]"):
        load_config(None, ["plugins=mine.py"])
    # A module name is found from the current folder, as a file is.
    _write(tmp_path / "my_lab", "__init__.py", "")
    _write(tmp_path / "my_lab", "seql2.py", "from libero_ll.learners import register_learner\n"
                                             "from libero_ll.learners.seql import SeqL\n\n"
                                             "register_learner('seql2')(type('SeqL2', (SeqL,), {}))\n")
    load_config(None, ["plugins=[my_lab.seql2]", "learner.name=seql2"])
    assert "seql2" in LEARNERS
    from libero_ll.experiments.lifelong import check_components

    cfg = load_config(None, ["learner.name=mine", "tasks=[put_the_black_bowl_on_the_plate]"])
    with pytest.raises(LiberoError, match=r"unknown learner 'mine'; known: .*; one of your own is named once its "
                                          r"code is imported: plugins=\[FILE.py\] \(docs/extending.md\)"):
        check_components(cfg)


def test_a_folder_named_as_a_plugin_module_is_refused_as_it_registers_nothing(tmp_path, monkeypatch, capsys):
    # Before: a folder without __init__.py was imported as an empty namespace package: no error, nothing
    # registered, and `learner.name` then said the learner is unknown.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab").mkdir()
    with pytest.raises(LiberoError) as e:
        load_config(None, ["plugins=[lab]"])
    assert str(e.value) == (f"override plugins=[lab]: plugins: lab: {tmp_path / 'lab'} is a folder that holds no "
                            "Python module (no .py file), so it registers nothing; name a .py file, or a module")
    assert "lab" not in sys.modules
    # With modules in it, their names are given: importing the folder imports none of them.
    _write(tmp_path / "lab", "mine.py", "X = 1\n")
    config = _write(tmp_path, "mine.yaml", "plugins: [lab]\n")
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {config}: plugins: lab: {tmp_path / 'lab'} is a folder without __init__.py: importing "
                   "it runs none of the code in it, so it registers nothing; name the module that registers yours "
                   "(lab.mine), or its .py file\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab", "mine.yaml"]
    load_config(None, ["plugins=[lab.mine]"])  # a module in it is fine


def test_the_recorded_memory_kind_decides_how_metrics_count_it(tmp_path):
    """A learner of one's own that replays says so (`memory_is_samples`), and its run's memory then counts as
    stored samples (SSS), not as model size, whatever the learner's name."""
    from libero_ll.evaluation.resources import load_resources
    from libero_ll.experiments.resources import task_entry, write_resources

    write_resources(tmp_path / "resources.json", [task_entry("t", 0, 10, 10, 1000, 5, 1.0)], memory_is_samples=True)
    assert load_resources(tmp_path).memory_is_samples is True
    write_resources(tmp_path / "resources.json", [task_entry("t", 0, 10, 10, 1000, 5, 1.0)])
    assert load_resources(tmp_path).memory_is_samples is None
    data = json.loads((tmp_path / "resources.json").read_text())
    (tmp_path / "resources.json").write_text(json.dumps({**data, "memory_is_samples": "yes"}))
    with pytest.raises(LiberoError, match="memory_is_samples is 'yes', not true or false"):
        load_resources(tmp_path)


def test_two_files_of_one_name_are_not_taken_for_each_other(tmp_path, monkeypatch):
    """A second file named like a plugin already imported is refused, not silently replaced by the first."""
    _write(tmp_path / "a", "mine.py", "X = 1\n")
    _write(tmp_path / "b", "mine.py", "X = 2\n")
    monkeypatch.chdir(tmp_path)
    load_config(None, ["plugins=[a/mine.py]"])
    load_config(None, ["plugins=[a/mine.py]"])  # the same file again: imported once
    assert sys.modules["mine"].X == 1
    with pytest.raises(LiberoError, match=rf"plugins: b/mine.py: a module named 'mine' is already imported from "
                                          rf"{tmp_path}/a/mine.py; rename the file"):
        load_config(None, ["plugins=[b/mine.py]"])
