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

import numpy as np

from cp2k_frames import Frame, make_frame  # noqa: F401 (Frame: tests/data_cp2k reads it from here)
from cp2k_labels import (  # noqa: F401 (HARTREE_TO_EV as well)
    CP2K_DATA,
    EPS_DEFAULT,
    EPS_SCF,
    HARTREE_TO_EV,
    KINDS,
    ParseError,
    labels_from_cp2k,
    run_single_point,
)

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
