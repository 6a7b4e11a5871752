"""deepkf from Python: evaluate deepkf model files as DeePMD-kit's DeepPot does, use them as an ASE
calculator, and score frames by an ensemble's deviation or by the Kalman filter's uncertainty.

    from deepkf import DeepPot                 # or: from deepkf.infer import DeepPot
    from deepkf.calculator import DP           # the ASE calculator (also deepkf.calculator.DeepKF)

Training, testing and compressing stay on the command line (``deepkf train``, ``deepkf test``, ...);
call it with subprocess from a script (docs/python.md).
"""
import os

# Idle OpenMP threads spin for 1,000 iterations before sleeping, as the deepkf command sets it
# (src/core/OpenMpWait.hpp): libgomp reads this when _core loads it, unless it is loaded already.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")

from ._core import ConfigError, DataError, DeepkfError, ModelError
from .infer import DeepPot, KalmanSigma, calc_model_devi, calc_model_devi_f, calc_model_devi_v

__all__ = [
    "DeepPot",
    "KalmanSigma",
    "calc_model_devi",
    "calc_model_devi_f",
    "calc_model_devi_v",
    "DeepkfError",
    "DataError",
    "ConfigError",
    "ModelError",
]
