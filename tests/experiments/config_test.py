"""Tests for ribsax.experiments.load_config and the shipped configs."""

import pytest
import yaml

from ribsax.examples.sphere import CONFIG as SPHERE_CONFIG
from ribsax.experiments import ConfigError, list_configs, load_config
from ribsax.experiments._config import CONFIG_DIR
from ribsax.experiments._shipped_configs import shipped_configs, yaml_text


def _write(tmp_path, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


BASE = """
name: tiny
task: {name: sphere, solution_dim: 4}
archive: {class: GridArchive, dims: [5, 5]}
emitters:
  - {class: GaussianEmitter, sigma: 0.1, batch_size: 8}
budget: {iterations: 3}
"""


def test_shipped_configs_cover_every_sphere_configuration_arm_and_brax():
    from ribsax.experiments._shipped_configs import RUNNER_LACKS

    names = list_configs()
    for name in SPHERE_CONFIG:
        assert (f"sphere_{name}" in names) == (name not in RUNNER_LACKS)
    assert "arm_cma_me" in names
    assert "brax_walker2d_uni_map_elites" in names
    assert "brax_ant_uni_map_elites" in names
    from ribsax.rl.train import ALGORITHMS

    assert {load_config(name).rl.algorithm for name in names if name.startswith("rl_")} == set(
        ALGORITHMS
    )


def test_shipped_yaml_files_equal_the_generating_table():
    configs = shipped_configs()
    assert sorted(configs) == list_configs()
    for name, (cfg, source) in configs.items():
        assert (CONFIG_DIR / f"{name}.yaml").read_text() == yaml_text(cfg, source)


@pytest.mark.parametrize("name", list_configs())
def test_every_shipped_config_and_its_smoke_variant_load(name):
    full = load_config(name)
    smoke = load_config(f"{name}_test")
    assert full.name == smoke.name == name
    if name.startswith("rl_"):
        assert smoke.rl.steps < full.rl.steps
        return
    full_budget = full.budget.iterations or full.budget.evaluations
    smoke_budget = smoke.budget.iterations or smoke.budget.evaluations
    assert smoke_budget < full_budget


def test_sphere_config_matches_the_example_table():
    cfg = load_config("sphere_cma_me_mixed")
    assert [(e["class"], e["count"], e["ranker"]) for e in cfg.emitters] == [
        ("EvolutionStrategyEmitter", 7, "2rd"),
        ("EvolutionStrategyEmitter", 8, "2imp"),
    ]
    assert cfg.budget.iterations == 10_000


def test_dotted_overrides_reach_nested_keys_and_list_entries():
    cfg = load_config(
        "sphere_map_elites",
        ["seed=3", "archive.dims=[30,30]", "emitters.0.batch_size=2048", "loop=fused"],
    )
    assert cfg.seed == 3
    assert list(cfg.archive.dims) == [30, 30]
    assert cfg.emitters[0].batch_size == 2048
    assert cfg.loop.value == "fused"


def test_smoke_flag_equals_test_suffix():
    assert load_config("sphere_map_elites", smoke=True) == load_config("sphere_map_elites_test")
    assert load_config("sphere_map_elites_test").budget.iterations == 6


def test_yaml_file_loads_with_schema_defaults(tmp_path):
    cfg = load_config(_write(tmp_path, BASE))
    assert cfg.scheduler["class"] == "Scheduler"
    assert cfg.checkpoint.keep == 3
    assert cfg.loop.value == "ask_tell"


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["budget.iteration=5"], r"budget\.iteration.*iterations"),
        (["seed=abc"], r"seed.*Integer"),
        (["loop=fast"], r"loop.*ask_tell, fused"),
        (["emitters.3.sigma=1"], r"emitters\.3.*index below 1"),
        (["emitters.0.sigmaa=1"], r"emitters\.0\.sigmaa: unknown key.*sigma"),
        (["emitters.0.batch_size=big"], r"emitters\.0\.batch_size: expected a number"),
        (["emitters.0.class=NoSuchEmitter"], r"emitters\.0\.class: unknown class"),
        (["archive.class=NoSuchArchive"], r"archive\.class: unknown class.*GridArchive"),
        (["archive.solution_dim=3"], r"archive\.solution_dim: set by the runner"),
        (["task.name=nothing"], r"task\.name: unknown task"),
        (["task.dimension=3"], r"task\.dimension: unknown key.*solution_dim"),
        (["scheduler.num_active=3"], r"scheduler\.num_active: unknown key"),
        (["budget.evaluations=100"], r"budget: expected exactly one"),
        (["budget.iterations=0"], r"budget\.iterations: expected a positive"),
        (["noequals"], r"expected key=value"),
    ],
)
def test_bad_config_names_the_key(tmp_path, overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_config(_write(tmp_path, BASE), overrides)


def test_missing_field_names_the_key(tmp_path):
    text = BASE.replace("archive: {class: GridArchive, dims: [5, 5]}\n", "")
    with pytest.raises(ConfigError, match=r"archive: missing mandatory value"):
        load_config(_write(tmp_path, text))


def test_unknown_top_level_key_in_yaml(tmp_path):
    with pytest.raises(ConfigError, match=r"iterationz"):
        load_config(_write(tmp_path, BASE + "iterationz: 3\n"))


def test_unknown_config_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match="sphere_map_elites"):
        load_config("no_such_config")


def test_generated_yaml_is_plain_yaml():
    data = yaml.safe_load((CONFIG_DIR / "sphere_map_elites.yaml").read_text())
    assert data["emitters"][0] == {
        "class": "GaussianEmitter",
        "count": 1,
        "sigma": 0.5,
        "batch_size": 540,
    }
