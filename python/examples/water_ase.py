"""The tutorial of docs/python.md: relax a water box with ASE's BFGS, then run NVT molecular dynamics with
ASE's Langevin thermostat, all forces from a deepkf model file.

    python3 water_ase.py MODEL.pt [--steps N]

The box is the first frame of data/water_cp2k.h5 (8 molecules in 6.2 A) repeated 2 x 2 x 2: 192 atoms."""
import argparse
import os
import time

import h5py
import numpy as np
from ase import Atoms, units
from ase.io import write
from ase.md.langevin import Langevin
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution, Stationary
from ase.optimize import BFGS

from deepkf.calculator import DeepKF

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model", help="a deepkf model file (model.pt)")
parser.add_argument("--steps", type=int, default=2000, help="MD steps of 0.5 fs (2000: 1 ps)")
parser.add_argument("--out", default="water_md.xyz", help="trajectory, extended XYZ, every 20 steps")
args = parser.parse_args()

# The starting box, read from the project's CP2K water data (deepmd/hdf5 layout).
with h5py.File(os.path.join(here, "..", "..", "data", "water_cp2k.h5"), "r") as f:
    system = f["H2O_24"]
    elements = [name.decode() if isinstance(name, bytes) else str(name) for name in system["type_map.raw"][:]]
    symbols = [elements[t] for t in system["type.raw"][:]]
    coord = system["set.000/coord.npy"][0].reshape(-1, 3)
    cell = system["set.000/box.npy"][0].reshape(3, 3)
atoms = Atoms(symbols, positions=coord, cell=cell, pbc=True).repeat((2, 2, 2))
atoms.calc = DeepKF(args.model)
print(f"{len(atoms)} atoms, E = {atoms.get_potential_energy():.4f} eV, "
      f"max |F| = {np.abs(atoms.get_forces()).max():.3f} eV/A")

# 1. Relax the positions (cell fixed) until no force component exceeds 0.05 eV/A.
BFGS(atoms, logfile="-").run(fmax=0.05, steps=200)
print(f"relaxed: E = {atoms.get_potential_energy():.4f} eV")

# 2. NVT at 300 K: Langevin dynamics, 0.5 fs steps, friction 0.01 / fs.
MaxwellBoltzmannDistribution(atoms, temperature_K=300, rng=np.random.default_rng(1))
Stationary(atoms)
md = Langevin(atoms, 0.5 * units.fs, temperature_K=300, friction=0.01 / units.fs, rng=np.random.default_rng(2))
if os.path.exists(args.out):
    os.remove(args.out)
md.attach(lambda: write(args.out, atoms, append=True), interval=20)
md.attach(lambda: print(f"step {md.nsteps:5d}  t {md.nsteps * 0.5 / 1000:.3f} ps  "
                        f"T {atoms.get_temperature():6.1f} K  E_pot {atoms.get_potential_energy():.4f} eV"),
          interval=max(1, args.steps // 10))
start = time.perf_counter()
md.run(args.steps)
seconds = time.perf_counter() - start
print(f"{args.steps} steps in {seconds:.1f} s ({args.steps * len(atoms) / seconds:.0f} atom-steps/s); "
      f"trajectory {args.out}")
