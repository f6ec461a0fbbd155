"""A bad config file or override is one LiberoError naming the file (or the override), the key and what it takes;
none of these tests trains: loading the config is enough."""

from __future__ import annotations

from pathlib import Path

import pytest

from libero_ll.errors import LiberoError
from libero_ll.experiments.config import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def refused(path, overrides=()) -> str:
    with pytest.raises(LiberoError) as e:
        load_config(path, list(overrides))
    return str(e.value)


def config_file(tmp_path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, says",
    [
        # Before: TypeError: ListConfig.pop() takes from 1 to 2 positional arguments.
        ("- 1\n- 2\n", "a config file is a mapping of settings and sections (name:, seed:, train:, eval:, ...; "
                       "see configs/cpu.yaml), got a list"),
        # Before: "hello: Key 'hello' not in 'ExperimentConfig'"; a number: "Invalid loaded object type: int".
        ("hello\n", "a config file is a mapping of settings and sections"),
        ("3\n", "got the single value 3"),
        # Before: TypeError: 'int' object is not iterable.
        ("defaults: 3\n", "defaults takes a list of config names or paths, relative to this file's folder, "
                          ".yaml optional (e.g. defaults: [smoke]), got 3"),
        # Before: "s.yaml: no such config file" (it went through the string's letters).
        ("defaults: smoke\n", "defaults takes a list of config names or paths, relative to this file's folder, "
                              ".yaml optional (e.g. defaults: [smoke]), got 'smoke'; write defaults: [smoke]"),
        # Before: "{'a': 1}.yaml: no such config file".
        ("defaults: [{a: 1}]\n", "defaults[0]: the entries of defaults are config names or paths"),
        ("defaults: [smoke, 7]\n", "defaults[1]: the entries of defaults are config names or paths"),
    ],
)
def test_a_file_of_the_wrong_shape_or_bad_defaults_is_named(tmp_path, text, says):
    path = config_file(tmp_path, text)
    message = refused(path)
    assert message.startswith(f"{path}: ") and says in message, message
    # defaults still takes names and paths, relative to the file's folder, .yaml optional, or null.
    sub = tmp_path / "sub"
    sub.mkdir()
    config_file(tmp_path, "seed: 11\ntrain: {epochs: 4}\n", "base.yaml")
    path = config_file(sub, "defaults: [../base]\nseed: 12\n")
    cfg = load_config(path)
    assert cfg.seed == 12 and cfg.train.epochs == 4
    path = config_file(sub, "defaults:\n  - ../base.yaml\n", "d.yaml")
    assert load_config(path).seed == 11
    assert load_config(config_file(tmp_path, "defaults:\nseed: 5\n", "null.yaml")).seed == 5
    # A preset copied to a folder of one's own still builds on the shipped presets it names.
    assert load_config(config_file(tmp_path, "defaults: [smoke]\nseed: 6\n", "mine.yaml")).name == "smoke"
    # A name found nowhere: the file that asked, and where it was looked for.
    message = refused(config_file(tmp_path, "defaults: [smoky]\n", "typo.yaml"))
    assert message.startswith(f"{tmp_path / 'typo.yaml'}: defaults names 'smoky', but there is no "
                              f"{tmp_path / 'smoky.yaml'} (a name is looked for beside the file that names it, then "
                              "among the shipped presets: ")
    presets = sorted(p.stem for p in (Path(__file__).parents[2] / "configs").glob("*.yaml"))
    assert message.endswith(", ".join(presets) + ")") and "cpu" in presets and "smoke" in presets


@pytest.mark.parametrize(
    "text, says",
    [
        # Before: only "while parsing a flow sequence" and "while constructing a mapping", with no line.
        ("name: x\ntrain:\n  epochs: [1\n", "not valid YAML: expected ',' or ']', but got '<stream end>' at line 4, "
                                            "column 1"),
        ("eval:\n  every: 1\n  every: 2\n", "not valid YAML: found duplicate key every at line 3, column 3"),
    ],
)
def test_invalid_yaml_says_what_is_wrong_and_where(tmp_path, text, says):
    path = config_file(tmp_path, text)
    assert refused(path) == f"{path}: {says}"


@pytest.mark.parametrize(
    "where, value",
    [("file", "${nosuch}"), ("override", "${nosuch}"), ("file", "${eval.rollout}"), ("override", "${name}")],
)
def test_an_interpolation_that_cannot_be_resolved_is_named_when_the_config_loads(tmp_path, where, value):
    # Before: loading passed, and check_components (and so `train`) raised omegaconf's InterpolationKeyError
    # with a traceback.
    if where == "file":
        path = config_file(tmp_path, f"defaults: [{CONFIGS / 'smoke'}]\neval:\n  every: '{value}'\n")
        message = refused(path)
        assert message.startswith(f"{path}: eval.every: cannot resolve '{value}': "), message
    else:
        message = refused(CONFIGS / "smoke.yaml", ["seed=3", f"eval.every={value}"])
        assert message.startswith(f"override eval.every={value}: eval.every: cannot resolve '{value}': "), message
    if value == "${nosuch}":
        assert message.endswith("Interpolation key 'nosuch' not found")
    # Interpolations that resolve still load, kept as written, and pass the run's checks.
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import check_components

    path = config_file(tmp_path, f"defaults: [{CONFIGS / 'smoke'}]\neval:\n  every: ${{train.epochs}}\n")
    cfg = load_config(path, ["train.epochs=3", "name=${learner.name}_run"])
    assert cfg.eval.every == 3 and cfg.name == f"{cfg.learner.name}_run"
    assert OmegaConf.to_container(cfg)["eval"]["every"] == "${train.epochs}"  # kept as written
    check_components(cfg)


def test_a_sweeps_interpolation_is_named_with_its_variant(tmp_path):
    from libero_ll.experiments.sweep import load_sweep

    sweep = config_file(
        tmp_path,
        f"config: {CONFIGS / 'smoke.yaml'}\nseeds: [1]\ngrid:\n  eval.every: ['${{nosuch}}']\n",
        "sweep.yaml",
    )
    with pytest.raises(LiberoError) as e:
        load_sweep(sweep, tmp_path / "out")
    assert str(e.value).startswith(f"{sweep}: ")
    assert "eval.every: cannot resolve '${nosuch}': Interpolation key 'nosuch' not found" in str(e.value)


@pytest.mark.parametrize(
    "override, says",
    [
        # Before: "override Merge error: str is not a subclass of LearnerSection. value: er".
        ("learner=er", "override learner=er: learner is a section (name, options, by_name), not a single value; "
                       "set one of its keys, e.g. learner.name=er"),
        ("train=3", "override train=3: train is a section (epochs, batch_size, "),
        ("policy=null", "override policy=null: policy is a section (name, cfg, by_name)"),
        ("policy.cfg=3", "override policy.cfg=3: policy.cfg is a mapping of keys to values, not a single value; "
                         "set one of its keys, e.g. policy.cfg.NAME=3"),
        # Before: "override tasks: Invalid value assigned: AnyNode is not a ListConfig, TupleConfig, ...".
        ("tasks=foo", "override tasks=foo: tasks takes a list, e.g. tasks=[a,b]"),
        # Before: "override Key '' not in 'ExperimentConfig'", which named neither the override nor its key.
        (".train=1", "override '.train=1': the key '.train' has an empty part; keys are names joined by single "
                     "dots, e.g. train.epochs=20"),
        ("train..epochs=1", "override 'train..epochs=1': the key 'train..epochs' has an empty part"),
        ("train.=1", "override 'train.=1': the key 'train.' has an empty part"),
    ],
)
def test_an_override_of_the_wrong_shape_says_what_the_key_takes(override, says):
    message = refused(CONFIGS / "smoke.yaml", ["seed=3", override])
    assert message.startswith(says), message


def test_a_file_value_of_the_wrong_shape_says_what_the_key_takes(tmp_path):
    path = config_file(tmp_path, "learner: er\n")
    assert refused(path) == (
        f"{path}: learner is a section (name, options, by_name), not a single value; set one of its keys, "
        "e.g. learner: {name: VALUE}"
    )
    path = config_file(tmp_path, "seed: 1\ntasks: foo\n")
    assert refused(path) == f"{path}: tasks takes a list, e.g. tasks: [a, b]"
    # Sections given as mappings, and a null task list, are fine.
    cfg = load_config(config_file(tmp_path, "tasks: null\nlearner: {name: ewc}\npolicy: {cfg: {}}\n"))
    assert cfg.tasks is None and cfg.learner.name == "ewc"
    assert load_config(None, ["tasks=[a,b]", "learner.name=seql"]).tasks == ["a", "b"]


@pytest.mark.parametrize(
    "text, override, message",
    [
        ("train: {epochs: -1}\n", "train.epochs=-1", "train.epochs must be a non-negative integer, got -1"),
        ("train:\n  lr: 0\n", "train={lr: 0}", "train.lr must be a positive number, got 0.0"),
        ("eval: {rollouts: 0}\n", "eval.rollouts=0", "eval.rollouts must be 1 or more, got 0"),
        ("seed: -3\n", "seed=-3", "seed must be a whole number from 0 to 2**63-1, got -3"),
        # Before, taken: the run made its folder and collected or loaded demos before the first scene refused it.
        ("env: {robot_mesh: colision}\n", "env.robot_mesh=colision",
         "env.robot_mesh must be one of visual, simplified, collision, got 'colision'"),
    ],
)
def test_a_value_out_of_range_names_its_file_or_its_override(tmp_path, text, override, message):
    # Before, a range error named neither (a wrong type named the file): "train.epochs must be ...".
    path = config_file(tmp_path, text)
    assert refused(path, ["name=x"]) == f"{path}: {message}"
    assert refused(CONFIGS / "smoke.yaml", ["name=x", override]) == f"override {override}: {message}"
    # A file included through defaults is named as such; a later override that mends the value wins.
    top = config_file(tmp_path, f"defaults: [{path.stem}]\nname: top\n", "top.yaml")
    assert refused(top) == f"{path} (in the defaults of {top}): {message}"
    key, value = override.split("=", 1)
    good = {"train.epochs=-1": "train.epochs=2", "train={lr: 0}": "train.lr=0.1",
            "env.robot_mesh=colision": "env.robot_mesh=collision"}.get(override, f"{key}=1")
    load_config(path, [good])
    for shipped in sorted(CONFIGS.glob("*.yaml")):  # the presets still load
        load_config(shipped)


@pytest.mark.parametrize("override, says", [
    # Before: "learner er: unknown options [1]" (a key not set by the preset), or TypeError tracebacks: "Cannot
    # merge incompatible container types" (one the preset sets), "'int' object is not iterable".
    ("learner.by_name.er=[1]", "learner.by_name.er takes a mapping of that learner's options, not a list or a "
                               "single value; set one at a time, e.g. learner.by_name.er.KEY=VALUE"),
    ("learner.by_name.seql=3", "learner.by_name.seql takes a mapping of that learner's options"),
    ("policy.by_name.vit_t=[8]", "policy.by_name.vit_t takes a mapping of that policy's keys"),
])
def test_a_by_name_entry_that_is_not_a_mapping_says_a_mapping_is_expected(tmp_path, override, says):
    assert refused(CONFIGS / "smoke.yaml", [override]).startswith(f"override {override}: {says}")
    key, value = override.split("=")
    section, _, name = key.split(".")
    path = config_file(tmp_path, f"{section}:\n  by_name:\n    {name}: {value}\n")
    assert refused(path).startswith(f"{path}: {says.partition(' e.g.')[0]}")
    load_config(CONFIGS / "smoke.yaml", [f"{key}=null"])  # an entry of no settings is taken, as before


def test_a_learners_options_that_are_not_a_mapping_are_named_when_the_run_starts():
    # A config built in Python is checked when the run starts.
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import check_components

    cfg = load_config(CONFIGS / "smoke.yaml")
    OmegaConf.update(cfg, "learner.by_name", {"er": [1]}, merge=False)
    with pytest.raises(LiberoError, match=r"^learner.by_name.er: learner er: options are a mapping of option names "
                                          r"to values \(known: .*\), got \[1\]$"):
        check_components(cfg)


def test_a_task_named_twice_is_refused_naming_where_it_came_from(tmp_path):
    # Before, taken: a run keys its demos, initial states and scores by task name, so the second stage of a
    # task had nothing of its own.
    bowl = "put_the_black_bowl_on_the_plate"
    says = f"tasks lists {bowl} twice; name each task once"
    override = f"tasks=[{bowl},put_the_alphabet_soup_in_the_basket,{bowl}]"
    assert refused(CONFIGS / "smoke.yaml", [override]).startswith(f"override {override}: {says}")
    path = config_file(tmp_path, f"defaults: [smoke]\ntasks: [{bowl}, {bowl}]\n")
    assert refused(path).startswith(f"{path}: {says}")
    # A config built in Python is checked when the run starts.
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import check_components

    cfg = load_config(CONFIGS / "smoke.yaml")
    OmegaConf.update(cfg, "tasks", [bowl, bowl])
    with pytest.raises(LiberoError, match=f"suite quickstart: {says}"):
        check_components(cfg)


def test_a_run_refuses_an_unknown_robot_mesh_before_any_work():
    # A config built in Python (or edited in a run's config.yaml) is checked again when the run starts.
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import check_components

    cfg = load_config(CONFIGS / "smoke.yaml")
    OmegaConf.update(cfg, "env.robot_mesh", "colision")
    with pytest.raises(LiberoError, match=r"env.robot_mesh must be one of visual, simplified, collision, got 'colision'"):
        check_components(cfg)
