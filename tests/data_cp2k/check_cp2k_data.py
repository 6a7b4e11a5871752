#!/usr/bin/python3
"""Consistency checks of the CP2K datasets in data/ (deepmd/hdf5 layout).

--mode layout   (no CP2K needed) shapes, dtypes, type maps, reproducibility of the stored geometries from the
                generator's seed, zero net force, symmetric virials, plausible energies.
--mode fd       (needs cp2k.psmp; exit 77 = skipped without it) central finite differences of the CP2K
                energy against the stored forces (displacement 0.005 A) and virial (strain 1e-3) of Si8 frames.
"""

import argparse
import concurrent.futures
import os
import shutil
import sys
import tempfile

SKIP = 77


def fail(msg):
    print("FAILED: " + msg)
    return 1


def load(path):
    import h5py
    import numpy as np

    out = {}
    with h5py.File(path, "r") as f:
        attrs = dict(f.attrs)
        for name, g in f.items():
            s = g["set.000"]
            out[name] = dict(
                types=np.asarray(g["type.raw"]),
                type_map=[x.decode() for x in np.asarray(g["type_map.raw"])],
                attrs=dict(g.attrs),
                **{k: np.asarray(s[k + ".npy"]) for k in ("coord", "box", "energy", "force", "virial")},
            )
            out[name]["dtypes"] = {k: s[k + ".npy"].dtype for k in ("coord", "box", "energy", "force", "virial")}
            out[name]["type_dtype"] = g["type.raw"].dtype
    return attrs, out


def check_layout(gen, data_dir):
    import numpy as np

    errors = 0
    expected = {"si_cp2k.h5": {"Si8": 8, "Si16": 16, "Si15": 15}, "water_cp2k.h5": {"H2O_24": 24}}
    # per-atom energy bounds (eV/atom): PBE/GTH total energies, Si about -107.5, water about -157 per atom (3 atoms)
    e_bounds = {"Si8": (-110, -105), "Si16": (-110, -105), "Si15": (-110, -105), "H2O_24": (-160, -150)}
    for fname, systems in expected.items():
        path = os.path.join(data_dir, fname)
        if not os.path.exists(path):
            errors += fail(f"{path} is missing")
            continue
        attrs, data = load(path)
        seed = int(attrs["seed"])
        for name in data:
            if name not in systems:
                errors += fail(f"{fname}: unexpected system group '{name}'")
        for name, natoms in systems.items():
            if name not in data:
                errors += fail(f"{fname}: system group '{name}' is missing")
                continue
            d = data[name]
            errors_before = errors
            nf = d["energy"].shape[0]
            where = f"{fname}:{name}"
            if nf < 1:
                errors += fail(f"{where}: no frames")
                continue
            shapes = {"coord": (nf, 3 * natoms), "force": (nf, 3 * natoms), "box": (nf, 9), "virial": (nf, 9),
                      "energy": (nf,)}
            for k, shp in shapes.items():
                if d[k].shape != shp:
                    errors += fail(f"{where}: {k}.npy has shape {d[k].shape}, expected {shp}")
                if d["dtypes"][k] != np.float64:
                    errors += fail(f"{where}: {k}.npy has dtype {d['dtypes'][k]}, expected float64")
                if not np.all(np.isfinite(d[k])):
                    errors += fail(f"{where}: {k}.npy has non-finite values")
            if d["type_dtype"] != np.int32:
                errors += fail(f"{where}: type.raw has dtype {d['type_dtype']}, expected int32")
            if errors > errors_before:
                continue
            # the stored geometries are exactly the generator's frames for the recorded seed and frame indices
            idx = [int(i) for i in d["attrs"]["frame_indices"]]
            for row, i in enumerate(idx):
                fr = gen.make_frame(name, seed, i)
                if max(abs(fr.positions.reshape(-1) - d["coord"][row]).max(),
                       abs(fr.cell.reshape(-1) - d["box"][row]).max()) > 1e-12:
                    errors += fail(f"{where}: frame {i} geometry differs from generate_cp2k.make_frame(seed={seed})")
                    break
                types = [d["type_map"].index(s) for s in fr.symbols]
                if list(d["types"]) != types:
                    errors += fail(f"{where}: type.raw {list(d['types'])} does not match the symbols {fr.symbols}")
                    break
            # translation invariance: sum_i F_i = 0 up to the real-space grid's egg-box error (Si at 300 Ry:
            # ~1e-6 Ha/Bohr; water at 600 Ry: ~0.02 eV/A per atom, cp2k.md's force error against 1200 Ry)
            net = np.abs(d["force"].reshape(nf, natoms, 3).sum(axis=1)).max()
            net_tol = 1e-3 if name.startswith("Si") else 0.02 * natoms
            if net > net_tol:
                errors += fail(f"{where}: net force {net:.2e} eV/A, expected below {net_tol:g}")
            # the virial of a rotation-invariant energy is symmetric
            w = d["virial"].reshape(nf, 3, 3)
            asym = np.abs(w - w.transpose(0, 2, 1)).max()
            if asym > 1e-6:
                errors += fail(f"{where}: virial asymmetry {asym:.2e} eV")
            epa = d["energy"] / natoms
            lo, hi = e_bounds[name]
            if epa.min() < lo or epa.max() > hi:
                errors += fail(f"{where}: energy per atom in [{epa.min():.3f}, {epa.max():.3f}] eV, expected in "
                               f"[{lo}, {hi}] (unit conversion?)")
            fmax = np.abs(d["force"]).max()
            if not 0.05 < fmax < 20.0:
                errors += fail(f"{where}: largest force component {fmax:.3f} eV/A is implausible")
            if errors == errors_before:
                print(f"ok {where}: {nf} frames, E/atom [{epa.min():.4f}, {epa.max():.4f}] eV, "
                      f"|F|max {fmax:.3f} eV/A, net force {net:.1e}, virial asymmetry {asym:.1e}")
    return errors


def check_fd(gen, data_dir, jobs):
    import numpy as np

    path = os.path.join(data_dir, "si_cp2k.h5")
    if not os.path.exists(path):
        return fail(f"{path} is missing")
    _, data = load(path)
    d = data["Si8"]
    settings = dict(gen.SYSTEMS["Si8"])
    if int(d["attrs"]["cutoff_Ry"]) != settings["cutoff"]:
        return fail(f"si_cp2k.h5:Si8 cutoff {d['attrs']['cutoff_Ry']} Ry differs from the generator's "
                    f"{settings['cutoff']} Ry")
    h = 0.005  # A
    delta = 1e-3  # strain
    # (frame row, atom, component) for forces; (frame row, a, b) for the virial
    force_cases = [(0, 3, 0), (min(1, len(d["energy"]) - 1), 5, 2)]
    virial_cases = [(min(1, len(d["energy"]) - 1), 0, 1)]
    work = tempfile.mkdtemp(prefix="deepkf-cp2k-fd-")
    tasks = []
    for row, atom, comp in force_cases:
        pos = d["coord"][row].reshape(-1, 3)
        cell = d["box"][row].reshape(3, 3)
        for sign in (1, -1):
            p = pos.copy()
            p[atom, comp] += sign * h
            tasks.append((("F", row, atom, comp, sign), gen.Frame(cell, ["Si"] * 8, p)))
    for row, a, b in virial_cases:
        pos = d["coord"][row].reshape(-1, 3)
        cell = d["box"][row].reshape(3, 3)
        for sign in (1, -1):
            eps = np.zeros((3, 3))
            eps[a, b] = eps[b, a] = sign * delta
            deform = np.eye(3) + eps
            tasks.append((("W", row, a, b, sign), gen.Frame(cell @ deform, ["Si"] * 8, pos @ deform)))

    def run(t):
        key, frame = t
        folder = os.path.join(work, "_".join(str(x) for x in key))
        return gen.run_single_point(folder, frame, settings)[0] * gen.HARTREE_TO_EV

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        energies = dict(zip([t[0] for t in tasks], ex.map(run, tasks)))
    errors = 0
    for row, atom, comp in force_cases:
        # F = -dE/dx ~ -(E(x+h) - E(x-h)) / (2h)
        fd = -(energies[("F", row, atom, comp, 1)] - energies[("F", row, atom, comp, -1)]) / (2 * h)
        stored = d["force"][row].reshape(-1, 3)[atom, comp]
        diff = abs(fd - stored)
        msg = (f"Si8 frame row {row} atom {atom} component {'xyz'[comp]}: stored force {stored:.6f} eV/A, "
               f"finite difference {fd:.6f} eV/A, |diff| {diff:.2e}")
        if diff > 1e-4:
            errors += fail(msg + " > 1e-4 eV/A")
        else:
            print("ok " + msg)
    for row, a, b in virial_cases:
        # for h -> h (I + eps) with eps_ab = eps_ba = d: dE/dd = -W_aa (a == b), -(W_ab + W_ba) = -2 W_ab (a != b)
        dedd = (energies[("W", row, a, b, 1)] - energies[("W", row, a, b, -1)]) / (2 * delta)
        fd = -dedd if a == b else -dedd / 2.0
        stored = d["virial"][row].reshape(3, 3)[a, b]
        diff = abs(fd - stored)
        msg = (f"Si8 frame row {row} virial {'xyz'[a]}{'xyz'[b]}: stored {stored:.6f} eV, "
               f"finite strain {fd:.6f} eV, |diff| {diff:.2e}")
        if diff > 2e-3:
            errors += fail(msg + " > 2e-3 eV (sign or unit of the virial?)")
        else:
            print("ok " + msg)
    if errors == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"cp2k runs kept in {work}")
    return errors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["layout", "fd"], required=True)
    p.add_argument("--data", default=os.path.join(here, "..", "..", "data"), help="folder with the .h5 files")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as err:
        print(f"skipped: {err} (run with /usr/bin/python3 and python3-numpy, python3-h5py)")
        return SKIP
    sys.path.insert(0, os.path.abspath(args.data))
    import generate_cp2k as gen

    if args.mode == "layout":
        errors = check_layout(gen, args.data)
    else:
        if shutil.which("cp2k.psmp") is None:
            print("skipped: cp2k.psmp is not installed (apt-get install cp2k cp2k-data)")
            return SKIP
        errors = check_fd(gen, args.data, args.jobs)
    print("all checks passed" if errors == 0 else f"{errors} check(s) failed")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
