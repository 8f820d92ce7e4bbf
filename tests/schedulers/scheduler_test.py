"""Tests for Scheduler, with differential checks against pyribs."""

import numpy as np
import pytest
import ribs.archives
import ribs.schedulers

from ribsax.archives import GridArchive
from ribsax.emitters import EmitterBase, GaussianEmitter
from ribsax.schedulers import Scheduler
from tests.emitters.emitter_helpers import assert_same_error, grid_pair


class Recorder:
    """Duck-typed emitter (works with ribs and ribsax) emitting fixed solutions and
    recording what ``tell``/``tell_dqd`` receive."""

    def __init__(self, solutions, solution_dim=2):
        self.solutions = np.asarray(solutions, dtype=float)
        self.solution_dim = solution_dim
        self.told = []

    def ask(self):
        return self.solutions

    def ask_dqd(self):
        return self.solutions[:1]

    def tell(self, solution, objective, measures, add_info, **fields):
        self.told.append(
            {
                "solution": solution,
                "objective": objective,
                "measures": measures,
                "add_info": add_info,
                **fields,
            }
        )

    def tell_dqd(self, solution, objective, measures, jacobian, add_info, **fields):
        self.told.append({"solution": solution, "jacobian": jacobian, "add_info": add_info})


def _pair_schedulers(make_emitters, result=False, archive_kwargs=None, **kwargs):
    ribs_archive, archive = grid_pair(solution_dim=2, dims=(4, 4), **(archive_kwargs or {}))
    out = []
    for lib, arch in ((ribs, ribs_archive), (None, archive)):
        result_archive = None
        if result:
            result_archive = (
                ribs.archives.GridArchive(solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2)
                if lib
                else GridArchive(solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2)
            )
        cls = ribs.schedulers.Scheduler if lib else Scheduler
        out.append(cls(arch, make_emitters(), result_archive, **kwargs))
    return out


@pytest.mark.parametrize(
    "emitters,kwargs",
    [
        ([], {}),
        (3, {}),
        ("dup", {}),
        ("dims", {}),
        ("ok", {"add_mode": "foo"}),
    ],
    ids=["empty", "not_list", "duplicate", "solution_dims", "add_mode"],
)
def test_constructor_errors_match_ribs(emitters, kwargs):
    ribs_archive, archive = grid_pair(solution_dim=2)

    def make(cls, arch):
        if emitters == "dup":
            emitter = Recorder(np.zeros((1, 2)))
            ems = [emitter, emitter]
        elif emitters == "dims":
            ems = [
                Recorder(np.zeros((1, 2))),
                Recorder(np.zeros((1, 3)), 3),
                Recorder(np.zeros((1, 4)), 4),
            ]
        elif emitters == "ok":
            ems = [Recorder(np.zeros((1, 2)))]
        else:
            ems = emitters
        return cls(arch, ems, **kwargs)

    assert_same_error(
        lambda: make(ribs.schedulers.Scheduler, ribs_archive), lambda: make(Scheduler, archive)
    )


def test_archive_is_result_archive_error_matches_ribs():
    ribs_archive, archive = grid_pair(solution_dim=2)
    assert_same_error(
        lambda: ribs.schedulers.Scheduler(ribs_archive, [Recorder(np.zeros((1, 2)))], ribs_archive),
        lambda: Scheduler(archive, [Recorder(np.zeros((1, 2)))], archive),
    )


def test_properties():
    _, archive = grid_pair(solution_dim=2)
    emitters = [Recorder(np.zeros((1, 2)))]
    scheduler = Scheduler(archive, emitters)
    assert scheduler.archive is archive
    assert scheduler.emitters is emitters
    assert scheduler.result_archive is archive
    other = GridArchive(solution_dim=2, dims=[2, 2], ranges=[(-1, 1)] * 2)
    assert Scheduler(archive, emitters, other).result_archive is other


def _call_sequence(scheduler, calls):
    for call in calls:
        if call == "ask":
            scheduler.ask()
        elif call == "ask_dqd":
            scheduler.ask_dqd()
        elif call == "tell":
            scheduler.tell(np.zeros(2), np.zeros((2, 2)))
        elif call == "tell_dqd":
            scheduler.tell_dqd(np.zeros(1), np.zeros((1, 2)), np.zeros((1, 3, 2)))
        elif call == "bad_tell":
            try:
                scheduler.tell(np.zeros(3), np.zeros((3, 2)))
            except ValueError:
                pass


@pytest.mark.parametrize(
    "calls",
    [
        ["ask", "ask"],
        ["ask", "ask_dqd"],
        ["ask_dqd", "ask"],
        ["ask_dqd", "ask_dqd"],
        ["tell"],
        ["ask_dqd", "tell"],
        ["tell_dqd"],
        ["ask", "tell_dqd"],
        ["ask", "bad_tell", "tell"],
        ["ask", "tell", "tell"],
    ],
    ids=lambda c: "-".join(c),
)
def test_state_machine_errors_match_ribs(calls):
    make = lambda: [Recorder(np.zeros((2, 2)))]  # noqa: E731
    ribs_scheduler, scheduler = _pair_schedulers(make)
    assert_same_error(
        lambda: _call_sequence(ribs_scheduler, calls), lambda: _call_sequence(scheduler, calls)
    )


def test_valid_sequences():
    scheduler = Scheduler(grid_pair(solution_dim=2)[1], [Recorder(np.zeros((2, 2)))])
    _call_sequence(scheduler, ["ask", "tell", "ask", "tell", "ask_dqd", "tell_dqd", "ask", "tell"])


@pytest.mark.parametrize(
    "objective,measures,fields",
    [
        (np.zeros(2), np.zeros((3, 2)), {}),
        (np.zeros(4), np.zeros((3, 2)), {}),
        (np.zeros(3), np.zeros((3, 2)), {"extra": np.zeros(2)}),
    ],
    ids=["measures", "objective", "field"],
)
def test_tell_length_errors_match_ribs(objective, measures, fields):
    make = lambda: [Recorder(np.zeros((1, 2))), Recorder(np.zeros((2, 2)))]  # noqa: E731
    ribs_scheduler, scheduler = _pair_schedulers(make)

    def run(sched):
        sched.ask()
        sched.tell(objective, measures, **fields)

    assert_same_error(lambda: run(ribs_scheduler), lambda: run(scheduler))


def test_jacobian_length_error_matches_ribs():
    make = lambda: [Recorder(np.zeros((2, 2)))]  # noqa: E731
    ribs_scheduler, scheduler = _pair_schedulers(make)

    def run(sched):
        sched.ask_dqd()
        sched.tell_dqd(np.zeros(1), np.zeros((1, 2)), np.zeros((2, 3, 2)))

    assert_same_error(lambda: run(ribs_scheduler), lambda: run(scheduler))


@pytest.mark.parametrize("add_mode", ["batch", "single"])
def test_slices_and_add_info_match_ribs(add_mode):
    sols = [
        np.array([[0.1, 0.1], [0.12, 0.11]]),
        np.zeros((0, 2)),
        np.array([[0.9, -0.9], [0.11, 0.1], [-0.5, 0.5]]),
    ]
    emitters = {}

    def make():
        ems = [Recorder(s) for s in sols]
        emitters.setdefault("all", []).append(ems)
        return ems

    ribs_scheduler, scheduler = _pair_schedulers(
        make, add_mode=add_mode, archive_kwargs={"extra_fields": {"extra": ((), np.int64)}}
    )
    objective = np.array([1.0, 2.0, 3.0, 1.5, 0.5])
    for sched in (ribs_scheduler, scheduler):
        solutions = sched.ask()
        np.testing.assert_array_equal(solutions, np.concatenate(sols))
        sched.tell(objective, solutions, extra=np.arange(5))
    ribs_emitters, our_emitters = emitters["all"]
    for theirs, ours in zip(ribs_emitters, our_emitters):
        (t,), (o,) = theirs.told, ours.told
        assert set(o) == set(t)
        for key in ("solution", "objective", "measures", "extra"):
            np.testing.assert_array_equal(o[key], t[key])
        assert set(o["add_info"]) == set(t["add_info"])
        for key in t["add_info"]:
            np.testing.assert_array_equal(o["add_info"][key], t["add_info"][key])
    statuses = np.concatenate([e.told[0]["add_info"]["status"] for e in our_emitters])
    # Solutions 0, 1 and 3 share a cell: batch mode judges all against the empty
    # archive, single mode sees the earlier insertions.
    expected = [2, 2, 2, 2, 2] if add_mode == "batch" else [2, 1, 2, 0, 2]
    np.testing.assert_array_equal(statuses, expected)


def test_result_archive_receives_same_data():
    archive = GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, extra_fields={"extra": ((), np.float64)}
    )
    result = GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, extra_fields={"extra": ((), np.float64)}
    )
    scheduler = Scheduler(archive, [Recorder([[0.5, 0.5], [-0.5, 0.5]])], result)
    solutions = scheduler.ask()
    scheduler.tell([1.0, 2.0], solutions, extra=[7.0, 8.0])
    np.testing.assert_array_equal(result.data("extra"), archive.data("extra"))
    np.testing.assert_array_equal(np.sort(result.data("extra")), [7.0, 8.0])


@pytest.mark.parametrize("result", [False, True])
def test_empty_archive_warning(result):
    archive = GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, learning_rate=0.1, threshold_min=10.0
    )
    result_archive = (
        GridArchive(
            solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, learning_rate=0.1, threshold_min=10.0
        )
        if result
        else None
    )
    scheduler = Scheduler(archive, [Recorder([[0.5, 0.5]])], result_archive)
    scheduler.ask()
    with pytest.warns(UserWarning) as record:
        scheduler.tell([1.0], [[0.5, 0.5]])
    messages = [str(w.message) for w in record]
    assert any(m.startswith("`archive` was empty before adding solutions") for m in messages)
    assert any(m.startswith("`result_archive` was empty") for m in messages) == result


def test_ask_dqd_without_dqd_emitters_is_empty():
    _, archive = grid_pair(solution_dim=2)
    scheduler = Scheduler(archive, [GaussianEmitter(archive, sigma=0.1, x0=np.zeros(2))])
    assert scheduler.ask_dqd().shape == (0, 2)


def test_dqd_loop_slices_jacobian():
    _, archive = grid_pair(solution_dim=2)
    emitters = [Recorder([[0.1, 0.2]]), Recorder([[0.3, 0.4], [0.5, 0.6]])]
    scheduler = Scheduler(archive, emitters)
    solutions = scheduler.ask_dqd()
    assert solutions.shape == (2, 2)
    jacobian = np.arange(12.0).reshape(2, 3, 2)
    scheduler.tell_dqd(np.zeros(2), solutions, jacobian)
    np.testing.assert_array_equal(emitters[0].told[0]["jacobian"], jacobian[:1])
    np.testing.assert_array_equal(emitters[1].told[0]["jacobian"], jacobian[1:])


def test_emitter_base_subclass_with_initial_solutions_of_other_length():
    _, archive = grid_pair(solution_dim=2)
    emitters = [
        GaussianEmitter(archive, sigma=0.1, initial_solutions=np.zeros((3, 2)), batch_size=5),
        GaussianEmitter(archive, sigma=0.1, initial_solutions=np.ones((2, 2)), batch_size=5),
    ]
    scheduler = Scheduler(archive, emitters)
    solutions = scheduler.ask()
    assert solutions.shape == (5, 2)
    scheduler.tell(np.ones(5), solutions * 0.5)
    assert scheduler.ask().shape == (10, 2)
    assert isinstance(emitters[0], EmitterBase)


def _jax_backend_pair(make):
    """Two identical schedulers, one returning NumPy and one JAX arrays."""
    return make("numpy"), make("jax")


@pytest.mark.parametrize("kind", ["gaussian", "es_group", "bandit"])
def test_array_backend_jax_matches_numpy(kind):
    import jax

    from ribsax.emitters import EvolutionStrategyEmitter
    from ribsax.schedulers import BanditScheduler

    def make(backend):
        archive = GridArchive(solution_dim=3, dims=(5, 5), ranges=[(-2, 2)] * 2, seed=1)
        if kind == "gaussian":
            emitters = [GaussianEmitter(archive, sigma=0.3, x0=np.zeros(3), batch_size=6, seed=2)]
            return Scheduler(archive, emitters, array_backend=backend)
        emitters = [
            EvolutionStrategyEmitter(archive, x0=np.zeros(3), sigma0=0.3, batch_size=4, seed=s)
            for s in (3, 4, 5)
        ]
        if kind == "bandit":
            return BanditScheduler(archive, emitters, num_active=2, array_backend=backend)
        return Scheduler(archive, emitters, array_backend=backend)

    host, device = _jax_backend_pair(make)
    assert host.array_backend == "numpy" and device.array_backend == "jax"
    for _ in range(4):
        sols_h, sols_d = host.ask(), device.ask()
        assert isinstance(sols_h, np.ndarray)
        assert isinstance(sols_d, jax.Array)
        np.testing.assert_array_equal(sols_h, np.asarray(sols_d))
        objective = -np.sum(np.square(sols_h), axis=1)
        measures = sols_h[:, :2]
        host.tell(objective, measures)
        # tell takes JAX arrays as well.
        device.tell(jax.numpy.asarray(objective), jax.numpy.asarray(measures))
    np.testing.assert_array_equal(host.archive.data("index"), device.archive.data("index"))


def test_array_backend_jax_ask_dqd_and_errors():
    import jax

    archive = GridArchive(solution_dim=3, dims=(5, 5), ranges=[(-2, 2)] * 2)
    scheduler = Scheduler(
        archive,
        [GaussianEmitter(archive, sigma=0.3, x0=np.zeros(3), batch_size=6)],
        array_backend="jax",
    )
    empty = scheduler.ask_dqd()
    assert isinstance(empty, jax.Array) and empty.shape == (0, 3)
    with pytest.raises(ValueError, match="array_backend must be 'numpy' or 'jax'"):
        Scheduler(
            archive, [GaussianEmitter(archive, sigma=0.3, x0=np.zeros(3))], array_backend="torch"
        )


def test_ask_returns_a_fresh_concatenation_like_pyribs():
    """ask() concatenates like pyribs (result dtype, a new writeable array)."""
    pieces = [np.arange(6.0).reshape(3, 2), np.ones((2, 2), np.float32)]
    emitters = [Recorder(pieces[0]), Recorder(pieces[1])]
    emitters[1].solutions = pieces[1]
    _, archive = grid_pair(solution_dim=2)
    ours = Scheduler(archive, emitters).ask()
    theirs = ribs.schedulers.Scheduler(
        grid_pair(solution_dim=2)[0], [Recorder(pieces[0]), emitters[1]]
    ).ask()
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype == np.float64
    assert ours.flags.writeable and ours.flags.c_contiguous
    assert not np.shares_memory(ours, pieces[0])
    ours[0, 0] = 99.0
    assert pieces[0][0, 0] == 0.0


def test_ask_with_object_solutions_is_a_plain_concatenation():
    archive = GridArchive(solution_dim=(), dims=[4], ranges=[(0, 1)], solution_dtype=object)
    emitters = [Recorder([0.0]), Recorder([0.0])]
    emitters[0].solutions = np.array(["a", "b"], dtype=object)
    emitters[1].solutions = np.array([{"k": 1}], dtype=object)
    solutions = Scheduler(archive, emitters).ask()
    assert solutions.dtype == object
    assert list(solutions) == ["a", "b", {"k": 1}]


@pytest.mark.parametrize("second", [np.zeros((2, 3)), np.zeros(2)])
def test_ask_with_mismatched_emitter_outputs_raises_numpys_error(second):
    """The aligned concatenation keeps NumPy's error for mismatched shapes."""
    first = np.zeros((3, 2))
    emitters = [Recorder([0.0]), Recorder([0.0])]
    emitters[0].solutions, emitters[1].solutions = first, second
    _, archive = grid_pair(solution_dim=2)
    with pytest.raises(ValueError) as ours:
        Scheduler(archive, emitters).ask()
    with pytest.raises(ValueError) as numpy_error:
        np.concatenate([first, second], axis=0)
    assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("add_mode", ["batch", "single"])
def test_unstructured_result_archive_matches_ribs(add_mode):
    """A ProximityArchive as result archive receives the told data, as in pyribs."""

    def make(archives, schedulers):
        kwargs = {
            "solution_dim": 2,
            "measure_dim": 2,
            "k_neighbors": 2,
            "novelty_threshold": 0.3,
            "local_competition": True,
        }
        archive = archives.GridArchive(solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2)
        result = archives.ProximityArchive(**kwargs)
        emitter = Recorder(np.random.default_rng(0).uniform(-1, 1, size=(12, 2)))
        return schedulers.Scheduler(archive, [emitter], result, add_mode=add_mode), result

    import ribsax.archives
    import ribsax.schedulers

    ours, our_result = make(ribsax.archives, ribsax.schedulers)
    theirs, their_result = make(ribs.archives, ribs.schedulers)
    for scheduler in (ours, theirs):
        solutions = scheduler.ask()
        scheduler.tell(solutions[:, 0] + solutions[:, 1], solutions)
    for name in ("objective", "measures", "index"):
        np.testing.assert_array_equal(our_result.data(name), their_result.data(name))
    assert ours.result_archive is our_result


def test_proximity_archive_with_novelty_ranked_es():
    """NS with CMA-ES: a ProximityArchive as the main archive, the "nov" ranker."""
    from ribsax.archives import ProximityArchive
    from ribsax.emitters import EvolutionStrategyEmitter

    archive = ProximityArchive(solution_dim=4, measure_dim=2, k_neighbors=3, novelty_threshold=0.2)
    result = GridArchive(solution_dim=4, dims=[5, 5], ranges=[(-2, 2)] * 2)
    emitters = [
        EvolutionStrategyEmitter(
            archive, x0=np.zeros(4), sigma0=0.5, ranker="nov", batch_size=8, seed=i
        )
        for i in range(2)
    ]
    scheduler = Scheduler(archive, emitters, result)
    for _ in range(5):
        solutions = scheduler.ask()
        scheduler.tell(-np.sum(solutions**2, axis=1), solutions[:, :2])
    assert len(archive) > 1 and not result.empty
    # The archive returns no "value": a ranker that reads it fails as in pyribs.
    imp = EvolutionStrategyEmitter(
        archive, x0=np.zeros(4), sigma0=0.5, ranker="imp", batch_size=8, seed=3
    )
    solutions = imp.ask()
    info = archive.add(solutions, np.zeros(8), solutions[:, :2])
    with pytest.raises(KeyError, match="value"):
        imp.tell(solutions, np.zeros(8), solutions[:, :2], info)
    np.testing.assert_array_equal(np.sort(result.data("objective"))[-1], result.stats.obj_max)


def test_emitters_on_the_result_archive_run_fused():
    """Density Descent: the emitters read the result archive, not the scheduler's
    (elite-less) archive; they still run as one fused group, and the same as
    separately run emitters."""
    from ribsax.archives import DensityArchive
    from ribsax.emitters import EvolutionStrategyEmitter

    def make(fuse):
        archive = DensityArchive(measure_dim=2, buffer_size=50, bandwidth=0.5, seed=0)
        result = GridArchive(solution_dim=4, dims=[5, 5], ranges=[(-2, 2)] * 2)
        emitters = [
            EvolutionStrategyEmitter(
                result, x0=np.zeros(4), sigma0=0.5, ranker="density", batch_size=6, seed=i
            )
            for i in range(2)
        ]
        return Scheduler(archive, emitters, result, fuse=fuse)

    fused, alone = make(True), make(False)
    for _ in range(2):
        solutions = [s.ask() for s in (fused, alone)]
        # The fused scheduler asked through one traced plan.
        assert fused._asked_plan is not None and len(fused.fusion_groups) == 1
        np.testing.assert_allclose(solutions[0], solutions[1], rtol=1e-10)
        for scheduler, sols in zip((fused, alone), solutions):
            scheduler.tell(-np.sum(sols**2, axis=1), sols[:, :2])


@pytest.mark.parametrize("add_mode", ["batch", "single"])
def test_result_add_info_is_the_result_archives(add_mode):
    # CMA-MAE archive (threshold 0.5 after the first insertion) and a plain
    # result archive: their statuses differ on the second tell.
    archive = GridArchive(
        solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2, learning_rate=0.5, threshold_min=0.0
    )
    result = GridArchive(solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2)
    recorder = Recorder([[0.5, 0.5], [-0.5, 0.5]])
    scheduler = Scheduler(archive, [recorder], result, add_mode=add_mode)
    assert scheduler.result_add_info is None
    solutions = scheduler.ask()
    scheduler.tell([1.0, 2.0], solutions)
    np.testing.assert_array_equal(scheduler.result_add_info["status"], [2, 2])
    solutions = scheduler.ask()
    scheduler.tell([0.8, 3.0], solutions)
    # The archive's threshold is 0.5 in the first cell: 0.8 improves it there,
    # while the result archive keeps 1.0 and rejects 0.8.
    np.testing.assert_array_equal(recorder.told[-1]["add_info"]["status"], [1, 1])
    np.testing.assert_array_equal(scheduler.result_add_info["status"], [0, 1])
    # Without a result archive it is the archive's add_info.
    plain = Scheduler(
        GridArchive(solution_dim=2, dims=[4, 4], ranges=[(-1, 1)] * 2),
        [Recorder([[0.5, 0.5]])],
        add_mode=add_mode,
    )
    plain.tell([1.0], plain.ask())
    np.testing.assert_array_equal(plain.result_add_info["status"], [2])


@pytest.mark.parametrize("change", ["none", "direct_ask", "fused_run", "state_set"])
def test_ask_equals_a_fresh_copys_ask_after_changes_between_asks(change):
    """The ask/tell loop of variation emitters makes the next ask's noise right
    after an ask. Whatever happens between two asks, the next batch is the one a
    fresh copy of the scheduler (which made no noise ahead) computes."""
    import pickle

    from ribsax.emitters import IsoLineEmitter
    from ribsax.tasks import sphere

    task = sphere(4)
    archive = GridArchive(solution_dim=4, dims=(5, 5), ranges=task.measure_ranges)
    emitters = [
        GaussianEmitter(archive, sigma=0.3, x0=np.zeros(4), batch_size=3, seed=1 + i)
        for i in range(2)
    ]
    emitters.append(
        IsoLineEmitter(archive, iso_sigma=0.1, line_sigma=0.2, x0=np.zeros(4), batch_size=4, seed=9)
    )
    scheduler = Scheduler(archive, emitters)
    for step in range(6):
        if step == 3:
            if change == "direct_ask":
                emitters[1].ask()  # Advances that emitter's key.
            elif change == "fused_run":
                scheduler.run(task, 2, seed=5)
            elif change == "state_set":
                emitters[0].state = emitters[1].state  # Same key for both.
        expected = pickle.loads(pickle.dumps(scheduler)).ask()
        solutions = scheduler.ask()
        np.testing.assert_array_equal(solutions, expected)
        objective, measures = (np.asarray(a) for a in task.evaluate(solutions, None)[:2])
        scheduler.tell(objective, measures)


def _dqd_jacobian(solutions):
    """Objective -sum(x^2), measures (x0, x1): values and gradients."""
    solutions = np.asarray(solutions)
    objective = -np.sum(solutions**2, axis=1)
    measures = solutions[:, :2]
    grad = np.zeros((len(solutions), 3, solutions.shape[1]))
    grad[:, 0] = -2 * solutions
    grad[:, 1, 0] = 1.0
    grad[:, 2, 1] = 1.0
    return objective, measures, grad


def _dqd_emitters(kind, archive):
    from ribsax.emitters import GradientArborescenceEmitter, GradientOperatorEmitter

    if kind == "og":
        return [
            GradientOperatorEmitter(
                archive, sigma=0.3, sigma_g=0.5, x0=np.zeros(4), batch_size=6, seed=11
            )
        ]
    if kind == "omg":
        return [
            GradientOperatorEmitter(
                archive,
                sigma=0.0,
                sigma_g=2.0,
                x0=np.zeros(4),
                measure_gradients=True,
                normalize_grad=True,
                batch_size=6,
                seed=12,
            )
        ]
    return [
        GradientArborescenceEmitter(
            archive,
            x0=np.full(4, 0.1 * i),
            sigma0=0.5,
            lr=0.5,
            grad_opt="gradient_ascent",
            batch_size=5,
            seed=20 + i,
        )
        for i in range(3)
    ]


@pytest.mark.parametrize("kind", ["og", "omg", "cma_mega"])
def test_dqd_phase_equals_the_emitters_own_ask_dqd_and_tell_dqd(kind):
    """The scheduler's ask_dqd/tell_dqd/ask/tell give what the emitters' own
    ask_dqd, tell_dqd, ask and tell give on a twin archive, called by hand."""

    def archive():
        return GridArchive(solution_dim=4, dims=[8, 8], ranges=[(-2, 2)] * 2)

    archive_a, archive_b = archive(), archive()
    scheduler = Scheduler(archive_a, _dqd_emitters(kind, archive_a))
    by_hand = _dqd_emitters(kind, archive_b)
    for _ in range(6):
        solutions = scheduler.ask_dqd()
        pieces = [e.ask_dqd() for e in by_hand]
        np.testing.assert_allclose(solutions, np.concatenate(pieces), rtol=1e-12)
        objective, measures, jacobian = _dqd_jacobian(solutions)
        scheduler.tell_dqd(objective, measures, jacobian)
        add_info = archive_b.add(solutions, objective, measures)
        start = 0
        for emitter, piece in zip(by_hand, pieces):
            rows = slice(start, start + len(piece))
            emitter.tell_dqd(
                solutions[rows],
                objective[rows],
                measures[rows],
                jacobian[rows],
                {k: v[rows] for k, v in add_info.items()},
            )
            start += len(piece)

        solutions = scheduler.ask()
        pieces = [e.ask() for e in by_hand]
        np.testing.assert_allclose(solutions, np.concatenate(pieces), rtol=1e-12)
        objective, measures, _ = _dqd_jacobian(solutions)
        scheduler.tell(objective, measures)
        add_info = archive_b.add(solutions, objective, measures)
        start = 0
        for emitter, piece in zip(by_hand, pieces):
            rows = slice(start, start + len(piece))
            emitter.tell(
                solutions[rows],
                objective[rows],
                measures[rows],
                {k: v[rows] for k, v in add_info.items()},
            )
            start += len(piece)
    assert archive_a.stats.num_elites == archive_b.stats.num_elites > 0
    np.testing.assert_allclose(archive_a.stats.qd_score, archive_b.stats.qd_score, rtol=1e-12)

    # A Jacobian the emitters reject raises their error through the scheduler.
    solutions = scheduler.ask_dqd()
    objective, measures, jacobian = _dqd_jacobian(solutions)
    jacobian[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="jacobian"):
        scheduler.tell_dqd(objective, measures, jacobian)
