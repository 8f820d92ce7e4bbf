"""Every public name of pyribs 0.12's modules exists in the matching ribsax module.

``EXPECTED_MISSING`` lists what ribsax does not provide yet. The test fails both when
a name disappears from ribsax and when a listed name gets implemented without being
removed from the list, so the list always says exactly what is missing.
"""

import importlib

import pytest

#: Module (relative to ``ribs`` / ``ribsax``) -> names not implemented yet.
EXPECTED_MISSING = {
    "archives": set(),
    "emitters": set(),
    "emitters.opt": set(),
    "emitters.rankers": set(),
    "schedulers": set(),
    "visualize": set(),
    "discount_models": set(),
}


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in dir(module) if not name.startswith("_")]
    return set(names)


@pytest.mark.parametrize("module", sorted(EXPECTED_MISSING))
def test_public_names_exist(module):
    theirs = importlib.import_module(f"ribs.{module}")
    ours = importlib.import_module(f"ribsax.{module}")
    pyribs_names = _public_names(theirs)
    missing = {name for name in pyribs_names if not hasattr(ours, name)}

    unexpected = missing - EXPECTED_MISSING[module]
    assert not unexpected, f"ribsax.{module} lacks {sorted(unexpected)}"
    implemented = EXPECTED_MISSING[module] - missing
    assert not implemented, (
        f"ribsax.{module} now has {sorted(implemented)}: remove them from EXPECTED_MISSING"
    )
    # The list names only pyribs names, so it cannot hide a typo.
    assert EXPECTED_MISSING[module] <= pyribs_names


@pytest.mark.parametrize("module", sorted(EXPECTED_MISSING))
def test_public_names_in_all(module):
    """Names ribsax provides are also exported in its ``__all__``."""
    theirs = importlib.import_module(f"ribs.{module}")
    ours = importlib.import_module(f"ribsax.{module}")
    ours_all = set(getattr(ours, "__all__", ()))
    provided = _public_names(theirs) - EXPECTED_MISSING[module]
    assert provided <= ours_all, sorted(provided - ours_all)
