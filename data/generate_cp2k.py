#!/usr/bin/python3
"""Generate small DFT-labelled datasets with CP2K and store them in the deepmd/hdf5 layout.

Materials and systems (atom order is the order of type.raw):
  si_cp2k.h5     Si8    diamond silicon, conventional cubic cell, Monkhorst-Pack 4x4x4
                 Si16   2x1x1 supercell of Si8, Monkhorst-Pack 2x4x4 (same k-point density)
                 Si15   Si16 with one vacancy, Monkhorst-Pack 2x4x4
  water_cp2k.h5  H2O_24 8 water molecules in a ~6.2 A cubic box, gamma point

Every frame is a random symmetric strain of the reference cell (silicon) or a fresh random packing of rigid
molecules (water), followed by random thermal displacements. Frame geometries depend only on --seed, the system
name and the frame index, so runs are reproducible and resumable: each frame is computed in its own folder
under --workdir and skipped when its CP2K output is already there and parses.

Labels (DeePMD npy units): energy eV, force eV/A (F = -dE/dx), virial eV with
    W = -dE/d(eps)  for the cell h -> h (I + eps)  (rows of h are the cell vectors),
which CP2K's printed, pressure-like stress sigma (GPa, positive when compressed) gives as
    W = V sigma / 160.21766.
--check-virial pins that sign with finite strains of one Si8 frame.

Run with /usr/bin/python3 (Debian's numpy and h5py).
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np

# Unit conversions (CODATA values as used by CP2K 2023).
HARTREE_TO_EV = 27.211386
HARTREE_PER_BOHR_TO_EV_PER_A = 51.42208
GPA_PER_EV_PER_A3 = 160.21766

CP2K_DATA = "/usr/share/cp2k"
SI_LATTICE_A = 5.47  # PBE equilibrium lattice constant of diamond Si (A)
WATER_BOX_A = 6.2  # 8 H2O in 6.2^3 A^3 = 1.00 g/cm^3
OH_BOND_A = 0.9572
HOH_ANGLE_DEG = 104.52

KINDS = {
    "Si": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q4"),
    "O": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q6"),
    "H": ("DZVP-MOLOPT-SR-GTH", "GTH-PBE-q1"),
}

# name -> settings. frames: (full, quick).
SYSTEMS = {
    "Si8": dict(material="si", frames=(60, 2), kpoints=(4, 4, 4), cutoff=300, rel_cutoff=40),
    "H2O_24": dict(material="water", frames=(20, 1), kpoints=None, cutoff=600, rel_cutoff=60),
    "Si16": dict(material="si", frames=(12, 1), kpoints=(2, 4, 4), cutoff=300, rel_cutoff=40),
    "Si15": dict(material="si", frames=(10, 1), kpoints=(2, 4, 4), cutoff=300, rel_cutoff=40),
}
MATERIALS = {
    "si": dict(file="si_cp2k.h5", type_map=["Si"]),
    "water": dict(file="water_cp2k.h5", type_map=["O", "H"]),
}
EPS_SCF = 1e-7
EPS_DEFAULT = 1e-10


class Frame:
    """One structure: cell rows (3, 3) in A, symbols (natoms,), positions (natoms, 3) in A."""

    def __init__(self, cell, symbols, positions):
        self.cell = np.asarray(cell, dtype=np.float64)
        self.symbols = list(symbols)
        self.positions = np.asarray(positions, dtype=np.float64)


# ----------------------------------------------------------------------------------------------- structures


def diamond_si8(a=SI_LATTICE_A):
    """Conventional 8-atom diamond cell: fcc lattice plus a (1/4,1/4,1/4) basis."""
    fcc = np.array([[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])
    frac = np.vstack([fcc, fcc + 0.25])
    cell = a * np.eye(3)
    return Frame(cell, ["Si"] * 8, frac @ cell)


def supercell(frame, reps):
    """Repeat a frame reps = (n1, n2, n3) times along its cell vectors."""
    shifts = np.array([[i, j, k] for i in range(reps[0]) for j in range(reps[1]) for k in range(reps[2])])
    pos = np.vstack([frame.positions + s @ frame.cell for s in shifts])
    cell = frame.cell * np.asarray(reps, dtype=np.float64)[:, None]
    return Frame(cell, frame.symbols * len(shifts), pos)


def random_symmetric_strain(rng, max_strain):
    """Symmetric 3x3 strain with the 6 independent components uniform in [-max_strain, max_strain]."""
    e = rng.uniform(-max_strain, max_strain, size=(3, 3))
    return np.triu(e) + np.triu(e, 1).T


def strained_displaced(reference, rng, max_strain=0.03, disp=(0.05, 0.15)):
    """Apply h -> h (I + eps) (fractional coordinates kept) and Gaussian displacements.

    The displacement amplitude (RMS length of an atom's displacement, A) is drawn per frame from disp."""
    eps = random_symmetric_strain(rng, max_strain)
    deform = np.eye(3) + eps
    # r -> r (I + eps) for row vectors keeps fractional coordinates
    cell = reference.cell @ deform
    pos = reference.positions @ deform
    amplitude = rng.uniform(*disp)
    pos = pos + rng.normal(0.0, amplitude / math.sqrt(3.0), size=pos.shape)
    return Frame(cell, reference.symbols, pos)


def random_rotation(rng):
    """Uniform random rotation matrix from a normalised Gaussian quaternion."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def min_image_distances(a, b, box):
    """Distances (len(a), len(b)) in a cubic periodic box of edge box (A)."""
    d = a[:, None, :] - b[None, :, :]
    d -= box * np.round(d / box)
    return np.linalg.norm(d, axis=-1)


def water_box(rng, nmol_side=2, box=WATER_BOX_A, disp=(0.02, 0.05)):
    """8 rigid water molecules on a jittered 2x2x2 grid with random orientations, then thermal displacements.

    Rejects packings with O-O < 2.5 A or intermolecular H-O / H-H < 1.5 A (minimum image). Atom order: all O
    then all H (H 2i, 2i+1 belong to O i). disp: per-frame range of the per-component displacement sigma (A)."""
    half = math.radians(HOH_ANGLE_DEG) / 2.0
    # molecule frame: O at the origin, H in the xz plane
    local = np.array(
        [[0.0, 0.0, 0.0], [OH_BOND_A * math.sin(half), 0.0, OH_BOND_A * math.cos(half)],
         [-OH_BOND_A * math.sin(half), 0.0, OH_BOND_A * math.cos(half)]]
    )
    spacing = box / nmol_side
    grid = np.array(
        [[i, j, k] for i in range(nmol_side) for j in range(nmol_side) for k in range(nmol_side)], dtype=np.float64
    )
    for _ in range(10000):
        centres = (grid + 0.5) * spacing + rng.uniform(-0.4, 0.4, size=grid.shape)
        mols = [centres[m] + local @ random_rotation(rng).T for m in range(len(grid))]
        oxy = np.array([m[0] for m in mols])
        hyd = np.array([m[1:] for m in mols]).reshape(-1, 3)
        d_oo = min_image_distances(oxy, oxy, box)
        np.fill_diagonal(d_oo, np.inf)
        d_ho = min_image_distances(hyd, oxy, box)
        own = np.repeat(np.arange(len(oxy)), 2)
        d_ho[np.arange(len(hyd)), own] = np.inf
        d_hh = min_image_distances(hyd, hyd, box)
        d_hh[own[:, None] == own[None, :]] = np.inf
        if d_oo.min() > 2.5 and d_ho.min() > 1.5 and d_hh.min() > 1.5:
            break
    else:
        raise RuntimeError("water_box: no overlap-free packing found")
    pos = np.vstack([oxy, hyd])
    sigma = rng.uniform(*disp)
    pos = pos + rng.normal(0.0, sigma, size=pos.shape)
    return Frame(box * np.eye(3), ["O"] * len(oxy) + ["H"] * len(hyd), pos)


def frame_rng(seed, system, index):
    """Independent stream per (seed, system, frame): frames do not depend on how many others are made."""
    return np.random.default_rng([seed, zlib.crc32(system.encode()), index])


def make_frame(system, seed, index):
    rng = frame_rng(seed, system, index)
    if system == "Si8":
        return strained_displaced(diamond_si8(), rng)
    if system == "Si16":
        return strained_displaced(supercell(diamond_si8(), (2, 1, 1)), rng)
    if system == "Si15":
        ref = supercell(diamond_si8(), (2, 1, 1))
        vac = Frame(ref.cell, ref.symbols[1:], ref.positions[1:])  # vacancy at the origin atom
        return strained_displaced(vac, rng)
    if system == "H2O_24":
        return water_box(rng)
    raise ValueError(f"unknown system {system}")


# ----------------------------------------------------------------------------------------------- CP2K I/O


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


# ----------------------------------------------------------------------------------------------- HDF5


def write_deepmd_hdf5(path, material, systems, attrs):
    """deepmd/hdf5 layout: one group per system with type.raw, type_map.raw and set.000/*.npy datasets.

    systems: name -> dict(types (natoms,), coord (nf, 3n), box (nf, 9), energy (nf,), force (nf, 3n),
    virial (nf, 9), attrs)."""
    import h5py

    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        for k, v in attrs.items():
            f.attrs[k] = v
        for name, sysd in systems.items():
            g = f.create_group(name)
            g.create_dataset("type.raw", data=np.asarray(sysd["types"], dtype=np.int32))
            g.create_dataset("type_map.raw", data=np.array(MATERIALS[material]["type_map"], dtype="S"))
            s = g.create_group("set.000")
            for key in ("coord", "box", "energy", "force", "virial"):
                s.create_dataset(key + ".npy", data=np.asarray(sysd[key], dtype=np.float64))
            for k, v in sysd["attrs"].items():
                g.attrs[k] = v
    os.replace(tmp, path)


def cp2k_version():
    try:
        out = subprocess.run(["cp2k.psmp", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
        m = re.search(r"CP2K version (\S+)", out.decode())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


# ----------------------------------------------------------------------------------------------- driver


def system_folder(workdir, system, index):
    return os.path.join(workdir, system, f"frame_{index:04d}")


def check_virial(workdir, seed, delta=1e-3, jobs=2):
    """Finite-strain check of the virial sign on Si8 frame 0: for h -> h (I + eps),
    W_ab + W_ba = -(E(+d) - E(-d)) / (2 d) with eps_ab = eps_ba = d (one entry when a == b)."""
    settings = SYSTEMS["Si8"]
    base = make_frame("Si8", seed, 0)
    e0, f0, s0, _, _ = run_single_point(system_folder(workdir, "Si8", 0), base, settings)
    _, _, w0 = labels_from_cp2k(base, e0, f0, s0)
    comps = [(0, 0), (1, 2)]
    tasks = []
    for a, b in comps:
        for sign in (+1, -1):
            eps = np.zeros((3, 3))
            eps[a, b] = eps[b, a] = sign * delta
            deform = np.eye(3) + eps
            fr = Frame(base.cell @ deform, base.symbols, base.positions @ deform)
            tasks.append(((a, b, sign), os.path.join(workdir, "virial_check", f"eps{a}{b}_{'p' if sign > 0 else 'm'}"), fr))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        res = dict(zip([t[0] for t in tasks], ex.map(lambda t: run_single_point(t[1], t[2], settings), tasks)))
    report = {"delta": delta, "components": []}
    for a, b in comps:
        # dE/dd = -(W_ab + W_ba) for symmetric eps (a != b), -W_aa for a == b
        dedd = (res[(a, b, 1)][0] - res[(a, b, -1)][0]) * HARTREE_TO_EV / (2 * delta)
        fd = -dedd if a == b else -dedd / 2.0
        report["components"].append({"ab": [a, b], "virial_stored_eV": float(w0[a, b]), "virial_fd_eV": float(fd),
                                     "abs_diff_eV": float(abs(fd - w0[a, b]))})
    ok = all(c["abs_diff_eV"] < 1e-3 + 1e-3 * abs(c["virial_fd_eV"]) for c in report["components"])
    report["sign_confirmed"] = bool(ok)
    with open(os.path.join(workdir, "virial_check.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
    return ok


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--quick", action="store_true", help="a few frames per system (smoke run)")
    p.add_argument("--jobs", type=int, default=2, help="CP2K single-process jobs run at once")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    p.add_argument("--frames", default="", help="override frame counts, e.g. Si8=40,H2O_24=10")
    p.add_argument("--workdir", default=os.path.join(here, "cp2k_work"))
    p.add_argument("--outdir", default=here)
    p.add_argument("--no-write", action="store_true", help="run/collect frames but do not write HDF5")
    p.add_argument("--check-virial", action="store_true", help="finite-strain check of the virial sign on Si8")
    args = p.parse_args(argv)

    if shutil.which("cp2k.psmp") is None:
        print("cp2k.psmp not found (apt-get install cp2k cp2k-data)", file=sys.stderr)
        return 2
    if args.check_virial:
        return 0 if check_virial(args.workdir, args.seed, jobs=args.jobs) else 1

    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in SYSTEMS:
            p.error(f"unknown system '{s}'")
    counts = {s: SYSTEMS[s]["frames"][1 if args.quick else 0] for s in systems}
    for item in filter(None, args.frames.split(",")):
        k, v = item.split("=")
        counts[k] = int(v)

    # interleave systems so that an interrupted run leaves a proportional share of every system
    tasks = sorted(((s, i) for s in systems for i in range(counts[s])), key=lambda t: (t[1] / counts[t[0]], t[0]))
    frames = {t: make_frame(t[0], args.seed, t[1]) for t in tasks}
    results = {}
    failed = []
    t_start = time.monotonic()

    def work(t):
        return run_single_point(system_folder(args.workdir, *t), frames[t], SYSTEMS[t[0]])

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(work, t): t for t in tasks}
        for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            t = futs[fut]
            try:
                results[t] = fut.result()
                e, _, _, wall, reused = results[t]
                print(f"[{n}/{len(tasks)}] {t[0]} frame {t[1]}: E = {e:.8f} Ha, "
                      f"{'reused' if reused else f'{wall:.1f} s'}", flush=True)
            except ParseError as err:
                failed.append(t)
                print(f"[{n}/{len(tasks)}] {t[0]} frame {t[1]}: FAILED: {err}", flush=True)
    elapsed = time.monotonic() - t_start
    cpu_total = sum(r[3] for r in results.values() if not math.isnan(r[3]))
    print(f"done: {len(results)} frames, {len(failed)} failed, {elapsed:.0f} s wall now, "
          f"{cpu_total:.0f} s summed CP2K wall time over all frames")

    if args.no_write:
        return 1 if failed else 0
    version = cp2k_version()
    for material, mat in MATERIALS.items():
        out = {}
        for s in systems:
            if SYSTEMS[s]["material"] != material:
                continue
            idx = [i for i in range(counts[s]) if (s, i) in results]
            if not idx:
                continue
            rows = {k: [] for k in ("coord", "box", "energy", "force", "virial")}
            walls = []
            for i in idx:
                fr = frames[(s, i)]
                e_ha, f_au, s_gpa, wall, _ = results[(s, i)]
                e, f, w = labels_from_cp2k(fr, e_ha, f_au, s_gpa)
                rows["coord"].append(fr.positions.reshape(-1))
                rows["box"].append(fr.cell.reshape(-1))
                rows["energy"].append(e)
                rows["force"].append(f.reshape(-1))
                rows["virial"].append(w.reshape(-1))
                walls.append(wall)
            fr0 = frames[(s, idx[0])]
            st = SYSTEMS[s]
            out[s] = dict(
                types=[mat["type_map"].index(x) for x in fr0.symbols],
                attrs={
                    "nframes": len(idx),
                    "frame_indices": np.asarray(idx, dtype=np.int32),
                    "kpoints": "Monkhorst-Pack %dx%dx%d (SYMMETRY F, FULL_GRID F)" % tuple(st["kpoints"])
                    if st["kpoints"] else "gamma point only",
                    "cutoff_Ry": st["cutoff"],
                    "rel_cutoff_Ry": st["rel_cutoff"],
                    "cp2k_wall_s_per_frame_median": float(np.nanmedian(walls)) if walls else float("nan"),
                },
                **{k: np.array(v) for k, v in rows.items()},
            )
        if not out:
            continue
        attrs = {
            "code": "CP2K (Quickstep, GPW)",
            "code_version": version,
            "run_type": "ENERGY_FORCE single points, STRESS_TENSOR ANALYTICAL",
            "functional": "PBE",
            "basis": "DZVP-MOLOPT-SR-GTH (" + CP2K_DATA + "/BASIS_MOLOPT)",
            "pseudopotentials": ", ".join(f"{k}: {KINDS[k][1]}" for k in mat["type_map"]) + " (GTH_POTENTIALS)",
            "mgrid": "NGRIDS 4; CUTOFF/REL_CUTOFF per system group (Ry)",
            "scf": f"SCF_GUESS ATOMIC, EPS_SCF {EPS_SCF:g}, EPS_DEFAULT {EPS_DEFAULT:g}, diagonalization, "
                   "Broyden mixing ALPHA 0.4 NBROYDEN 8, no smearing",
            "seed": args.seed,
            "generator": "data/generate_cp2k.py",
            "units": "coord/box A, energy eV, force eV/A (F = -dE/dx), virial eV (W = -dE/d eps for h -> h(I+eps), "
                     "= V * CP2K pressure-like stress / 160.21766)",
            "conversions": "1 Ha = 27.211386 eV, 1 Ha/Bohr = 51.42208 eV/A, 1 eV/A^3 = 160.21766 GPa",
        }
        vc = os.path.join(args.workdir, "virial_check.json")
        if material == "si" and os.path.exists(vc):
            attrs["virial_sign_check"] = open(vc).read()
        path = os.path.join(args.outdir, mat["file"])
        write_deepmd_hdf5(path, material, out, attrs)
        print(f"wrote {path}: " + ", ".join(f"{k} {v['attrs']['nframes']} frames" for k, v in out.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
