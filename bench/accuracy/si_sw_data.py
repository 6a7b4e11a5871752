#!/usr/bin/env python3
"""Silicon cells of 8 to 216 atoms labelled with the Stillinger-Weber potential, as DeePMD npy systems.

    python3 bench/accuracy/si_sw_data.py OUT_DIR [--frames-scale S] [--seed N] [--check]

A dataset whose cell sizes spread wider than the DFT sets beside the project (si_mlearn: 12 to 96 atoms),
for measuring how per-atom energies of small and large cells are learnt together (docs/first-epoch.md,
"Energies of cells of different sizes"). Each system is diamond silicon (a = 5.431 A) repeated n1 x n2 x n3
times, under a random symmetric strain (each component uniform in +-3%) with Gaussian displacements of a
per-frame RMS amplitude uniform in 0.05 to 0.20 A; the "vac" systems have one atom removed. OUT_DIR/train/
and OUT_DIR/valid/ get one system per cell (sys_Si8, sys_Si16, ..., sys_Si215_vac); the training systems
hold more frames of the small cells than of the large ones, as ab initio sets do.

The labels are Stillinger-Weber's (Phys. Rev. B 31, 5262 (1985), the silicon parameters): energies (eV),
forces F = -dE/dx (eV/A) and virials W = -sum over pair vectors of dE/dr (x) r (eV), written out from the
definition below. --check compares forces and the virial with central finite differences of the energy on
a small strained cell and exits non-zero if they disagree.

    E = sum_{i<j} phi2(r_ij) + sum_i sum_{j<k} phi3(r_ij, r_ik, theta_jik)
    phi2(r) = A eps (B (sigma/r)^4 - 1) exp(sigma / (r - a sigma))                      (r < a sigma)
    phi3 = lambda eps (cos theta + 1/3)^2 exp(gamma sigma / (r_ij - a sigma)) exp(gamma sigma / (r_ik - a sigma))
"""
import argparse
import os
import sys

import numpy as np

EPS, SIGMA, A_CUT, LAMBDA, GAMMA = 2.1683, 2.0951, 1.80, 21.0, 1.20
A_SW, B_SW = 7.049556277, 0.6022245584
RC = A_CUT * SIGMA  # 3.7712 A
LATTICE = 5.431

# (n1, n2, n3, vacancy, training frames, validation frames): many small cells, few large ones.
CELLS = [(1, 1, 1, False, 120, 12), (2, 1, 1, False, 60, 6), (2, 2, 1, False, 40, 4), (2, 2, 2, False, 24, 4),
         (2, 2, 2, True, 12, 3), (3, 3, 2, False, 8, 3), (3, 3, 3, False, 6, 3), (3, 3, 3, True, 4, 2)]


def diamond(n1, n2, n3):
    base = np.array([[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0], [0.25, 0.25, 0.25],
                     [0.25, 0.75, 0.75], [0.75, 0.25, 0.75], [0.75, 0.75, 0.25]])
    frac = np.array([(b + [i, j, k]) / [n1, n2, n3] for i in range(n1) for j in range(n2) for k in range(n3)
                     for b in base])
    cell = np.diag([n1, n2, n3]).astype(float) * LATTICE
    return frac @ cell, cell


def pair_vectors(pos, cell):
    """Every ordered pair (i, j, image) with |r_ij| < RC: i, j and r_ij = x_j + shift - x_i."""
    # Enough images for the cutoff: the cell's widths perpendicular to each face.
    inv = np.linalg.inv(cell)
    widths = 1.0 / np.linalg.norm(inv, axis=0)
    reach = [int(np.ceil(RC / w)) for w in widths]
    shifts = np.array([[a, b, c] for a in range(-reach[0], reach[0] + 1) for b in range(-reach[1], reach[1] + 1)
                       for c in range(-reach[2], reach[2] + 1)], dtype=float) @ cell
    d = pos[None, :, None, :] + shifts[None, None, :, :] - pos[:, None, None, :]  # i, j, image
    r = np.linalg.norm(d, axis=-1)
    i, j, s = np.nonzero((r < RC) & (r > 1e-8))
    return i, j, d[i, j, s]


def sw(pos, cell):
    """Energy, forces and virial (Stillinger-Weber, silicon)."""
    n = len(pos)
    i, j, vec = pair_vectors(pos, cell)
    r = np.linalg.norm(vec, axis=1)
    grad = np.zeros_like(vec)  # dE/d(r_ij) for each ordered pair vector
    # Two-body, half of phi2 on each ordered pair.
    ex = np.exp(SIGMA / (r - RC))
    sr4 = (SIGMA / r) ** 4
    phi2 = A_SW * EPS * (B_SW * sr4 - 1.0) * ex
    dphi2 = A_SW * EPS * ex * (-4.0 * B_SW * sr4 / r - (B_SW * sr4 - 1.0) * SIGMA / (r - RC) ** 2)
    energy = 0.5 * phi2.sum()
    grad += (0.5 * dphi2 / r)[:, None] * vec
    # Three-body: for each centre i, the pairs j < k of its neighbour list.
    g = np.exp(GAMMA * SIGMA / (r - RC))
    dg = -GAMMA * SIGMA / (r - RC) ** 2 * g
    order = np.argsort(i, kind="stable")
    starts = np.searchsorted(i[order], np.arange(n + 1))
    for c in range(n):
        idx = order[starts[c]:starts[c + 1]]
        if len(idx) < 2:
            continue
        a, b = np.triu_indices(len(idx), 1)
        p, q = idx[a], idx[b]
        u, v = vec[p], vec[q]
        ru, rv = r[p], r[q]
        cos = np.einsum("ij,ij->i", u, v) / (ru * rv)
        t = cos + 1.0 / 3.0
        energy += LAMBDA * EPS * np.sum(t * t * g[p] * g[q])
        dcos_du = v / (ru * rv)[:, None] - (cos / ru**2)[:, None] * u
        dcos_dv = u / (ru * rv)[:, None] - (cos / rv**2)[:, None] * v
        fu = LAMBDA * EPS * ((2 * t * g[p] * g[q])[:, None] * dcos_du + (t * t * dg[p] * g[q] / ru)[:, None] * u)
        fv = LAMBDA * EPS * ((2 * t * g[p] * g[q])[:, None] * dcos_dv + (t * t * g[p] * dg[q] / rv)[:, None] * v)
        np.add.at(grad, p, fu)
        np.add.at(grad, q, fv)
    force = np.zeros((n, 3))
    np.add.at(force, i, grad)   # r_ij = x_j - x_i: dE/dx_i = -sum_j g_ij
    np.add.at(force, j, -grad)  # dE/dx_j = +g_ij, F = -dE/dx
    virial = -np.einsum("pa,pb->ab", grad, vec)
    return energy, force, virial


def frame(n1, n2, n3, vacancy, rng):
    pos, cell = diamond(n1, n2, n3)
    if vacancy:
        pos = pos[1:]
    eps = rng.uniform(-0.03, 0.03, size=(3, 3))
    strain = np.eye(3) + 0.5 * (eps + eps.T)
    cell = cell @ strain
    pos = pos @ strain
    amplitude = rng.uniform(0.05, 0.20)
    pos = pos + rng.normal(scale=amplitude / np.sqrt(3.0), size=pos.shape)
    return pos, cell


def check(rng):
    pos, cell = frame(1, 1, 1, False, rng)
    e, f, w = sw(pos, cell)
    h = 1e-5
    fd = np.zeros_like(f)
    for a in range(len(pos)):
        for x in range(3):
            p1, p2 = pos.copy(), pos.copy()
            p1[a, x] += h
            p2[a, x] -= h
            fd[a, x] = -(sw(p1, cell)[0] - sw(p2, cell)[0]) / (2 * h)
    wd = np.zeros((3, 3))
    for a in range(3):
        for b in range(3):
            d = np.zeros((3, 3))
            d[a, b] = h
            # W = -dE/d(eps) for x -> x (I + eps), h -> h (I + eps)
            e1 = sw(pos @ (np.eye(3) + d), cell @ (np.eye(3) + d))[0]
            e2 = sw(pos @ (np.eye(3) - d), cell @ (np.eye(3) - d))[0]
            wd[a, b] = -(e1 - e2) / (2 * h)
    ferr, werr = np.abs(f - fd).max(), np.abs(w - wd).max()
    print(f"energy {e:.6f} eV; forces against finite differences {ferr:.2e} eV/A, virial {werr:.2e} eV")
    return ferr < 1e-6 and werr < 1e-6


def write(folder, frames):
    os.makedirs(os.path.join(folder, "set.000"), exist_ok=True)
    natoms = len(frames[0][0])
    with open(os.path.join(folder, "type.raw"), "w") as f:
        f.write("\n".join(["0"] * natoms) + "\n")
    with open(os.path.join(folder, "type_map.raw"), "w") as f:
        f.write("Si\n")
    arrays = {"coord": [], "box": [], "energy": [], "force": [], "virial": []}
    for pos, cell in frames:
        e, force, virial = sw(pos, cell)
        arrays["coord"].append(pos.reshape(-1))
        arrays["box"].append(cell.reshape(-1))
        arrays["energy"].append(e)
        arrays["force"].append(force.reshape(-1))
        arrays["virial"].append(virial.reshape(-1))
    for name, values in arrays.items():
        np.save(os.path.join(folder, "set.000", name + ".npy"), np.array(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--frames-scale", type=float, default=1.0, help="multiply every system's frame count")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="finite-difference check of the labels only")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.check:
        sys.exit(0 if check(rng) else 1)
    if not args.out:
        parser.error("OUT_DIR is needed unless --check")
    for n1, n2, n3, vac, ntrain, nvalid in CELLS:
        natoms = 8 * n1 * n2 * n3 - (1 if vac else 0)
        name = f"sys_Si{natoms}" + ("_vac" if vac else "")
        for part, count in (("train", ntrain), ("valid", nvalid)):
            frames = [frame(n1, n2, n3, vac, rng) for _ in range(max(1, round(count * args.frames_scale)))]
            write(os.path.join(args.out, part, name), frames)
        print(f"{name}: {ntrain} + {nvalid} frames")


if __name__ == "__main__":
    main()
