"""An ASE calculator for deepkf model files: energy, free energy, forces, stress and virial, with
DeePMD-kit's ``deepmd.calculator.DP`` interface (``from deepkf.calculator import DP`` replaces
``from deepmd.calculator import DP``)."""
import numpy as np
from ase.calculators.calculator import Calculator, PropertyNotImplementedError, all_changes
from ase.stress import full_3x3_to_voigt_6_stress

from .infer import DeepPot


class DeepKF(Calculator):
    """DeepKF(model, label="DeepKF", type_dict=None, device=None, **kwargs)

    model: a model file path (or a deepkf.DeepPot). type_dict maps chemical symbols to the model's type
    indices; by default the model's type map does. Periodicity: an Atoms object with any periodic direction
    is evaluated in its full cell (as DeePMD-kit's calculator does; give vacuum a cell wide enough), one
    with none is a free molecule or cluster. Units: eV, Angstrom; stress in eV/A^3 (ASE's sign: positive
    under tension), virial in eV."""

    name = "DeepKF"
    implemented_properties = ["energy", "free_energy", "forces", "virial", "stress", "energies"]

    def __init__(self, model, label="DeepKF", type_dict=None, device=None, neighbor_list=None, **kwargs):
        Calculator.__init__(self, label=label, **kwargs)
        self.dp = model if isinstance(model, DeepPot) else DeepPot(model, device=device)
        self.type_dict = dict(type_dict) if type_dict else {s: i for i, s in enumerate(self.dp.get_type_map())}

    def _types(self, atoms):
        symbols = atoms.get_chemical_symbols()
        missing = sorted({s for s in symbols if s not in self.type_dict})
        if missing:
            raise ValueError(
                f"element(s) {', '.join(missing)} of these atoms are not in the model's type map "
                f"({', '.join(self.type_dict)}); the model {self.dp.model_file} cannot evaluate them")
        return np.array([self.type_dict[s] for s in symbols], dtype=np.int32)

    def calculate(self, atoms=None, properties=("energy", "forces", "virial"), system_changes=all_changes):
        Calculator.calculate(self, atoms, properties, system_changes)
        atoms = self.atoms
        periodic = bool(np.any(atoms.get_pbc()))
        if "stress" in properties and not periodic:
            raise PropertyNotImplementedError("stress needs a periodic cell; these atoms have pbc False")
        coord = atoms.get_positions().reshape(1, -1)
        cell = atoms.get_cell().array.reshape(1, 9) if periodic else None
        atomic = "energies" in properties
        out = self.dp.eval(coord, cell, self._types(atoms), atomic=atomic)
        energy = float(out[0][0, 0])
        self.results["energy"] = energy
        self.results["free_energy"] = energy
        self.results["forces"] = out[1][0].copy()
        virial = out[2][0].reshape(3, 3)
        self.results["virial"] = virial.copy()
        if atomic:
            self.results["energies"] = out[3][0, :, 0].copy()
        if periodic:
            # sigma = (1/V) dE/d(strain) = -W / V, symmetrised
            stress = -0.5 * (virial + virial.T) / atoms.get_volume()
            self.results["stress"] = full_3x3_to_voigt_6_stress(stress)


DP = DeepKF
