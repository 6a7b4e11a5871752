"""Frame geometries of the CP2K datasets (generate_cp2k.py): strained and displaced silicon cells and random
packings of rigid water molecules, each a function of the seed, the system name and the frame index."""

import math
import zlib

import numpy as np

SI_LATTICE_A = 5.47  # PBE equilibrium lattice constant of diamond Si (A)
WATER_BOX_A = 6.2  # 8 H2O in 6.2^3 A^3 = 1.00 g/cm^3
OH_BOND_A = 0.9572
HOH_ANGLE_DEG = 104.52


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
