"""Tests for the checkpointer shared by the experiment runner and ribsax.rl."""
import numpy as np

from ribsax.experiments import Checkpointer


def test_arrays_objects_and_meta_round_trip_including_empty_arrays(tmp_path):
    checkpointer = Checkpointer(tmp_path / "checkpoints", keep=2)
    arrays = {"metrics": np.arange(12.0).reshape(3, 4),
              "history": np.empty((0, 5)),
              "index": np.empty((0,), np.int32),
              "wide": np.empty((2, 0), np.float32)}
    checkpointer.save(3, arrays=arrays, objects={"thing": {"a": [1, 2]}},
                      meta={"iteration": 3})
    restored, objects, meta = checkpointer.restore()
    checkpointer.close()
    assert set(restored) == set(arrays)
    for name, value in arrays.items():
        assert restored[name].shape == value.shape, name
        assert restored[name].dtype == value.dtype, name
        np.testing.assert_array_equal(restored[name], value)
    assert objects == {"thing": {"a": [1, 2]}}
    assert meta == {"iteration": 3}
