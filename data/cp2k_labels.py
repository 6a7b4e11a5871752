"""CP2K single points for the datasets (generate_cp2k.py): the input of one frame, running it, and its energy,
forces and stress read back as DeePMD labels (eV, eV/A, virial in eV)."""

import os
import re
import subprocess
import time

import numpy as np

# Unit conversions (CODATA values as used by CP2K 2023).
HARTREE_TO_EV = 27.211386
HARTREE_PER_BOHR_TO_EV_PER_A = 51.42208
GPA_PER_EV_PER_A3 = 160.21766

CP2K_DATA = "/usr/share/cp2k"

KINDS = {
    "Si": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"),
    "O": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q6"),
    "H": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q1"),
}
EPS_SCF = 1e-7
EPS_DEFAULT = 1e-10

def cp2k_input(frame, settings, project="frame"):
    """CP2K input text for one ENERGY_FORCE single point with analytic stress."""
    kinds = sorted(set(frame.symbols), key=frame.symbols.index)
    cell = "\n".join(f"      {lab} {v[0]:.12f} {v[1]:.12f} {v[2]:.12f}" for lab, v in zip("ABC", frame.cell))
    coords = "\n".join(f"      {s} {p[0]:.12f} {p[1]:.12f} {p[2]:.12f}" for s, p in zip(frame.symbols, frame.positions))
    kind_text = "\n".join(
        f"    &KIND {k}\n      BASIS_SET {KINDS[k][0]}\n      POTENTIAL {KINDS[k][1]}\n    &END KIND" for k in kinds
    )
    if settings["kpoints"]:
        kp = settings["kpoints"]
        kpoints = (
            f"    &KPOINTS\n      SCHEME MONKHORST-PACK {kp[0]} {kp[1]} {kp[2]}\n"
            "      SYMMETRY F\n      FULL_GRID F\n    &END KPOINTS\n"
        )
    else:
        kpoints = ""
    return f"""&GLOBAL
  PROJECT {project}
  RUN_TYPE ENERGY_FORCE
  PRINT_LEVEL LOW
&END GLOBAL
&FORCE_EVAL
  METHOD Quickstep
  STRESS_TENSOR ANALYTICAL
  &DFT
    BASIS_SET_FILE_NAME {CP2K_DATA}/BASIS_MOLOPT
    POTENTIAL_FILE_NAME {CP2K_DATA}/GTH_POTENTIALS
    &MGRID
      NGRIDS 4
      CUTOFF {settings['cutoff']}
      REL_CUTOFF {settings['rel_cutoff']}
    &END MGRID
    &QS
      EPS_DEFAULT {EPS_DEFAULT:.1e}
    &END QS
{kpoints}    &SCF
      SCF_GUESS ATOMIC
      EPS_SCF {EPS_SCF:.1e}
      MAX_SCF 200
      &DIAGONALIZATION
        ALGORITHM STANDARD
      &END DIAGONALIZATION
      &MIXING
        METHOD BROYDEN_MIXING
        ALPHA 0.4
        NBROYDEN 8
      &END MIXING
    &END SCF
    &XC
      &XC_FUNCTIONAL PBE
      &END XC_FUNCTIONAL
    &END XC
  &END DFT
  &SUBSYS
    &CELL
{cell}
      PERIODIC XYZ
    &END CELL
    &COORD
{coords}
    &END COORD
{kind_text}
  &END SUBSYS
  &PRINT
    &FORCES ON
    &END FORCES
    &STRESS_TENSOR ON
    &END STRESS_TENSOR
  &END PRINT
&END FORCE_EVAL
"""


class ParseError(Exception):
    pass


_FLOAT = r"[-+]?\d+\.\d*(?:[EeDd][-+]?\d+)?"


def parse_cp2k_output(text, natoms):
    """Energy (Hartree), forces (natoms, 3) in Hartree/Bohr and the analytic stress (3, 3) in GPa."""
    if "PROGRAM ENDED AT" not in text:
        raise ParseError("cp2k output is incomplete (no PROGRAM ENDED AT)")
    if "SCF run NOT converged" in text:
        raise ParseError("cp2k scf did not converge")
    m = re.findall(r"ENERGY\| Total FORCE_EVAL \( QS \) energy \[(?:a\.u\.|hartree)\]:\s+(" + _FLOAT + ")", text)
    if len(m) != 1:
        raise ParseError(f"cp2k output has {len(m)} total energy lines, expected 1")
    energy = float(m[0])
    lines = text.splitlines()
    start = [i for i, l in enumerate(lines) if "ATOMIC FORCES in" in l]
    if len(start) != 1:
        raise ParseError(f"cp2k output has {len(start)} ATOMIC FORCES blocks, expected 1")
    forces = []
    for l in lines[start[0] + 1:]:
        parts = l.split()
        if len(parts) == 6 and parts[0].isdigit():
            forces.append([float(x) for x in parts[3:6]])
        elif l.strip().startswith("SUM OF ATOMIC FORCES"):
            break
    if len(forces) != natoms:
        raise ParseError(f"cp2k output has {len(forces)} force rows, expected {natoms}")
    start = [i for i, l in enumerate(lines) if re.search(r"STRESS\|\s+Analytical stress tensor \[GPa\]", l)]
    if len(start) != 1:
        raise ParseError(f"cp2k output has {len(start)} analytical stress tensor blocks, expected 1")
    stress = []
    for l in lines[start[0] + 2:start[0] + 5]:
        parts = l.split()
        if len(parts) != 5 or parts[0] != "STRESS|" or parts[1] not in "xyz":
            raise ParseError(f"unexpected stress tensor line '{l.strip()}'")
        stress.append([float(x) for x in parts[2:5]])
    return energy, np.array(forces), np.array(stress)


def labels_from_cp2k(frame, energy_ha, forces_au, stress_gpa):
    """DeePMD labels: energy (eV), forces (natoms, 3) eV/A, virial (3, 3) eV."""
    volume = abs(np.linalg.det(frame.cell))
    # E[eV] = E[Ha] * 27.211386
    energy = energy_ha * HARTREE_TO_EV
    # F[eV/A] = F[Ha/Bohr] * 51.42208 (CP2K prints F = -dE/dx)
    forces = forces_au * HARTREE_PER_BOHR_TO_EV_PER_A
    # W = V sigma / 160.21766 with sigma pressure-like in GPa; W = -dE/d(eps) (checked by --check-virial)
    virial = volume * stress_gpa / GPA_PER_EV_PER_A3
    return energy, forces, virial


def cp2k_command(input_name, output_name):
    return ["nice", "-n", "15", "cp2k.psmp", "-i", input_name, "-o", output_name]


def run_single_point(folder, frame, settings, force=False):
    """Run (or reuse) one CP2K single point in folder; returns (energy_ha, forces_au, stress_gpa, wall_s, reused).

    A folder whose in.inp equals the requested input and whose out.log parses is reused."""
    os.makedirs(folder, exist_ok=True)
    inp = cp2k_input(frame, settings)
    inp_path = os.path.join(folder, "in.inp")
    out_path = os.path.join(folder, "out.log")
    wall_path = os.path.join(folder, "wall_s.txt")
    if not force and os.path.exists(out_path) and os.path.exists(inp_path):
        with open(inp_path) as f:
            same = f.read() == inp
        if same:
            try:
                with open(out_path) as f:
                    parsed = parse_cp2k_output(f.read(), len(frame.symbols))
                wall = float(open(wall_path).read()) if os.path.exists(wall_path) else float("nan")
                return (*parsed, wall, True)
            except ParseError:
                pass
    with open(inp_path, "w") as f:
        f.write(inp)
    if os.path.exists(out_path):
        os.remove(out_path)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.monotonic()
    proc = subprocess.run(
        cp2k_command("in.inp", "out.log"), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    wall = time.monotonic() - t0
    with open(wall_path, "w") as f:
        f.write(f"{wall:.2f}\n")
    for name in os.listdir(folder):  # wavefunction restart files are large and not needed
        if name.endswith(".wfn") or name.endswith(".kp") or ".wfn.bak" in name or name.endswith(".kp.bak-1"):
            os.remove(os.path.join(folder, name))
    if proc.returncode != 0:
        raise ParseError(f"cp2k exited with {proc.returncode} in {folder}: {proc.stdout.decode()[-500:]}")
    with open(out_path) as f:
        parsed = parse_cp2k_output(f.read(), len(frame.symbols))
    return (*parsed, wall, False)
