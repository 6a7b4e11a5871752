"""Model files as potentials, with DeePMD-kit's ``deepmd.infer`` interface (DeepPot.eval and the model
deviation functions), computed by deepkf's C++ core."""
import os

import numpy as np

from . import _core


def _model_path(path):
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"model file {path!r} does not exist")
    return path


def _frames(coords, cells, atom_types, natoms_hint=None):
    """(coord [nf, na*3], box [nf, 9] or None, types [na] or [nf, na]) as float64/int arrays, checked."""
    types = np.asarray(atom_types)
    if types.dtype.kind not in "iu":
        if types.size and not np.all(np.equal(np.mod(types, 1), 0)):
            raise ValueError(f"atom_types must be integers (type indices); got {types.dtype} values")
        types = types.astype(np.int64)
    if types.ndim not in (1, 2) or types.shape[-1] < 1:
        raise ValueError(f"atom_types has shape {types.shape}; give one type index per atom, shape (natoms,)")
    natoms = types.shape[-1]
    coord = np.asarray(coords, dtype=np.float64)
    if coord.size == 0 or coord.size % (3 * natoms) != 0:
        raise ValueError(
            f"coords has {coord.size} values ({coord.shape}); {natoms} atoms need 3 * {natoms} per frame, "
            "shape (nframes, natoms * 3) or (nframes, natoms, 3)")
    coord = np.ascontiguousarray(coord.reshape(-1, 3 * natoms))
    nframes = coord.shape[0]
    box = None
    if cells is not None:
        box = np.asarray(cells, dtype=np.float64)
        if box.size != 9 * nframes:
            raise ValueError(
                f"cells has {box.size} values ({box.shape}); {nframes} frames need 9 each, shape (nframes, 9) "
                "or (nframes, 3, 3); give None for a non-periodic system")
        box = np.ascontiguousarray(box.reshape(nframes, 9))
    if types.ndim == 2 and types.shape[0] != nframes:
        raise ValueError(f"atom_types has {types.shape[0]} rows for {nframes} frames")
    return coord, box, types


class DeepPot:
    """A deepkf model file (``deepkf train``'s model.pt, or a compressed one) as DeePMD-kit's DeepPot.

    DeepPot(model_file, device=None): device "cpu", "cuda" or "cuda:N"; None takes a GPU when this build of
    deepkf and the machine have one, else the CPU. DeePMD-kit's other keyword arguments (auto_batch_size,
    neighbor_list, ...) are accepted and have no effect here."""

    def __init__(self, model_file, device=None, **kwargs):
        if device is None:
            device = "cuda" if _core.cuda_available() else "cpu"
        self._pot = _core.Potential(_model_path(model_file), device)
        self.model_file = os.fspath(model_file)

    # DeePMD-kit's accessors
    def get_type_map(self):
        return list(self._pot.type_map)

    def get_ntypes(self):
        return len(self._pot.type_map)

    def get_rcut(self):
        return float(self._pot.rcut)

    def get_sel(self):
        return list(self._pot.sel)

    def get_dim_fparam(self):
        return 0

    def get_dim_aparam(self):
        return 0

    def get_sel_type(self):
        return []

    def get_numb_dos(self):
        return 0

    def has_efield(self):
        return False

    def get_model_def_script(self):
        return {"type_map": self.get_type_map(), "rcut": self.get_rcut(), "sel": self.get_sel()}

    @property
    def precision(self):
        """"float64" or "float32"."""
        return self._pot.precision

    @property
    def compressed(self):
        return bool(self._pot.compressed)

    def eval(self, coords, cells, atom_types, atomic=False, fparam=None, aparam=None, mixed_type=False,
             **kwargs):
        """Energies, forces and virials of frames, as DeePMD-kit's DeepPot.eval.

        coords: (nframes, natoms * 3) or (nframes, natoms, 3), Angstrom; cells: (nframes, 9) or (nframes, 3, 3)
        with the cell vectors as rows, or None (not periodic); atom_types: (natoms,) indices into
        get_type_map(), or (nframes, natoms) with mixed_type. Returns energy (nframes, 1) eV, force
        (nframes, natoms, 3) eV/A, virial (nframes, 9) eV; with atomic=True also atom_energy (nframes, natoms, 1)
        and atom_virial (nframes, natoms, 9), which sum to energy and virial."""
        if fparam is not None or aparam is not None:
            raise ValueError("this model takes no frame or atomic parameters (fparam/aparam); pass None")
        coord, box, types = _frames(coords, cells, atom_types)
        if types.ndim == 1:
            return self._pot.evaluate(coord, box, types.astype(np.int32), bool(atomic))
        # One type row per frame: frames with the same row are evaluated together.
        nframes = coord.shape[0]
        results = None
        rows, inverse = np.unique(types, axis=0, return_inverse=True)
        for k, row in enumerate(rows):
            idx = np.nonzero(inverse.reshape(-1) == k)[0]
            part = self._pot.evaluate(np.ascontiguousarray(coord[idx]),
                                      None if box is None else np.ascontiguousarray(box[idx]),
                                      row.astype(np.int32), bool(atomic))
            if results is None:
                results = [np.empty((nframes,) + p.shape[1:]) for p in part]
            for out, p in zip(results, part):
                out[idx] = p
        return tuple(results)


class KalmanSigma:
    """The Kalman filter's predicted uncertainty of a checkpoint's model (docs/uncertainty.md), as
    ``deepkf uncertainty -c CKPT`` computes it: per frame sigma_e (eV/atom) and sigma_f_max/mean/rms (eV/A)
    over force_atoms atoms drawn from seed (0: all atoms), calibrated when the checkpoint holds a calibration
    (``calibrated``), else sqrt(h^T P h) in the filter's units."""

    def __init__(self, checkpoint):
        path = os.fspath(checkpoint)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"checkpoint {path!r} does not exist")
        self._sigma = _core.KalmanSigma(path)

    @property
    def calibrated(self):
        return bool(self._sigma.calibrated)

    def get_type_map(self):
        return list(self._sigma.type_map)

    def eval(self, coords, cells, atom_types, force_atoms=8, seed=1):
        coord, box, types = _frames(coords, cells, atom_types)
        if types.ndim != 1:
            raise ValueError("KalmanSigma.eval takes one row of atom types for all frames")
        return self._sigma.evaluate(coord, box, types.astype(np.int32), int(force_atoms), int(seed))


def _relative(level):
    return -1.0 if level is None else float(level)


def _frame(values, f):
    """Frame f of the labels `values` as a contiguous float64 array, or None without labels."""
    return None if values is None else np.ascontiguousarray(np.asarray(values, dtype=np.float64)[f])


def calc_model_devi_f(fs, real_f=None, relative=None, atomic=False):
    """Force deviation of an ensemble: fs (nmodels, nframes, natoms, 3) -> max, min, mean over atoms
    (each (nframes,)), and with atomic=True the per-atom values (nframes, natoms). DeePMD-kit's definition:
    sqrt(mean over models of |F_k - <F>|^2) per atom, over |<F>| + relative when relative is given."""
    fs = np.asarray(fs, dtype=np.float64)
    if fs.ndim != 4 or fs.shape[-1] != 3:
        raise ValueError(f"fs has shape {fs.shape}; give (nmodels, nframes, natoms, 3)")
    devi = np.array([_core.force_deviation(np.ascontiguousarray(fs[:, f]), _relative(relative), _frame(real_f, f))
                     for f in range(fs.shape[1])])
    out = (devi.max(axis=1), devi.min(axis=1), devi.mean(axis=1))
    return out + (devi,) if atomic else out


def calc_model_devi_v(vs, real_v=None, relative=None, natoms=1):
    """Virial deviation of an ensemble: vs (nmodels, nframes, 9) -> max, min and root mean square over the
    9 components (each (nframes,), eV/atom with natoms)."""
    vs = np.asarray(vs, dtype=np.float64)
    if vs.ndim != 3 or vs.shape[-1] != 9:
        raise ValueError(f"vs has shape {vs.shape}; give (nmodels, nframes, 9)")
    rows = np.array([
        _core.deviation_row(np.zeros(1), _core.virial_deviation(np.ascontiguousarray(vs[:, f]), float(natoms),
                                                                _relative(relative), _frame(real_v, f)))[:3]
        for f in range(vs.shape[1])])
    return rows[:, 0], rows[:, 1], rows[:, 2]


def calc_model_devi(coord, box, atype, models, fname=None, frequency=1, mixed_type=False, fparam=None,
                    aparam=None, real_data=None, atomic=False, relative=None, relative_v=None):
    """DeePMD-kit's calc_model_devi: the model deviation of frames under an ensemble (a list of DeepPot).
    Returns an array (nframes, 8): step, max/min/avg virial deviation, max/min/avg force deviation, and the
    energy deviation per atom, the columns of model_devi.out (with atomic=True, per-atom force deviations
    follow). With fname, also written there in model_devi.out's format."""
    if len(models) < 2:
        raise ValueError(f"calc_model_devi needs an ensemble of at least two models, got {len(models)}")
    outputs = [m.eval(coord, box, atype, mixed_type=mixed_type, fparam=fparam, aparam=aparam) for m in models]
    natoms = outputs[0][1].shape[1]
    energies = np.array([o[0][:, 0] for o in outputs]) / natoms  # (nmodels, nframes)
    forces = np.array([o[1] for o in outputs])
    virials = np.array([o[2] for o in outputs])
    real_f = real_v = real_e = None
    if real_data is not None:
        real_f = np.asarray(real_data["force"], dtype=np.float64).reshape(forces.shape[1:])
        if real_data.get("virial") is not None:
            real_v = np.asarray(real_data["virial"], dtype=np.float64).reshape(virials.shape[1:])
        if real_data.get("energy") is not None:
            real_e = np.asarray(real_data["energy"], dtype=np.float64).reshape(-1) / natoms
    f_max, f_min, f_avg, atom_devi = calc_model_devi_f(forces, real_f, relative, atomic=True)
    v_max, v_min, v_avg = calc_model_devi_v(virials, real_v, relative_v, natoms)
    centre = energies.mean(axis=0) if real_e is None else real_e
    devi_e = np.sqrt(np.mean((energies - centre) ** 2, axis=0))
    steps = np.arange(forces.shape[1]) * frequency
    table = np.column_stack([steps, v_max, v_min, v_avg, f_max, f_min, f_avg, devi_e])
    if atomic:
        table = np.concatenate([table, atom_devi], axis=1)
    if fname:
        header = "%10s%19s%19s%19s%19s%19s%19s%19s" % ("step", "max_devi_v", "min_devi_v", "avg_devi_v",
                                                       "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e")
        fmt = ["%12d"] + ["%19.6e"] * (table.shape[1] - 1)
        np.savetxt(fname, table, fmt=fmt, header=header)
    return table
