"""Foot and torso identification on the installed brax, without compiling rollouts."""

import brax.envs
import jax
import numpy as np
import pytest

from ribsax.tasks import brax as brax_tasks
from ribsax.tasks.brax._locomotion import check_floor_contacts, resolve_links

EXPECTED_FEET = {
    "hopper": ["foot"],
    "walker2d": ["foot", "foot_left"],
    "halfcheetah": ["bfoot", "ffoot"],
    "humanoid": ["right_shin", "left_shin"],
}


@pytest.fixture(scope="module", name="systems")
def fixture_systems():
    return {
        robot: brax.envs.get_environment(robot, backend="spring").sys
        for robot in ["ant", "hopper", "walker2d", "halfcheetah", "humanoid"]
    }


@pytest.mark.parametrize("name", [n for n in brax_tasks.TASK_NAMES if n.endswith("_uni")])
def test_feet_resolve_and_touch_floor(systems, name):
    spec = brax_tasks.TASKS[name]
    sys = systems[spec.robot]
    feet = resolve_links(sys, spec.feet)
    assert len(set(feet)) == len(spec.feet)
    check_floor_contacts(sys, feet)
    if spec.robot in EXPECTED_FEET:
        assert [sys.link_names[i] for i in feet] == EXPECTED_FEET[spec.robot]
    else:  # The ant's lower legs: leaves of the tree, children of the hips.
        parents = [int(p) for p in sys.link_parents]
        assert [sys.link_names[parents[i]] for i in feet] == ["aux_1", "aux_2", "aux_3", "aux_4"]
        assert all(i not in parents for i in feet)


def test_qdax_ant_names_would_be_empty(systems):
    """The failure mode we guard against: QDax's ant foot names match nothing."""
    names = systems["ant"].link_names
    assert not {"$ Body 4", "$ Body 7", "$ Body 10", "$ Body 13"} & set(names)
    with pytest.raises(LookupError, match="Could not identify the link"):
        resolve_links(systems["ant"], ("$ Body 4",))


def test_unknown_parent_and_non_colliding_link(systems):
    with pytest.raises(LookupError, match="found 0 candidates"):
        resolve_links(systems["walker2d"], ("child:nope",))
    with pytest.raises(LookupError, match="found 2 candidates"):
        resolve_links(systems["walker2d"], ("child:torso",))
    sys = systems["walker2d"]
    thigh = resolve_links(sys, ("thigh",))
    with pytest.raises(LookupError, match="no geometry that collides"):
        check_floor_contacts(sys, thigh)


def test_create_validates_arguments():
    with pytest.raises(ValueError, match="Unknown brax task"):
        brax_tasks.create("anttrap")
    with pytest.raises(ValueError, match="episode_length must be positive"):
        brax_tasks.create("hopper_uni", episode_length=0)


def test_create_metadata_without_compiling():
    task = brax_tasks.create(
        "ant_omni",
        episode_length=50,
        backend="positional",
        hidden_layer_sizes=(16,),
        position_range=(-5, 5),
    )
    assert task.backend == "positional" and task.env.backend == "positional"
    assert task.measure_ranges == ((-5.0, 5.0), (-5.0, 5.0))
    assert task.qd_score_offset == -3.0 * 50
    assert task.solution_dim == 27 * 16 + 16 + 16 * 8 + 8
    assert task.feet_links == () and not task.has_jacobian
    assert "ant_omni" in repr(task)
    x = task.initial_solutions(3, jax.random.key(0))
    assert x.shape == (3, task.solution_dim)
    np.testing.assert_array_equal(x, task.initial_solutions(3, jax.random.key(0)))
