"""Definitions of the QD locomotion tasks: robots, feet, rewards, offsets."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

__all__ = [
    "LocomotionSpec",
    "TASKS",
    "TASK_NAMES",
    "REWARD_OFFSETS",
    "resolve_links",
    "check_floor_contacts",
    "feet_contact_fn",
    "xy_position_fn",
]


@dataclasses.dataclass(frozen=True)
class LocomotionSpec:
    """Static description of one QD locomotion task.

    Attributes:
        robot: brax environment name (``brax.envs.get_environment``).
        descriptor: ``"feet_contact"`` (fraction of the episode's steps each foot
            touches the floor) or ``"final_xy"`` (torso position at the end).
        feet: Link specifications of the feet, in measure order: a link name, or
            ``"child:NAME"`` for the unique child link of ``NAME`` (brax >= 0.13
            gives the ant's lower legs empty names, so they are found through their
            hip links).
        reward_offset: Per-step reward offset (QDax's values); the QD-score offset
            is ``-reward_offset * episode_length``.
        forward_reward_metric: Metric removed from the reward by omni tasks.
    """

    robot: str
    descriptor: str
    feet: tuple[str, ...] = ()
    reward_offset: float = 0.0
    forward_reward_metric: str | None = None


TASKS = {
    # Feet orders follow the links' order in brax (QDax's effective order). For
    # halfcheetah this is (back, front), the reverse of dqd-rl's QDGym measures.
    "ant_uni": LocomotionSpec(
        "ant", "feet_contact", ("child:aux_1", "child:aux_2", "child:aux_3", "child:aux_4"), 3.24
    ),
    "halfcheetah_uni": LocomotionSpec("halfcheetah", "feet_contact", ("bfoot", "ffoot"), 9.231),
    "hopper_uni": LocomotionSpec("hopper", "feet_contact", ("foot",), 0.9),
    "walker2d_uni": LocomotionSpec("walker2d", "feet_contact", ("foot", "foot_left"), 1.413),
    "humanoid_uni": LocomotionSpec("humanoid", "feet_contact", ("right_shin", "left_shin"), 0.0),
    "ant_omni": LocomotionSpec(
        "ant", "final_xy", reward_offset=3.0, forward_reward_metric="reward_forward"
    ),
    "humanoid_omni": LocomotionSpec(
        "humanoid", "final_xy", reward_offset=0.0, forward_reward_metric="reward_linvel"
    ),
}

TASK_NAMES = tuple(TASKS)

REWARD_OFFSETS = {name: spec.reward_offset for name, spec in TASKS.items()}


def resolve_links(sys, specs) -> tuple[int, ...]:
    """Link indices of ``specs`` (see :class:`LocomotionSpec.feet`) in ``sys``.

    Raises:
        LookupError: A name matches no link or several, or a ``child:`` parent does
            not have exactly one child. The message lists the system's links, so a
            brax release that renames bodies fails loudly instead of silently
            producing an empty descriptor (QDax's ``ant_uni`` on brax >= 0.13).
    """
    names = list(sys.link_names)
    parents = [int(p) for p in sys.link_parents]
    indices = []
    for spec in specs:
        if spec.startswith("child:"):
            parent_name = spec[len("child:") :]
            parent = [i for i, n in enumerate(names) if n == parent_name]
            children = (
                [i for i, p in enumerate(parents) if p == parent[0]] if len(parent) == 1 else []
            )
            found = children
        else:
            found = [i for i, n in enumerate(names) if n == spec]
        if len(found) != 1:
            raise LookupError(
                f"Could not identify the link {spec!r} in this brax system (found "
                f"{len(found)} candidates). Links: {names}, parents: {parents}."
            )
        indices.append(found[0])
    return tuple(indices)


def check_floor_contacts(sys, links) -> None:
    """Checks that every link in ``links`` has a geometry that collides with the floor.

    Raises:
        LookupError: Some link can never touch the floor, so its contact measure
            would be constantly zero.
    """
    bodies = np.asarray(sys.geom_bodyid)
    contype = np.asarray(sys.geom_contype)
    conaffinity = np.asarray(sys.geom_conaffinity)
    world = bodies == 0
    for link in links:
        own = bodies == link + 1  # Link i is MuJoCo body i + 1 (body 0 is the world).
        collides = (contype[own][:, None] & conaffinity[world][None]) | (
            conaffinity[own][:, None] & contype[world][None]
        )
        if not np.any(collides):
            raise LookupError(
                f"Link {link} ({sys.link_names[link]!r}) has no geometry "
                "that collides with the floor."
            )


def feet_contact_fn(feet: tuple[int, ...]):
    """``state -> (len(feet),)`` floats: 1.0 where the foot penetrates the floor.

    Uses the contacts stored in ``state.pipeline_state.contact`` (the brax env must be
    created with ``debug=True``): a foot touches the floor when a contact between the
    world (link -1) and that link has ``dist <= 0``.
    """
    feet_arr = np.asarray(feet, dtype=np.int32)

    def fn(state):
        contact = state.pipeline_state.contact
        link_a, link_b = contact.link_idx
        touching = contact.dist <= 0
        with_floor_a = (link_a == -1)[None] & (link_b[None] == feet_arr[:, None])
        with_floor_b = (link_b == -1)[None] & (link_a[None] == feet_arr[:, None])
        hits = (with_floor_a | with_floor_b) & touching[None]
        return jnp.any(hits, axis=1).astype(state.obs.dtype)

    return fn


def xy_position_fn(link: int):
    """``state -> (2,)``: world x, y of ``link`` (the torso for omni tasks)."""

    def fn(state):
        return state.pipeline_state.x.pos[link, :2].astype(state.obs.dtype)

    return fn
