"""A preset sizes every policy: `policy.name=...` alone switches architecture, with that preset's sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from libero_ll.errors import LiberoError
from libero_ll.experiments.config import load_config, policy_config
from libero_ll.experiments.lifelong import check_components

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["resnet_t", "resnet_rnn", "vit_t"])
def test_cpu_preset_switches_policy_by_name(name):
    cfg = load_config(CONFIGS / "cpu.yaml", [f"policy.name={name}"])
    check_components(cfg)
    keys = policy_config(cfg)
    assert keys["gmm_modes"] == 1 and keys["embed_size"] == 64


@pytest.mark.parametrize("name", ["resnet_t", "resnet_rnn", "vit_t"])
def test_smoke_preset_builds_a_tiny_network_of_every_policy(name):
    from libero_ll.data.hdf5 import LOWDIM_SIZES
    from libero_ll.policies import make_policy

    cfg = load_config(CONFIGS / "smoke.yaml", [f"policy.name={name}"])
    check_components(cfg)
    shape = {"image_shape": (32, 32, 3), "lowdim": LOWDIM_SIZES, "action_dim": 7, "task_emb_dim": 384}
    policy = make_policy(name, policy_config(cfg), shape)
    # The policies' own defaults are the paper's sizes, millions of weights.
    assert sum(p.numel() for p in policy.parameters()) < 50_000


def test_policy_cfg_overrides_by_name_and_bad_entries_are_named():
    cfg = load_config(CONFIGS / "cpu.yaml", ["policy.cfg.embed_size=32"])
    assert policy_config(cfg)["embed_size"] == 32
    cfg = load_config(CONFIGS / "cpu.yaml", ["policy.by_name.vit_t.patch_sise=8"])
    with pytest.raises(LiberoError, match="policy.by_name.vit_t.*patch_sise"):
        check_components(cfg)


def test_an_image_key_no_demo_file_holds_is_refused_before_demos_are_collected():
    # Before: taken until the demos were collected (minutes), then "data/demo_0/obs has no 'nosuch' dataset".
    # check_components is what a run (and a sweep, for each of its runs) checks before any work.
    cfg = load_config(CONFIGS / "smoke.yaml", ["policy.cfg.image_keys=[agentview_rgb,nosuch]"])
    with pytest.raises(LiberoError, match=r"policy resnet_t: image_keys names 'nosuch', which is not a camera of "
                                          r"the demo files and scenes \(they have agentview_rgb, eye_in_hand_rgb\)"):
        check_components(cfg)
    cfg = load_config(CONFIGS / "smoke.yaml", ["policy.by_name.vit_t.image_keys=[wrist]"])
    with pytest.raises(LiberoError, match="policy.by_name.vit_t: image_keys names 'wrist'"):
        check_components(cfg)
    check_components(load_config(CONFIGS / "smoke.yaml", ["policy.cfg.image_keys=[eye_in_hand_rgb]"]))


def test_an_override_whose_value_is_not_yaml_is_named():
    cfg = load_config(CONFIGS / "cpu.yaml", ["policy.cfg.lowdim_components={ee_states: [2, 3]}", "seed=7"])
    assert policy_config(cfg)["lowdim_components"] == {"ee_states": [2, 3]} and cfg.seed == 7
    bad = "policy.cfg.lowdim_components={ee_states:[2,3]}"
    with pytest.raises(LiberoError, match=r"override 'policy\.cfg\.lowdim_components=.*not valid YAML"):
        load_config(CONFIGS / "cpu.yaml", ["seed=7", bad])
    # An override without '=' or without a key says so (it used to read as a null value).
    for bad, problem in (("train.epochs", "there is no '='"), ("=5", "the key is missing")):
        with pytest.raises(LiberoError, match=f"override '{re.escape(bad)}': expected key=value.*{problem}"):
            load_config(CONFIGS / "cpu.yaml", [bad])


def test_a_bad_override_is_named_as_an_override_and_a_bad_file_value_by_its_file(tmp_path):
    with pytest.raises(LiberoError, match=r"^override data\.dir: .*None"):
        load_config(CONFIGS / "cpu.yaml", ["data.dir="])
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  epochs: many\n")
    with pytest.raises(LiberoError, match=rf"^{re.escape(str(bad))}: train\.epochs: "):
        load_config(bad, ["seed=3"])


def test_an_empty_config_file_is_refused_not_run_with_the_defaults(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(LiberoError, match="empty.yaml: the config file is empty"):
        load_config(empty)


def test_an_empty_task_list_and_files_in_place_of_folders_are_refused(tmp_path):
    with pytest.raises(LiberoError, match="tasks is an empty list"):
        check_components(load_config(CONFIGS / "smoke.yaml", ["tasks=[]"]))
    afile = tmp_path / "afile"
    afile.write_text("x")
    for key, value in (("data.dir", afile), ("output_dir", afile / "runs")):
        cfg = load_config(CONFIGS / "smoke.yaml", [f"{key}={value}"])
        with pytest.raises(LiberoError, match=rf"{key} {re.escape(str(value))}: {re.escape(str(afile))} is a file"):
            check_components(cfg)
