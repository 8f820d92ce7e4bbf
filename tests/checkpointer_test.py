"""Tests for the checkpointer shared by the experiment runner and ribsax.rl."""

import os

import numpy as np
import pytest

from ribsax.experiments import Checkpointer, UnreadableCheckpointError, UnreadableCheckpointWarning


def test_arrays_objects_and_meta_round_trip_including_empty_arrays(tmp_path):
    checkpointer = Checkpointer(tmp_path / "checkpoints", keep=2)
    arrays = {
        "metrics": np.arange(12.0).reshape(3, 4),
        "history": np.empty((0, 5)),
        "index": np.empty((0,), np.int32),
        "wide": np.empty((2, 0), np.float32),
    }
    checkpointer.save(3, arrays=arrays, objects={"thing": {"a": [1, 2]}}, meta={"iteration": 3})
    restored, objects, meta = checkpointer.restore()
    checkpointer.close()
    assert set(restored) == set(arrays)
    for name, value in arrays.items():
        assert restored[name].shape == value.shape, name
        assert restored[name].dtype == value.dtype, name
        np.testing.assert_array_equal(restored[name], value)
    assert objects == {"thing": {"a": [1, 2]}}
    assert meta == {"iteration": 3}


def truncate_checkpoint(step_dir):
    """Halves the largest data file of the checkpoint in ``step_dir`` (the one
    holding the pickled objects), as a disk fault would."""
    files = [
        path
        for path in (step_dir / "state").rglob("*")
        if path.is_file() and path.parent.name == "d"
    ]
    largest = max(files, key=lambda path: path.stat().st_size)
    os.truncate(largest, largest.stat().st_size // 2)


def _delete_data_files(step_dir):
    for path in (step_dir / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.unlink()


def _garble_meta(step_dir):
    (step_dir / "meta" / "metadata").write_text("{not json")


def _save_three(directory):
    """Checkpoints 1, 2 and 3, each with an object too large to be inlined."""
    checkpointer = Checkpointer(directory, keep=5)
    for step in (1, 2, 3):
        checkpointer.save(
            step,
            arrays={"x": np.full(4, step)},
            objects={"blob": np.random.default_rng(step).bytes(20000)},
            meta={"step": step},
        )
    return checkpointer


@pytest.mark.parametrize("corrupt", [truncate_checkpoint, _delete_data_files, _garble_meta])
def test_restore_latest_readable_sets_an_unreadable_checkpoint_aside(tmp_path, corrupt):
    directory = tmp_path / "checkpoints"
    checkpointer = _save_three(directory)
    corrupt(directory / "3")
    reports = []
    with pytest.warns(
        UnreadableCheckpointWarning,
        match=r"checkpoint 3 \(.*checkpoints/3\) cannot be read \(\w+"
        r".*restored checkpoint 2 instead",
    ) as caught:
        step, arrays, objects, meta = checkpointer.restore_latest_readable(report=reports.append)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert reports == [str(caught[0].message)]
    assert step == 2 and meta == {"step": 2}
    np.testing.assert_array_equal(arrays["x"], np.full(4, 2))
    assert objects["blob"] == np.random.default_rng(2).bytes(20000)
    # Moved, unchanged, out of the manager's directory: step 3 can be saved again.
    assert checkpointer.steps == [1, 2]
    assert (tmp_path / "checkpoints_unreadable" / "3" / "meta").is_dir()
    checkpointer.save(3, arrays={"x": np.zeros(4)}, objects={}, meta={"step": 33})
    assert checkpointer.steps == [1, 2, 3]
    assert checkpointer.restore_latest_readable()[3] == {"step": 33}
    checkpointer.close()


def test_a_second_unreadable_checkpoint_of_a_step_gets_another_name(tmp_path):
    directory = tmp_path / "checkpoints"
    checkpointer = _save_three(directory)
    for _ in range(2):
        truncate_checkpoint(directory / "3")
        with pytest.warns(UnreadableCheckpointWarning):
            assert checkpointer.restore_latest_readable()[0] == 2
        checkpointer.save(
            3,
            arrays={"x": np.zeros(4)},
            objects={"blob": np.random.default_rng(3).bytes(20000)},
            meta={},
        )
    checkpointer.close()
    assert sorted(path.name for path in (tmp_path / "checkpoints_unreadable").iterdir()) == [
        "3",
        "3.1",
    ]


def test_no_readable_checkpoint_raises_and_moves_nothing(tmp_path):
    directory = tmp_path / "checkpoints"
    checkpointer = _save_three(directory)
    for step in (1, 2, 3):
        truncate_checkpoint(directory / str(step))
    with pytest.raises(
        UnreadableCheckpointError, match=f"no checkpoint in {directory} can be read"
    ) as info:
        checkpointer.restore_latest_readable()
    assert list(info.value.errors) == [3, 2, 1]
    assert info.value.directory == directory
    assert checkpointer.steps == [1, 2, 3]
    assert not (tmp_path / "checkpoints_unreadable").exists()
    checkpointer.close()


def test_restore_latest_readable_without_checkpoints_gives_none(tmp_path):
    checkpointer = Checkpointer(tmp_path / "checkpoints")
    assert checkpointer.restore_latest_readable() is None
    checkpointer.close()


class _Unpicklable:
    """Stands for a run's task: it refuses to be pickled."""

    def __init__(self, scale):
        self.scale = scale

    def evaluate(self, x):
        return self.scale * x

    def __reduce__(self):
        raise TypeError("cannot pickle this task")


def test_references_are_saved_by_name_and_resolved_on_restore(tmp_path):
    task = _Unpicklable(2.0)
    objects = {"emitter": {"evaluate": task.evaluate, "task": task, "sigma": 0.5}}
    with pytest.raises(TypeError, match="cannot pickle"):
        Checkpointer(tmp_path / "plain").save(1, {}, objects, {})
    saver = Checkpointer(tmp_path / "ref", references={"task": task})
    saver.save(1, {}, objects, {})
    saver.close()
    rebuilt = _Unpicklable(3.0)
    _, restored, _ = Checkpointer(tmp_path / "ref", references={"task": rebuilt}).restore()
    emitter = restored["emitter"]
    assert emitter["task"] is rebuilt and emitter["sigma"] == 0.5
    assert emitter["evaluate"](1.0) == 3.0  # the rebuilt task's bound method
    with pytest.raises(Exception, match="refers to 'task'"):
        Checkpointer(tmp_path / "ref").restore()
