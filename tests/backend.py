"""What the tests may expect of the JAX backend they run on (CI: the CPU)."""

import jax
import numpy as np
import pytest

ON_CPU = jax.default_backend() == "cpu"

#: Fused (vmapped) CMA-ES equals the same strategies run one by one bit for bit on the
#: CPU, where LAPACK decomposes a stack of covariances as it does one. On GPUs a stack
#: of matrices of size <= 32 goes to another solver (batched Jacobi) than a single
#: one, and where eigenvalues repeat (CMA-ES's first covariances: rank-one and
#: rank-mu updates of the identity) the two return different, equally valid bases of
#: the repeated eigenspace, so the fused strategies sample other solutions from the
#: same distribution (seen on an H100 with jax 0.11.2; see benchmarks/RESULTS.md).
CPU_EXACT_FUSED_CMA = pytest.mark.xfail(
    not ON_CPU, strict=False, reason="batched and single eigh choose different eigenbases on GPUs"
)


def assert_same_statistic(actual, desired, err_msg=""):
    """Bit-identical on the CPU (NaN equals NaN). Elsewhere within one unit in the
    last place: XLA:GPU divides float32 with a faster instruction than the
    correctly rounded one NumPy uses (1 ulp apart, seen on an H200 with jax
    0.11.2)."""
    if ON_CPU:
        np.testing.assert_array_equal(actual, desired, err_msg=err_msg)
        return
    eps = np.finfo(np.result_type(np.asarray(actual).dtype, np.float32)).eps
    np.testing.assert_allclose(actual, desired, rtol=eps, atol=0, equal_nan=True, err_msg=err_msg)
