"""Checkpointer: atomic, rotating checkpoints of a run with orbax-checkpoint.

Shared by the experiment runner (:class:`ribsax.experiments.Checkpointer`, its
public name) and the RL training entry point (:mod:`ribsax.rl.train`), so it sits
below both. orbax is imported when the first checkpointer is created.
"""

from __future__ import annotations

import io
import pickle
import shutil
import types
import warnings
from pathlib import Path

import numpy as np

__all__ = ["Checkpointer", "UnreadableCheckpointError", "UnreadableCheckpointWarning"]


#: Prefix of the entries that stand for an array without elements.
_EMPTY = "empty__"


class UnreadableCheckpointError(RuntimeError):
    """No checkpoint of a directory can be read (every one fails to restore).

    Attributes:
        directory: The checkpoint directory.
        errors: ``{step: one-line description of its error}``, newest first.
    """

    def __init__(self, message, directory, errors):
        super().__init__(message)
        self.directory = directory
        self.errors = errors


class UnreadableCheckpointWarning(RuntimeWarning):
    """A checkpoint could not be read; an older one was restored instead."""


def _one_line(err) -> str:
    """``Type: first line of the message`` of an exception."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")


class _Pickler(pickle.Pickler):
    """Pickles references to given objects (and to their bound methods) by name."""

    def __init__(self, file, references):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = {id(obj): name for name, obj in references.items()}

    def persistent_id(self, obj):
        if not self._names:
            return None
        name = self._names.get(id(obj))
        if name is not None:
            return ("reference", name, None)
        if isinstance(obj, types.MethodType):
            name = self._names.get(id(obj.__self__))
            if name is not None:
                return ("reference", name, obj.__func__.__name__)
        return None


class _Unpickler(pickle.Unpickler):
    """Resolves the references :class:`_Pickler` stored by name."""

    def __init__(self, file, references):
        super().__init__(file)
        self._references = references

    def persistent_load(self, pid):
        _, name, method = pid
        if name not in self._references:
            raise pickle.UnpicklingError(
                f"the checkpoint refers to {name!r}, which the restoring "
                "Checkpointer was not given (references=...)"
            )
        obj = self._references[name]
        return obj if method is None else getattr(obj, method)


def _dumps(obj, references) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, references).dump(obj)
    return buffer.getvalue()


def _loads(data: bytes, references):
    return _Unpickler(io.BytesIO(data), references).load()


class Checkpointer:
    """Saves and restores the state of a run in ``directory/<iteration>/``.

    A checkpoint holds two items written by an ``orbax.checkpoint.CheckpointManager``:

    * ``state``: a dict of NumPy arrays. Python objects (the scheduler, with its
      archives, emitters, optimizer states and PRNG keys) are pickled into ``uint8``
      arrays under their key, so one orbax item carries both arrays and objects;
    * ``meta``: a JSON dict (iteration, evaluation count, elapsed time, ...).

    Orbax writes each checkpoint into a temporary directory and renames it when it
    is complete, so a process killed while writing leaves the previous checkpoints
    intact (the temporary directory is ignored and cleaned up by the next
    manager); only the last ``keep`` checkpoints are kept. A checkpoint damaged
    later (a truncated or missing file) is skipped, and moved aside, by
    :meth:`restore_latest_readable`. With ``background``,
    :meth:`save` returns once the objects are pickled and orbax has staged the
    arrays; the files are written by a background thread (the next save,
    :meth:`restore`, :attr:`steps` and :meth:`close` wait for it).

    Args:
        directory: Checkpoint directory (created if missing).
        keep: Number of checkpoints kept.
        background: Write in a background thread (orbax's asynchronous
            checkpointing).
        references: Optional ``{name: object}`` of objects the pickled objects
            may refer to but that are not saved: each reference to one of them
            (or to one of its bound methods) is stored by name and resolved, on
            restore, with the object of that name given to the restoring
            checkpointer. A run's task (an emitter that evaluates with
            ``task.evaluate``) is saved this way: brax environments do not pickle,
            and the restored run rebuilds its task from its config anyway.

    Raises:
        ValueError: ``keep`` is below 1.
    """

    def __init__(self, directory, keep=3, background=False, references=None):
        if int(keep) < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self._references = dict(references or {})
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self._directory = Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(
            max_to_keep=int(keep), enable_async_checkpointing=bool(background), create=True
        )
        self._manager = ocp.CheckpointManager(self._directory, options=options)

    @property
    def directory(self) -> Path:
        """Where the checkpoints are."""
        return self._directory

    @property
    def steps(self) -> list:
        """Iterations of the complete checkpoints, oldest first."""
        self._manager.wait_until_finished()
        self._manager.reload()
        return sorted(self._manager.all_steps())

    def save(self, step: int, arrays: dict, objects: dict, meta: dict) -> None:
        """Writes checkpoint ``step``.

        Args:
            step: Iteration number of the checkpoint.
            arrays: ``{name: array}`` stored as arrays.
            objects: ``{name: picklable object}`` stored pickled.
            meta: JSON-serialisable metadata.
        """
        state = {}
        for name, value in arrays.items():
            value = np.asarray(value)
            if value.size:
                state[name] = value
            else:
                # orbax does not write arrays without elements: keep the shape and
                # the dtype (a one-element array of it) instead.
                state[f"{_EMPTY}shape__{name}"] = np.asarray(value.shape, np.int64)
                state[f"{_EMPTY}dtype__{name}"] = np.zeros(1, value.dtype)
        for name, obj in objects.items():
            state[f"pickled__{name}"] = np.frombuffer(_dumps(obj, self._references), dtype=np.uint8)
        args = self._ocp.args.Composite(
            state=self._ocp.args.StandardSave(state), meta=self._ocp.args.JsonSave(dict(meta))
        )
        self._manager.save(int(step), args=args, force=True)

    def restore(self, step=None) -> tuple:
        """Reads a checkpoint.

        Args:
            step: Iteration of the checkpoint (None: the latest complete one).

        Returns:
            ``(arrays, objects, meta)`` as given to :meth:`save`.

        Raises:
            FileNotFoundError: No complete checkpoint in the directory.
        """
        steps = self.steps
        if not steps:
            raise FileNotFoundError(f"no complete checkpoint in {self._directory}")
        step = steps[-1] if step is None else int(step)
        restored = self._manager.restore(
            step,
            args=self._ocp.args.Composite(
                state=self._ocp.args.StandardRestore(), meta=self._ocp.args.JsonRestore()
            ),
        )
        arrays, objects = {}, {}
        state = restored["state"]
        for name, value in state.items():
            if name.startswith("pickled__"):
                objects[name[len("pickled__") :]] = _loads(
                    np.asarray(value, dtype=np.uint8).tobytes(), self._references
                )
            elif name.startswith(f"{_EMPTY}shape__"):
                key = name[len(f"{_EMPTY}shape__") :]
                dtype = np.asarray(state[f"{_EMPTY}dtype__{key}"]).dtype
                arrays[key] = np.empty(tuple(int(n) for n in np.asarray(value)), dtype)
            elif not name.startswith(_EMPTY):
                arrays[name] = np.asarray(value)
        return arrays, objects, dict(restored["meta"])

    @property
    def unreadable_directory(self) -> Path:
        """Where :meth:`restore_latest_readable` moves unreadable checkpoints:
        ``<directory>_unreadable`` next to :attr:`directory` (outside it, so the
        checkpoint manager neither lists nor cleans them up)."""
        return self._directory.with_name(f"{self._directory.name}_unreadable")

    def restore_latest_readable(self, report=None):
        """Reads the newest checkpoint that can be read, setting newer unreadable
        ones aside.

        Checkpoints are tried newest first; one whose restore fails in any way (a
        truncated, missing or corrupted file, an item that does not decode) is
        skipped. When an older one is read, each skipped checkpoint is moved,
        unchanged, to ``<unreadable_directory>/<step>`` (``<step>.1``, ... when
        that name is taken) and an :class:`UnreadableCheckpointWarning` naming its
        step, path and error is issued; the run then continues from the restored
        step and can save the skipped steps again. Nothing is moved when no
        checkpoint can be read.

        Args:
            report: Optional callable that also receives each warning's message
                (e.g. a logger's ``warning``).

        Returns:
            ``(step, arrays, objects, meta)`` of the restored checkpoint (see
            :meth:`restore`), or None when the directory holds no complete
            checkpoint.

        Raises:
            UnreadableCheckpointError: There are checkpoints but none can be read;
                the message names the directory and each step's error.
        """
        steps = self.steps
        errors = {}
        for step in reversed(steps):
            try:
                arrays, objects, meta = self.restore(step)
            except MemoryError:
                raise  # The host's trouble, not the checkpoint's.
            except Exception as err:
                errors[step] = _one_line(err)
                continue
            for bad, error in errors.items():
                moved = self._set_aside(bad)
                message = (
                    f"checkpoint {bad} ({self._directory / str(bad)}) cannot "
                    f"be read ({error}); moved it to {moved} and restored "
                    f"checkpoint {step} instead"
                )
                if report is not None:
                    report(message)
                warnings.warn(message, UnreadableCheckpointWarning, stacklevel=2)
            return step, arrays, objects, meta
        if not steps:
            return None
        details = "; ".join(f"checkpoint {step}: {error}" for step, error in errors.items())
        raise UnreadableCheckpointError(
            f"no checkpoint in {self._directory} can be read ({details})", self._directory, errors
        )

    def _set_aside(self, step) -> Path:
        """Moves checkpoint ``step`` into :attr:`unreadable_directory`; returns its
        new path."""
        self._manager.wait_until_finished()
        target_dir = self.unreadable_directory
        target_dir.mkdir(parents=True, exist_ok=True)
        target, count = target_dir / str(step), 0
        while target.exists():
            count += 1
            target = target_dir / f"{step}.{count}"
        shutil.move(str(self._directory / str(step)), str(target))
        self._manager.reload()
        return target

    def close(self) -> None:
        """Waits for a background write, then releases the manager."""
        self._manager.wait_until_finished()
        self._manager.close()
