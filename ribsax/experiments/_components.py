"""Builds (and checks) the task, archives, emitters and scheduler of a config."""

from __future__ import annotations

import importlib
import inspect
import numbers

import jax
import numpy as np

from ribsax import archives, emitters, schedulers
from ribsax.distributed import DaskEvaluator
from ribsax.experiments._errors import ConfigError
from ribsax.tasks import es_jacobian_fn, with_jacobian, zero_jacobian_fn

__all__ = ["check_components", "build_task", "build_scheduler", "build_evaluator", "TASK_FACTORIES"]

#: Task names accepted by ``task.name`` -> (module, function). ``brax`` takes the
#: environment as ``task.env`` (a name of :data:`ribsax.tasks.brax.TASK_NAMES`).
TASK_FACTORIES = {
    "sphere": ("ribsax.tasks", "sphere"),
    "rastrigin": ("ribsax.tasks", "rastrigin"),
    "rastrigin_projection": ("ribsax.tasks", "rastrigin_projection"),
    "linear_projection": ("ribsax.tasks", "linear_projection"),
    "arm": ("ribsax.tasks", "arm"),
    "brax": ("ribsax.tasks.brax", "create"),
}

# Arguments the runner fills in itself, by section.
_FILLED = {
    "archive": ("solution_dim", "seed", "dtype"),
    "result_archive": ("solution_dim", "seed", "dtype"),
    "emitters": ("archive", "seed", "policy", "evaluate"),
    "scheduler": ("archive", "emitters", "emitter_pool", "result_archive"),
}


def _resolve(module, section, class_name):
    """The class ``module.class_name`` (a public name of ``module``) or a
    ConfigError naming the section."""
    public = getattr(module, "__all__", [])
    if not isinstance(class_name, str) or class_name not in public:
        raise ConfigError(
            f"{section}.class: unknown class {class_name!r}; expected one of "
            f"{', '.join(name for name in public if name[0].isupper())}"
        )
    return getattr(module, class_name)


def _check_kwargs(function, kwargs, section, filled=()):
    """Raises a ConfigError for a key ``function`` does not take, a key the runner
    fills, or a string where the default is a number."""
    params = inspect.signature(function).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    accepted = [
        name
        for name, p in params.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        and name not in filled
        and name != "self"
    ]
    for key, value in kwargs.items():
        if key in filled:
            raise ConfigError(f"{section}.{key}: set by the runner; remove it")
        if key not in params or key == "self":
            raise ConfigError(
                f"{section}.{key}: unknown key for {function.__qualname__}; "
                f"expected one of {', '.join(accepted)}"
            )
        default = params[key].default
        if (
            isinstance(default, numbers.Number)
            and not isinstance(default, bool)
            and isinstance(value, str)
        ):
            raise ConfigError(f"{section}.{key}: expected a number, got {value!r}")


def _split(section_cfg, section, reserved=("class",)):
    """(class name, other kwargs) of a section given as a dict."""
    from omegaconf import OmegaConf

    data = (
        OmegaConf.to_container(section_cfg, resolve=True)
        if OmegaConf.is_config(section_cfg)
        else dict(section_cfg)
    )
    if "class" not in data and "class" in reserved:
        raise ConfigError(f"{section}.class: missing; expected a class name")
    head = {key: data.pop(key) for key in reserved if key in data}
    return head, data


def _task_factory(task_cfg):
    head, kwargs = _split(task_cfg, "task", reserved=("name", "es_jacobian", "zero_jacobian"))
    name = head.get("name")
    if name not in TASK_FACTORIES:
        raise ConfigError(
            f"task.name: unknown task {name!r}; expected one of {', '.join(TASK_FACTORIES)}"
        )
    module_name, function_name = TASK_FACTORIES[name]
    return module_name, function_name, kwargs


def check_components(cfg) -> None:
    """Checks class names and keyword names of every section, without building.

    Raises:
        ConfigError: Unknown task or class, unknown key, or a key the runner fills.
    """
    module_name, function_name, task_kwargs = _task_factory(cfg.task)
    es_kwargs = _es_jacobian_kwargs(cfg.task)
    if es_kwargs is not None:
        _check_kwargs(es_jacobian_fn, es_kwargs, "task.es_jacobian", ("evaluate_fn",))
    if module_name == "ribsax.tasks":
        factory = getattr(importlib.import_module(module_name), function_name)
        _check_kwargs(factory, task_kwargs, "task")
    elif "env" not in task_kwargs:
        raise ConfigError("task.env: missing; expected a brax task name such as walker2d_uni")
    for section in ("archive", "result_archive"):
        if cfg[section] is None:
            continue
        head, kwargs = _split(cfg[section], section)
        cls = _resolve(archives, section, head["class"])
        _check_kwargs(cls.__init__, kwargs, section, _FILLED[section])
    if len(cfg.emitters) == 0:
        raise ConfigError("emitters: expected a non-empty list of emitters")
    for i, emitter_cfg in enumerate(cfg.emitters):
        section = f"emitters.{i}"
        head, kwargs = _split(emitter_cfg, section, reserved=("class", "count"))
        cls = _resolve(emitters, section, head["class"])
        count = head.get("count", 1)
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"{section}.count: expected a positive integer, got {count!r}")
        if kwargs.get("initial_solutions") not in (None, "task"):
            raise ConfigError(
                f"{section}.initial_solutions: expected 'task' (draw them from the task) or null"
            )
        _check_kwargs(cls.__init__, kwargs, section, _FILLED["emitters"])
    if cfg.evaluator is not None:
        _check_evaluator(cfg)
    head, kwargs = _split(cfg.scheduler, "scheduler")
    cls = _resolve(schedulers, "scheduler", head["class"])
    if not hasattr(cls, "ask"):
        raise ConfigError(f"scheduler.class: {head['class']} is not a scheduler")
    _check_kwargs(cls.__init__, kwargs, "scheduler", _FILLED["scheduler"])


def _check_evaluator(cfg):
    """Checks the ``evaluator`` section (a
    :class:`ribsax.distributed.DaskEvaluator`)."""
    head, kwargs = _split(cfg.evaluator, "evaluator", reserved=("function",))
    if "function" not in head:
        raise ConfigError(
            "evaluator.function: missing; expected 'module:attribute' of "
            "a Python evaluation function"
        )
    if cfg.loop.value != "ask_tell":
        raise ConfigError("evaluator: a Python evaluator needs loop=ask_tell")
    constructor = {
        k for k in inspect.signature(DaskEvaluator).parameters if not k.startswith("_")
    } - {"function", "client"}
    known = constructor | (
        set(inspect.signature(DaskEvaluator.from_config).parameters) - {"function", "kwargs"}
    )
    for key in kwargs:
        if key not in known:
            raise ConfigError(
                f"evaluator.{key}: unknown key; expected one of {', '.join(sorted(known))}"
            )


def build_evaluator(cfg):
    """The :class:`ribsax.distributed.DaskEvaluator` of ``cfg.evaluator``."""
    head, kwargs = _split(cfg.evaluator, "evaluator", reserved=("function",))
    return _built("evaluator", DaskEvaluator.from_config, head["function"], **kwargs)


def build_task(cfg):
    """The :class:`ribsax.tasks.Task` of ``cfg.task``; with ``task.es_jacobian``
    (a dict of :func:`ribsax.tasks.es_jacobian_fn` arguments), its Jacobians are
    estimated with OpenAI-ES (DQD emitters on black-box tasks; the samples count as
    evaluations); with ``task.zero_jacobian: true`` they are zeros
    (:func:`ribsax.tasks.zero_jacobian_fn`, for DQD emitters that compute their
    own gradients)."""
    module_name, function_name, kwargs = _task_factory(cfg.task)
    factory = getattr(importlib.import_module(module_name), function_name)
    if module_name != "ribsax.tasks":
        kwargs = dict(kwargs)
        env = kwargs.pop("env")
        if "hidden_layer_sizes" in kwargs:
            kwargs["hidden_layer_sizes"] = tuple(kwargs["hidden_layer_sizes"])
        task = _built("task", factory, env, **kwargs)
    else:
        task = _built("task", factory, **kwargs)
    es_kwargs = _es_jacobian_kwargs(cfg.task)
    zero = cfg.task.get("zero_jacobian", False) if hasattr(cfg.task, "get") else False
    if zero not in (True, False):
        raise ConfigError(f"task.zero_jacobian: expected true or false, got {zero!r}")
    if es_kwargs is not None and zero:
        raise ConfigError("task: es_jacobian and zero_jacobian exclude each other")
    if es_kwargs is not None:
        task = with_jacobian(
            task, _built("task.es_jacobian", es_jacobian_fn, task.evaluate, **es_kwargs)
        )
    elif zero:
        # DQD emitters that compute their own gradients (CMA-MEGA (TD3, ES)).
        task = with_jacobian(task, zero_jacobian_fn(task.evaluate))
    return task


def _es_jacobian_kwargs(task_cfg):
    """The ``task.es_jacobian`` section as a dict (None when absent)."""
    section = task_cfg.get("es_jacobian") if hasattr(task_cfg, "get") else None
    if section is None:
        return None
    if not hasattr(section, "items"):
        raise ConfigError(
            "task.es_jacobian: expected a mapping of es_jacobian_fn "
            f"arguments (sample_sigma, sample_batch_size, mirror, "
            f"rank_norm), got {section!r}"
        )
    return {str(k): v for k, v in section.items()}


def jacobian_samples(cfg) -> int:
    """Evaluations the task's Jacobian makes per DQD solution besides the solution
    itself: ``task.es_jacobian.sample_batch_size`` (100 by default) with an ES
    Jacobian, 0 otherwise."""
    es_kwargs = _es_jacobian_kwargs(cfg.task)
    if es_kwargs is None:
        return 0
    return int(es_kwargs.get("sample_batch_size", 100))


def _built(section, factory, *args, **kwargs):
    """``factory(*args, **kwargs)`` with construction errors naming the section."""
    try:
        return factory(*args, **kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{section}: {err}") from err


def _archive(section_cfg, section, task, seed, dtype, default_dims=None):
    head, kwargs = _split(section_cfg, section)
    cls = getattr(archives, head["class"])
    accepted = inspect.signature(cls).parameters
    # Structured archives take the task's ranges; unstructured ones (proximity,
    # density) its number of measures.
    if "ranges" in accepted:
        kwargs.setdefault("ranges", [list(r) for r in task.measure_ranges])
    if "measure_dim" in accepted:
        kwargs.setdefault("measure_dim", task.measure_dim)
    if "qd_score_offset" in accepted:
        kwargs.setdefault("qd_score_offset", task.qd_score_offset)
    if default_dims is not None and "dims" in accepted:
        kwargs.setdefault("dims", default_dims)
    common = {
        name: value
        for name, value in (("solution_dim", task.solution_dim), ("seed", seed), ("dtype", dtype))
        if name in accepted
    }
    return _built(section, cls, **common, **kwargs)


def build_scheduler(cfg, task):
    """Archive(s), emitters and scheduler of ``cfg`` for ``task``.

    Archives take their measure ranges and QD-score offset from the task unless
    the config sets them; the result archive takes the archive's ``dims`` unless it
    sets its own. Emitters start from ``x0 = 0`` unless the config sets ``x0`` or
    ``initial_solutions: task`` (``batch_size`` solutions from the task's
    :meth:`~ribsax.tasks.Task.initial_solutions`; ``x0: task``: one of them);
    emitters that take a
    ``policy`` get the task's policy network, those that take ``evaluate`` the
    task. Each emitter gets one child of
    ``numpy.random.SeedSequence(seed)``, as in :mod:`ribsax.examples.sphere`.

    Returns:
        The scheduler.

    Raises:
        ConfigError: A constructor rejects a value (the message names the section).
    """
    seed = int(cfg.seed)
    dtype = np.dtype(cfg.dtype.value if hasattr(cfg.dtype, "value") else cfg.dtype)
    archive = _archive(cfg.archive, "archive", task, seed, dtype)
    result_archive = None
    if cfg.result_archive is not None:
        dims = cfg.archive.get("dims")
        result_archive = _archive(
            cfg.result_archive, "result_archive", task, seed, dtype, default_dims=dims
        )
    specs = [
        _split(e, f"emitters.{i}", reserved=("class", "count")) for i, e in enumerate(cfg.emitters)
    ]
    seeds = iter(np.random.SeedSequence(seed).spawn(sum(head.get("count", 1) for head, _ in specs)))
    emitter_list = []
    for i, (head, kwargs) in enumerate(specs):
        cls = getattr(emitters, head["class"])
        accepted = inspect.signature(cls.__init__).parameters
        for _ in range(head.get("count", 1)):
            emitter_seed = next(seeds)
            kwargs_i = dict(kwargs)
            if kwargs_i.get("initial_solutions") == "task":
                key = jax.random.key(emitter_seed.generate_state(1)[0])
                kwargs_i["initial_solutions"] = np.asarray(
                    task.initial_solutions(kwargs_i.get("batch_size", 64), key, dtype=dtype)
                )
            elif kwargs_i.get("x0") == "task":
                key = jax.random.key(emitter_seed.generate_state(1)[0])
                kwargs_i["x0"] = np.asarray(task.initial_solutions(1, key, dtype=dtype))[0]
            elif "x0" in kwargs_i:
                kwargs_i["x0"] = np.broadcast_to(
                    np.asarray(kwargs_i["x0"], dtype=dtype), (task.solution_dim,)
                )
            elif "x0" in accepted:
                kwargs_i["x0"] = np.zeros(task.solution_dim, dtype=dtype)
            # Emitters that learn from the task itself: its policy network
            # (policy-gradient emitters, ME-ES's observation normalisation; tasks
            # without one leave the emitter's default) or its evaluation (ES
            # emitters).
            if "policy" in accepted and getattr(task, "policy", None) is not None:
                kwargs_i["policy"] = task.policy
            if "evaluate" in accepted:
                kwargs_i["evaluate"] = task
            emitter_list.append(
                _built(f"emitters.{i}", cls, archive, seed=emitter_seed, **kwargs_i)
            )
    head, kwargs = _split(cfg.scheduler, "scheduler")
    cls = getattr(schedulers, head["class"])
    return _built("scheduler", cls, archive, emitter_list, result_archive, **kwargs)
