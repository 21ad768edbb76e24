"""Super-sparse machines (paper 004): passes (:mod:`.passes`) and the driver (:mod:`.driver`).

The numba kernels the passes call live in :mod:`streamlearn.solvers.prototypes`.
"""

from streamlearn.solvers.supersparse.driver import (
    SuperSparseConfig,
    SuperSparseFit,
    fit,
    online_pass,
    online_step_size,
    start_online,
)

__all__ = ["SuperSparseConfig", "SuperSparseFit", "fit", "online_pass", "online_step_size",
           "start_online"]
