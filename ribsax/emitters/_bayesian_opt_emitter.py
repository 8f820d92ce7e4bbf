"""BayesianOptimizationEmitter: BOP-Elites (Kent 2024)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import jax.scipy.stats
import numpy as np

from ribsax._utils import (
    check_batch_shape,
    check_finite,
    default_float_dtype,
    validate_batch,
)
from ribsax.archives import GridArchive
from ribsax.emitters._emitter_base import EmitterBase, validate_add_info
from ribsax.emitters._gaussian_process import fit_gp, predict

__all__ = ["BayesianOptimizationEmitter", "ejie_values"]


def _normal_cdf_pdf(x, loc, scale):
    """CDF and PDF of ``N(loc, scale)`` at ``x``; NaN where ``scale <= 0`` (as
    ``scipy.stats.norm`` returns for an invalid scale)."""
    valid = scale > 0
    safe = jnp.where(valid, scale, 1.0)
    z = (x - loc) / safe
    cdf = jax.scipy.stats.norm.cdf(z)
    pdf = jax.scipy.stats.norm.pdf(z) / safe
    return jnp.where(valid, cdf, jnp.nan), jnp.where(valid, pdf, jnp.nan)


def expected_improvements(obj_mean, obj_std, cell_objective):
    """Expected improvement of each sample over each cell's objective.

    Uses pyribs 0.12's formula ``(μ - f) Φ((μ - f)/σ) + σ pdf_{N(f, σ)}(μ)``; the
    second term is the normal *density* times σ, i.e. ``φ((μ - f)/σ)``, not the
    textbook ``σ φ((μ - f)/σ)`` (so it can be negative when σ > 1). ribsax keeps it
    so that its EJIE equals pyribs'.

    Args:
        obj_mean: ``(n,)`` predicted objective means.
        obj_std: ``(n,)`` predicted objective standard deviations.
        cell_objective: ``(cells,)`` objective of each cell's elite (``min_obj``
            for empty cells).

    Returns:
        ``(n, cells)`` expected improvements.
    """
    mean = obj_mean[:, None]
    std = obj_std[:, None]
    cdf, pdf = _normal_cdf_pdf(mean, cell_objective[None, :], std)
    return (mean - cell_objective) * cdf + std * pdf


def cell_probabilities(meas_mean, meas_std, boundaries, cutoff):
    """Probability that each sample lands in each grid cell, from the measure GPs.

    The probability of a cell is the product over measures of the normal mass
    between the cell's boundaries. Probabilities below ``cutoff`` become 0, and each
    row with a positive sum is normalised to sum to 1.

    Args:
        meas_mean: ``(n, measure_dim)`` predicted measure means.
        meas_std: ``(n, measure_dim)`` predicted measure standard deviations.
        boundaries: Tuple of the archive's cell boundaries per measure.
        cutoff: Scalar probability cutoff.

    Returns:
        ``(n, cells)`` probabilities, cells in the archive's (row-major) order.
    """
    n, measure_dim = meas_mean.shape
    dims = tuple(len(b) - 1 for b in boundaries)
    probs = jnp.ones((n, *dims), dtype=meas_mean.dtype)
    for j, bounds in enumerate(boundaries):
        cdf, _ = _normal_cdf_pdf(bounds[None, :], meas_mean[:, j, None], meas_std[:, j, None])
        shape = [n] + [1] * measure_dim
        shape[j + 1] = dims[j]
        probs = probs * jnp.diff(cdf, axis=1).reshape(shape)
    probs = probs.reshape(n, -1)
    probs = jnp.where(probs < cutoff, 0.0, probs)
    total = jnp.sum(probs, axis=1, keepdims=True)
    return probs / jnp.where(total == 0, 1.0, total)


def _entropy(probs):
    """Shannon entropy (nats) of each row, normalised to sum 1 first (as
    ``scipy.stats.entropy``)."""
    total = jnp.sum(probs, axis=1, keepdims=True)
    p = probs / jnp.where(total == 0, 1.0, total)
    return jnp.sum(jnp.where(p > 0, -p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), axis=1)


@partial(jax.jit, static_argnames=("use_entropy",))
def ejie_values(gp, samples, cell_objective, boundaries, cutoff, entropy_norm, use_entropy):
    """Expected joint improvement of elites (EJIE) of each sample in each cell.

    ``EJIE[i, c] = EI[i, c] · P[i, c]``, with :func:`expected_improvements` from the
    objective GP and :func:`cell_probabilities` from the measure GPs; with
    ``use_entropy`` (``entropy_ejie=True``), each row is scaled by ``1 + H_i /
    entropy_norm`` where ``H_i`` is the entropy of the sample's cell probabilities
    (0 when they are all close to 0) and ``entropy_norm`` the entropy of the
    uniform distribution over the cells.

    Args:
        gp: :class:`~ribsax.emitters._gaussian_process.GPState` with the objective
            as target 0 and the measures after it.
        samples: ``(n, solution_dim)`` samples.
        cell_objective: ``(cells,)`` current elite objective per cell.
        boundaries: Tuple of cell boundaries per measure.
        cutoff: Cell-probability cutoff.
        entropy_norm: Scalar entropy normaliser (ignored without ``use_entropy``).
        use_entropy: Static bool.

    Returns:
        ``(ejie_by_cell, cell_probs)``, both ``(n, cells)``.
    """
    mean, std = predict(gp, samples)
    ei = expected_improvements(mean[:, 0], std[:, 0], cell_objective)
    probs = cell_probabilities(mean[:, 1:], std[:, 1:], boundaries, cutoff)
    if use_entropy:
        all_zero = jnp.all(jnp.abs(probs) <= 1e-8, axis=1)  # np.isclose(p, 0)
        entropies = jnp.where(all_zero, 0.0, _entropy(probs))[:, None]
        return ei * probs * (1 + entropies / entropy_norm), probs
    return ei * probs, probs


def _uniform_entropy(cells) -> float:
    return float(np.log(cells))


_PYMOO = {}


def _load_pymoo() -> dict:
    """pymoo's pieces used by :meth:`BayesianOptimizationEmitter.ask` (imported on
    first use, so that pymoo stays optional).

    Raises:
        ImportError: pymoo is not installed (pyribs' message).
    """
    if not _PYMOO:
        try:
            from pymoo.optimize import minimize
            from pymoo.problems.functional import FunctionalProblem
            from pymoo.termination.default import DefaultSingleObjectiveTermination

            pattern_search = _seeded_pattern_search()
        except ImportError as e:
            raise ImportError(
                "pymoo must be installed -- please run `pip install pymoo` or `conda install pymoo`"
            ) from e
        _PYMOO.update(
            PatternSearch=pattern_search,
            minimize=minimize,
            FunctionalProblem=FunctionalProblem,
            DefaultSingleObjectiveTermination=(DefaultSingleObjectiveTermination),
        )
    return _PYMOO


def _seeded_pattern_search():
    """pymoo's ``PatternSearch`` whose exploration order is drawn from the search's
    seeded generator.

    pymoo 0.6.2's ``exploration_move`` permutes the variables with a fresh,
    unseeded generator on every call (``PatternSearch`` does not pass its
    ``random_state``), so pyribs' proposals differ between runs with the same seed.
    This subclass passes ``self.random_state`` (seeded by ``minimize(seed=...)``);
    everything else, termination included, is pymoo's.
    """
    from pymoo.algorithms.soo.nonconvex import pattern
    from pymoo.core.population import Population
    from pymoo.core.replacement import is_better

    class SeededPatternSearch(pattern.PatternSearch):
        """Hooke-Jeeves pattern search with a reproducible exploration order."""

        def _explore(self, around):
            return pattern.exploration_move(
                self.problem,
                around,
                self._sign,
                self._delta,
                self._rho,
                random_state=self.random_state,
            )

        def _next(self):
            if not is_better(self._explr, self._center):
                # Failed exploration: shrink the step and explore around the centre.
                self.n_not_improved += 1
                self._rho = self.init_rho**self.n_not_improved
                self._explr = yield from self._explore(self._center)
            else:
                # Successful exploration: move the centre there, jump further along
                # the same direction, and explore around the jump.
                self._direction = self._explr.X - self._center.X
                self._center = self._explr
                trial = yield pattern.pattern_move(
                    self.problem, self._center, self._direction, self.step_size
                )
                self._trial = trial
                self._sign = pattern.calc_sign(self._direction)
                self._explr = yield from self._explore(self._trial)
            self.pop = Population.create(self._center, self._explr)

    return SeededPatternSearch


class BayesianOptimizationEmitter(EmitterBase):
    """Emits the solutions with the highest expected joint improvement of elites.

    This is the emitter of BOP-Elites (`Kent 2024
    <https://ieeexplore.ieee.org/abstract/document/10472301>`_). A Gaussian process
    models the objective and every measure (one output each, one shared Matérn
    kernel) and is refit on all solutions evaluated so far at every :meth:`tell`.
    :meth:`ask` first returns the initial solutions (``initial_solutions``, or
    ``num_initial_samples`` scrambled Sobol points in the bounds), then maximises
    the *expected joint improvement of elites* (EJIE): the expected improvement over
    each cell's elite (``min_obj`` for empty cells; pyribs' formula, kept, see
    :func:`expected_improvements`) weighted by the predicted probability of landing
    in the cell, summed over cells; with ``entropy_ejie``
    this is boosted by the entropy of the cell probabilities (Kent 2023, Sec. 4.1).

    The maximisation follows pyribs 0.12: :attr:`num_sobol_samples` Sobol points
    are scored, the best ``search_nrestarts`` of them start a pattern search each
    (pymoo's ``PatternSearch`` with its default termination, seeded with
    ``seed``), results with positive EJIE are kept (if none is positive, the
    over-specification count used by :attr:`cell_prob_cutoff` grows and the search
    repeats with new Sobol points until at least ``batch_size`` are found), and the
    ``batch_size`` best are returned. A result whose EJIE comes mostly (> 50 %) from
    a cell it is unlikely (< 50 %) to reach counts as a mis-specification.

    With an ``upscale_schedule``, :meth:`tell` returns the next resolution of the
    schedule (one that is higher along every measure) once the archive has found no
    new cell for more than :attr:`upscale_trigger_threshold` evaluated solutions;
    :class:`~ribsax.schedulers.BayesianOptimizationScheduler` then retessellates
    the archive and calls :meth:`post_upscale_updates`.

    ribsax implementation: the Gaussian process
    (:mod:`ribsax.emitters._gaussian_process`) and the EJIE (:func:`ejie_values`)
    are jitted JAX functions. The Gaussian process matches scikit-learn's
    ``GaussianProcessRegressor(kernel=Matern(), normalize_y=True)``; its length
    scale is fit with the same SciPy L-BFGS-B, on a JAX likelihood and gradient, so
    the EJIE of a sample equals pyribs' up to rounding. The Sobol points come from
    ``scipy.stats.qmc.Sobol`` seeded with ``seed``, as in pyribs. The pattern
    search is pymoo's, as in pyribs, with one deliberate difference: pymoo 0.6.2
    orders each exploration move with an unseeded generator, which makes pyribs'
    proposals vary between runs with the same seed; ribsax draws that order from
    the search's seeded generator, so the same seed and data give the same
    proposals. The Gaussian process and the EJIE run in float64 when JAX's x64
    mode is on and in float32 otherwise; the proposals themselves are float64, as
    in pyribs (Sobol and pymoo work in float64). This emitter has no pure kernels:
    schedulers run it through their Python path (``Scheduler.run(...,
    fused=False)``; the fused loop raises a ValueError naming it).

    .. note:: This emitter needs `pymoo <https://pymoo.org>`_ (the ``bo`` extra:
       ``pip install 'ribsax[bo]'``).

    Args:
        archive: The archive; only :class:`~ribsax.archives.GridArchive` is
            supported.
        bounds: Bounds of the solution space, a sequence of ``(lower, upper)``
            pairs. Either these or ``lower_bounds``/``upper_bounds`` are required
            (Sobol sampling needs finite bounds).
        lower_bounds: Array of lower bounds (alternative to ``bounds``).
        upper_bounds: Array of upper bounds.
        search_nrestarts: Number of pattern searches per round of :meth:`ask`.
        entropy_ejie: Whether to boost EJIE with the entropy of the cell
            probabilities.
        upscale_schedule: None (no upscaling) or a ``(k, measure_dim)`` array of
            resolutions, non-decreasing along axis 0, whose first row is
            ``archive.dims``.
        min_obj: Lowest possible objective; the value of empty cells in the
            expected improvement.
        num_initial_samples: Number of Sobol solutions returned by the first
            :meth:`ask`.
        initial_solutions: ``(n, solution_dim)`` solutions returned by the first
            :meth:`ask` instead (exactly one of the two must be given).
        batch_size: Number of solutions per :meth:`ask` (at most
            ``search_nrestarts``; 1 is the most sample-efficient).
        seed: Seed of the Sobol sequence and of the pattern searches: None, an
            int, or (ribsax extension) a :class:`numpy.random.SeedSequence`, which
            is turned into an int with ``generate_state(1)``.

    Raises:
        ImportError: pymoo is not installed.
        ValueError: No bounds, non-finite bounds, neither or both of
            ``num_initial_samples`` and ``initial_solutions``, ``initial_solutions``
            of the wrong shape, or an invalid ``upscale_schedule``.
        NotImplementedError: The archive is not a GridArchive, or an upscale
            schedule is given for an archive whose learning rate is not 1.
    """

    def __init__(
        self,
        archive,
        *,
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        search_nrestarts=5,
        entropy_ejie=False,
        upscale_schedule=None,
        min_obj=0,
        num_initial_samples=None,
        initial_solutions=None,
        batch_size=1,
        seed=None,
    ):
        self._pymoo()  # pymoo is required (pyribs' ImportError otherwise).

        if bounds is None and lower_bounds is None and upper_bounds is None:
            raise ValueError(
                "Bounds must be specified for BayesianOptimizationEmitter, either "
                "with the bounds parameter or with lower_bounds and upper_bounds."
            )
        EmitterBase.__init__(
            self,
            archive,
            solution_dim=archive.solution_dim,
            bounds=bounds,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
        )
        check_finite(self.lower_bounds, "lower_bounds")
        check_finite(self.upper_bounds, "upper_bounds")

        if not isinstance(archive, GridArchive):
            raise NotImplementedError(
                f"archive type {archive.__class__.__name__} not implemented for"
                " BayesianOptimizationEmitter. Expected GridArchive."
            )
        if upscale_schedule is not None and not np.isclose(archive.learning_rate, 1):
            raise NotImplementedError(
                "Archive upscaling is currently incompatible with archive "
                "learning rate. Since you have specified an upscale schedule "
                f"{upscale_schedule}, the learning rate of the input archive "
                f"must be 1 (currently {archive.learning_rate})."
            )

        if isinstance(seed, np.random.SeedSequence):
            # Sobol and pymoo take ints; a SeedSequence gives one deterministically.
            seed = int(seed.generate_state(1)[0])
        self._seed = seed
        # scipy.stats is imported here, not with ribsax (it is slow to import).
        from scipy.stats.qmc import Sobol

        self._sobol = Sobol(d=self.solution_dim, scramble=True, seed=seed)
        self._gp = None
        self._gp_dtype = default_float_dtype()

        if num_initial_samples is None and initial_solutions is None:
            raise ValueError("Either num_initial_samples or initial_solutions must be provided.")
        if num_initial_samples is not None and initial_solutions is not None:
            raise ValueError("num_initial_samples and initial_solutions cannot both be provided.")
        if initial_solutions is not None:
            self._initial_solutions = np.asarray(
                initial_solutions, dtype=archive.dtypes["solution"]
            )
        else:
            self._initial_solutions = self._sample_n_rescale(num_initial_samples)
        check_batch_shape(
            self._initial_solutions,
            "initial_solutions",
            archive.solution_dim,
            "archive.solution_dim",
        )

        self._dataset = {
            "solution": np.empty((0, self.solution_dim), dtype=self.dtype),
            "objective": np.empty((0, 1)),
            "measures": np.empty((0, self.measure_dim)),
        }
        self._search_nrestarts = search_nrestarts

        if upscale_schedule is None:
            self._upscale_schedule = None
        else:
            self._upscale_schedule = np.asarray(upscale_schedule)
            self._check_upscale_schedule(self._upscale_schedule)

        self._batch_size = batch_size
        self._misspec = 0
        self._overspec = 0
        self._prev_numcells = len(self.archive)
        self._numitrs_noprogress = 0
        self._entropy_norm = _uniform_entropy(self.archive.cells) if entropy_ejie else None
        self._min_obj = min_obj

    @staticmethod
    def _pymoo():
        return _load_pymoo()

    # ------------------------------------------------------------ properties
    @property
    def batch_size(self):
        """Number of solutions returned by :meth:`ask` once the initial solutions
        are out."""
        return self._batch_size

    @property
    def cell_prob_cutoff(self):
        """Cell probabilities below this value count as 0 in the EJIE.

        ``0.5 (2 / cells) ^ sqrt(10 solution_dim / (misspec - 2 overspec +
        num_evals + 1e-6))`` (Kent 2024, Sec. IV-D), rounded to 4 decimals so that a
        sample passes or fails the cutoff consistently despite rounding noise in its
        probabilities.

        Every round of :meth:`ask` that finds no positive EJIE increments the
        over-specification count; once ``misspec - 2 overspec + num_evals + 1e-6``
        is no longer positive the formula has no real value. pyribs 0.12 then fails
        with a TypeError from ``round`` of a complex number; ribsax raises a
        RuntimeError that says what happened (deliberate difference).

        Raises:
            RuntimeError: The formula's denominator is not positive.
        """
        denominator = self._misspec - 2 * self._overspec + self.num_evals + 1e-6
        if denominator <= 0:
            raise RuntimeError(
                "The cell probability cutoff is undefined: the EJIE search found no "
                f"positive value in {self._overspec} rounds (over-specification "
                f"count), which exceeds half of the {self.num_evals} evaluations "
                f"plus {self._misspec} mis-specifications. The Gaussian process "
                "predicts no improvement anywhere; more initial samples, or an "
                "archive with more cells, usually avoid this."
            )
        return round(
            0.5 * (2 / self.archive.cells) ** ((10 * self.solution_dim) / denominator) ** 0.5,
            4,
        )

    @property
    def num_evals(self):
        """Number of evaluated solutions received by :meth:`tell` so far."""
        return self._dataset["solution"].shape[0]

    @property
    def measure_dim(self):
        """Number of measures of the archive."""
        return self.archive.measure_dim

    @property
    def num_sobol_samples(self):
        """Number of Sobol points scored to pick the pattern-search starts:
        ``m · solution_dim² · measure_dim`` clipped to ``[10⁴, 10⁵]``, with ``m =
        10`` for one-dimensional solutions and 1 otherwise."""
        m = 10 if self.solution_dim < 2 else 1
        return np.clip(m * (self.solution_dim**2) * np.prod(self.measure_dim), 10000, 100000)

    @property
    def dtype(self):
        """Dtype of the solutions."""
        return self.archive.dtypes["solution"]

    @property
    def upscale_schedule(self):
        """The upscale schedule (a 2D array), or None."""
        return self._upscale_schedule

    @property
    def upscale_trigger_threshold(self):
        """``floor(sqrt(archive.cells))``: the number of evaluated solutions
        without a new cell after which an upscale is requested."""
        return np.floor(np.sqrt(self.archive.cells))

    @property
    def min_obj(self):
        """The objective assumed for empty cells."""
        return self._min_obj

    @property
    def initial_solutions(self):
        """The solutions returned by the first :meth:`ask`."""
        return self._initial_solutions

    @EmitterBase.archive.setter
    def archive(self, new_archive):
        """Replaces the archive (used when upscaling)."""
        self._archive = new_archive

    def post_upscale_updates(self):
        """Adapts to a retessellated archive: recomputes the entropy normaliser for
        the new number of cells (with ``entropy_ejie``) and restarts the count of
        solutions without a new cell."""
        if self._entropy_norm is not None:
            self._entropy_norm = _uniform_entropy(self.archive.cells)
        self._numitrs_noprogress = 0

    # ------------------------------------------------------------ helpers
    def _check_upscale_schedule(self, upscale_schedule):
        """Raises ValueError unless the schedule is 2D with ``measure_dim``
        columns, non-decreasing along axis 0, and starts at ``archive.dims``."""
        if upscale_schedule.ndim != 2:
            raise ValueError("upscale_schedule must have 2 dimensions.")
        if upscale_schedule.shape[1] != self.measure_dim:
            raise ValueError(
                f"Expected upscale_schedule of shape (any,{self.measure_dim}), "
                f"actually got {upscale_schedule.shape}."
            )
        if not np.all(np.diff(upscale_schedule, axis=0) >= 0):
            raise ValueError(
                "The resolutions corresponding to each measure must be non-decreasing along axis 0."
            )
        if not np.all(self.archive.dims == upscale_schedule[0]):
            raise ValueError(
                "Expected the first resolution within upscale_schedule to be "
                f"{self.archive.dims} (the resolution of this emitter's "
                f"archive), actually got {upscale_schedule[0]}."
            )

    def _sample_n_rescale(self, num_samples):
        """Next ``num_samples`` Sobol points, scaled to the bounds."""
        unit = self._sobol.random(n=num_samples)
        return self.lower_bounds + unit * (self.upper_bounds - self.lower_bounds)

    def _update_no_coverage_progress(self):
        """Counts evaluated solutions since the archive last found a new cell."""
        if len(self.archive) == self._prev_numcells:
            self._numitrs_noprogress += self.batch_size
        else:
            self._numitrs_noprogress = 0
            self._prev_numcells = len(self.archive)

    def _cell_objective(self):
        """``(cells,)`` elite objective per cell, ``min_obj`` where empty."""
        values = np.full((self.archive.cells,), self.min_obj)
        index, objective = self.archive.data(["index", "objective"], return_type="tuple")
        values[np.asarray(index)] = objective
        return values

    def _acquisition_context(self):
        """Device arrays of the archive that the EJIE reads (fixed during an ask):
        the cell objectives and the cell boundaries."""
        dtype = self._gp_dtype
        return (
            jnp.asarray(self._cell_objective(), dtype),
            tuple(jnp.asarray(b, dtype) for b in self.archive.boundaries),
        )

    def _ejie(self, samples, context):
        """:func:`ejie_values` of ``samples`` as NumPy arrays (``context`` from
        :meth:`_acquisition_context`)."""
        samples = np.asarray(samples, dtype=self._gp_dtype)
        use_entropy = self._entropy_norm is not None
        ejie, probs = ejie_values(
            self._gp,
            samples.reshape(-1, self.solution_dim),
            *context,
            float(self.cell_prob_cutoff),
            float(self._entropy_norm) if use_entropy else 1.0,
            use_entropy,
        )
        return np.asarray(ejie), np.asarray(probs)

    # ------------------------------------------------------------ ask / tell
    def ask(self):
        """Returns the initial solutions first, then the solutions with the highest
        EJIE found by the pattern searches (see the class docstring).

        Returns:
            ``(batch_size, solution_dim)`` array in descending EJIE order (the
            initial solutions, clipped to the bounds, before any :meth:`tell`).

        Raises:
            RuntimeError: The searches keep finding no positive EJIE until
                :attr:`cell_prob_cutoff` is undefined.
        """
        if self.num_evals == 0:
            return np.clip(self.initial_solutions, self.lower_bounds, self.upper_bounds)

        context = self._acquisition_context()
        problem = self._pymoo()["FunctionalProblem"](
            n_var=self.solution_dim,
            objs=lambda x: -np.sum(self._ejie(x, context)[0], axis=1),
            xl=self.lower_bounds,
            xu=self.upper_bounds,
        )
        termination = self._pymoo()["DefaultSingleObjectiveTermination"]()

        found, found_ejie, found_probs = [], [], []
        while len(found) < self.batch_size:
            samples = self._sample_n_rescale(self.num_sobol_samples)
            start_ejie, _ = self._ejie(samples, context)
            starts = samples[np.argsort(np.sum(start_ejie, axis=1))[-self._search_nrestarts :]]

            any_positive = False
            for x0 in starts:
                result = self._pymoo()["minimize"](
                    problem=problem,
                    algorithm=self._pymoo()["PatternSearch"](x0=x0),
                    termination=termination,
                    copy_algorithm=False,
                    seed=self._seed,
                )
                if -result.F > 0:
                    ejie, probs = self._ejie(result.X, context)
                    found.append(result.X)
                    found_ejie.append(ejie.squeeze())
                    found_probs.append(probs.squeeze())
                    any_positive = True
            if not any_positive:
                self._overspec += 1

        solutions = np.array(found)
        ejie_by_cell = np.array(found_ejie)
        probs = np.array(found_probs)
        total = np.sum(ejie_by_cell, axis=1)
        rows = np.arange(probs.shape[0])
        best_cell = np.argmax(probs, axis=1)
        best_prob = probs[rows, best_cell]
        attribution = ejie_by_cell[rows, best_cell] / total
        order = np.argsort(total)[::-1][: self.batch_size]

        # Mis-specification: most of the EJIE comes from a cell the solution is
        # unlikely to reach.
        for prob, share in zip(best_prob[order], attribution[order]):
            if prob < 0.5 < share:
                self._misspec += 1
        return solutions[order]

    def tell(self, solution, objective, measures, add_info, **fields):
        """Refits the Gaussian process on all data so far and may request an upscale.

        Args:
            solution: ``(n, solution_dim)`` solutions from :meth:`ask`.
            objective: ``(n,)`` objectives.
            measures: ``(n, measure_dim)`` measures.
            add_info: The archive's ``add`` output for these solutions.
            fields: Extra per-solution fields.

        Returns:
            The next resolution of :attr:`upscale_schedule` (a ``(measure_dim,)``
            array) when an upscale is due, else None.

        Raises:
            ValueError: Invalid data or add_info.
        """
        data = validate_batch(
            self.archive,
            {"solution": solution, "objective": objective, "measures": measures, **fields},
        )
        validate_add_info(add_info, data["solution"].shape[0])

        self._dataset["solution"] = np.vstack((self._dataset["solution"], data["solution"]))
        self._dataset["objective"] = np.vstack(
            (self._dataset["objective"], data["objective"].reshape(-1, 1))
        )
        self._dataset["measures"] = np.vstack((self._dataset["measures"], data["measures"]))
        self._gp = fit_gp(
            self._dataset["solution"],
            np.hstack((self._dataset["objective"], self._dataset["measures"])),
            self._gp_dtype,
        )

        self._update_no_coverage_progress()
        if self.upscale_schedule is not None:
            higher = np.all(self.upscale_schedule > self.archive.dims, axis=1)
            if np.any(higher) and self._numitrs_noprogress > self.upscale_trigger_threshold:
                return self.upscale_schedule[higher][0]
        return None
