"""The Python package against independent truth: `deepkf test`'s detail files, LAMMPS with pair_style
deepkf, finite differences of the ASE energy, the virial over the volume, `deepkf model-devi` and
`deepkf uncertainty` on the same frames, and the errors bad input must give.

Run by ctest (tests/python/CMakeLists.txt) with PYTHONPATH at build/python and DEEPKF_BIN, DEEPKF_SOURCE,
and for the LAMMPS comparison DEEPKF_LMP and DEEPKF_PLUGIN, in the environment."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

try:
    import h5py
except ImportError:  # the GPU machines' Python may lack it
    raise unittest.SkipTest("h5py is not installed: these tests read the water frames with it")

import deepkf
from deepkf.infer import DeepPot

BIN = os.environ["DEEPKF_BIN"]
SOURCE = os.environ["DEEPKF_SOURCE"]
WATER = os.path.join(SOURCE, "data", "water_cp2k.h5")


def run(*args, cwd=None):
    p = subprocess.run([BIN, *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"deepkf {' '.join(args)} failed ({p.returncode}): {p.stdout[-800:]} {p.stderr[-800:]}")
    return p.stdout


def water_frames():
    with h5py.File(WATER, "r") as f:
        g = f[list(f.keys())[0]]
        types = np.array(g["type.raw"][:], dtype=int)
        s = g["set.000"]
        return (np.array(s["coord.npy"]), np.array(s["box.npy"]), types, np.array(s["energy.npy"]),
                np.array(s["force.npy"]))


def train(work, name, precision="float64", seed=1, steps=4, descriptor="se_e2_a"):
    desc = {"type": descriptor, "rcut": 4.0, "rcut_smth": 1.0, "sel": [16, 32], "neuron": [4, 8],
            "precision": precision, "seed": seed}
    tebd = descriptor == "se_a_ebd_v2"  # se_e2_a with a type embedding (strip)
    if descriptor == "se_e2_a" or tebd:
        desc["axis_neuron"] = 2
    if descriptor == "se_atten_v2":  # DPA-1 over the nearest 48 of any type, one attention layer
        desc.update(sel=48, axis_neuron=2, attn=8, attn_layer=1, tebd_dim=4)
    if descriptor == "hybrid":  # se_e2_a of a shorter cutoff beside se_e2_r
        angular = dict(desc, type="se_e2_a", rcut=3.0, sel=[8, 16], axis_neuron=2)
        desc = {"type": "hybrid", "list": [angular, dict(desc, type="se_e2_r")]}
    config = {
        "model": {"type_map": ["O", "H"],
                  "descriptor": desc,
                  "fitting_net": {"neuron": [8, 8], "precision": precision, "seed": seed},
                  **({"type_embedding": {"neuron": [2, 4]}} if tebd else {})},
        "optimizer": {"type": "RLEKF", "kf_blocksize": 256},
        "training": {"training_data": {"systems": [WATER]}, "numb_steps": steps, "disp_freq": steps,
                     "save_freq": steps, "num_threads": 1, "seed": seed}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(config, f)
    run("train", path, "-o", os.path.join(work, name))
    return os.path.join(work, name, "model.pt")


def detail(work, model, name):
    """Energies (nframes) and forces (nframes, natoms, 3) of `deepkf test -d` on the water data."""
    prefix = os.path.join(work, name)
    run("test", "-m", model, "-s", WATER, "-o", prefix + ".t", "-d", prefix)
    e = np.loadtxt(prefix + ".e.out")[:, 1]
    f = np.loadtxt(prefix + ".f.out")[:, 3:6]
    v = np.loadtxt(prefix + ".v.out")[:, 9:18]
    return e, f.reshape(len(e), -1, 3), v


def assert_close(test, got, want, rtol, what):
    got, want = np.asarray(got), np.asarray(want)
    test.assertEqual(got.shape, want.shape, f"{what}: shape {got.shape}, expected {want.shape}")
    scale = max(np.abs(want).max(), 1e-300)
    err = np.abs(got - want).max() / scale
    test.assertLessEqual(err, rtol, f"{what}: largest difference {err:.3g} of the largest value, allowed {rtol}")


class Models(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="deepkf-python.")
        cls.f64 = train(cls.work, "f64")
        cls.f64b = train(cls.work, "f64b", seed=2)
        cls.f32 = train(cls.work, "f32", precision="float32")
        cls.radial = train(cls.work, "se_e2_r", descriptor="se_e2_r")
        cls.three_body = train(cls.work, "se_e3", descriptor="se_e3")
        cls.hybrid = train(cls.work, "hybrid", descriptor="hybrid")
        cls.type_embedded = train(cls.work, "se_a_ebd_v2", descriptor="se_a_ebd_v2")
        cls.attention = train(cls.work, "se_atten_v2", descriptor="se_atten_v2")
        cls.compressed = os.path.join(cls.work, "compressed.pt")
        run("compress", cls.f64, "-o", cls.compressed)
        cls.coord, cls.box, cls.types, cls.energy, cls.force = water_frames()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)


class DeepPotTest(Models):
    def test_equals_deepkf_test(self):
        # (model, name, relative tolerance of energies, forces, virials): float32 rounds differently in groups
        for model, name, e_tol, f_tol, v_tol in [(self.f64, "f64", 1e-12, 1e-10, 1e-10),
                                                 (self.compressed, "compressed", 1e-12, 1e-10, 1e-10),
                                                 (self.f32, "f32", 1e-6, 1e-3, 1e-4),
                                                 (self.radial, "se_e2_r", 1e-12, 1e-10, 1e-10),
                                                 (self.three_body, "se_e3", 1e-12, 1e-10, 1e-10),
                                                 (self.hybrid, "hybrid", 1e-12, 1e-10, 1e-10),
                                                 (self.type_embedded, "se_a_ebd_v2", 1e-12, 1e-10, 1e-10),
                                                 (self.attention, "se_atten_v2", 1e-12, 1e-10, 1e-10)]:
            e_ref, f_ref, v_ref = detail(self.work, model, name)
            e, f, v = DeepPot(model).eval(self.coord, self.box, self.types)
            assert_close(self, e[:, 0], e_ref, e_tol, f"{name} energies against deepkf test")
            assert_close(self, f, f_ref, f_tol, f"{name} forces against deepkf test")
            assert_close(self, v, v_ref, v_tol, f"{name} virials against deepkf test")

    def test_shapes_and_interface(self):
        dp = DeepPot(self.f64)
        self.assertEqual(dp.get_type_map(), ["O", "H"])
        self.assertEqual(dp.get_ntypes(), 2)
        self.assertEqual(dp.get_rcut(), 4.0)
        self.assertEqual(dp.get_dim_fparam(), 0)
        n = len(self.types)
        e, f, v, ae, av = dp.eval(self.coord[:3], self.box[:3], self.types, atomic=True)
        self.assertEqual((e.shape, f.shape, v.shape, ae.shape, av.shape),
                         ((3, 1), (3, n, 3), (3, 9), (3, n, 1), (3, n, 9)))
        assert_close(self, ae.sum(axis=1), e, 1e-13, "atom energies summed")
        assert_close(self, av.sum(axis=1), v, 1e-12, "atom virials summed")
        # (nframes, natoms, 3) and (nframes, 3, 3) are accepted as DeePMD-kit accepts them.
        e2, f2, _ = dp.eval(self.coord[:3].reshape(3, n, 3), self.box[:3].reshape(3, 3, 3), list(self.types))
        assert_close(self, e2, e, 0, "energies from 3-d arrays")
        # A batch of frames equals the frames one at a time.
        for k in range(3):
            ek, fk, vk = dp.eval(self.coord[k:k + 1], self.box[k:k + 1], self.types)
            assert_close(self, ek[0], e[k], 1e-14, f"frame {k} alone")
            assert_close(self, fk[0], f[k], 1e-12, f"forces of frame {k} alone")
        # One row of types per frame (mixed_type): the same values.
        rows = np.tile(self.types, (3, 1))
        em, fm, vm = dp.eval(self.coord[:3], self.box[:3], rows, mixed_type=True)
        assert_close(self, em, e, 1e-14, "energies with a type row per frame")

    def test_compressed_and_precision_reported(self):
        self.assertTrue(DeepPot(self.compressed).compressed)
        self.assertFalse(DeepPot(self.f64).compressed)
        self.assertEqual(DeepPot(self.f32).precision, "float32")

    def test_bad_input(self):
        dp = DeepPot(self.f64)
        n = len(self.types)
        cases = [
            (lambda: dp.eval(self.coord[:, :-1], self.box, self.types), ValueError, "coords has"),
            (lambda: dp.eval(self.coord[:2], self.box[:3], self.types), ValueError, "cells has"),
            (lambda: dp.eval(self.coord[:1], self.box[:1], np.full(n, 2)), ValueError, "type 2"),
            (lambda: dp.eval(self.coord[:1], self.box[:1], np.full(n, 0.5)), ValueError, "integers"),
            (lambda: dp.eval(self.coord[:1], np.zeros((1, 9)), self.types), ValueError, "degenerate"),
            (lambda: dp.eval(np.full((1, 3 * n), np.nan), self.box[:1], self.types), ValueError, "not finite"),
            (lambda: dp.eval(self.coord[:1], self.box[:1], self.types, fparam=[1.0]), ValueError, "fparam"),
            (lambda: DeepPot(os.path.join(self.work, "missing.pt")), FileNotFoundError, "does not exist"),
            (lambda: DeepPot(WATER), deepkf.DeepkfError, WATER),
            (lambda: DeepPot(self.f64, device="gpu7"), ValueError, "device"),
        ]
        for call, error, words in cases:
            with self.assertRaises(error) as c:
                call()
            message = str(c.exception)
            self.assertIn(words, message)
            self.assertEqual(len(message.strip().splitlines()), 1, f"one line: {message!r}")


@unittest.skipUnless(os.environ.get("DEEPKF_LMP") and os.environ.get("DEEPKF_PLUGIN"), "no LAMMPS with the plugin")
class LammpsTest(Models):
    def test_equals_lammps(self):
        dp = DeepPot(self.f64)
        coord, box = self.coord[0].reshape(-1, 3), self.box[0].reshape(3, 3)
        self.assertTrue(np.allclose(box, np.diag(np.diag(box))), "the test frame's cell is orthogonal")
        lengths = np.diag(box)
        coord = coord - np.floor(coord / lengths) * lengths  # inside the box, as read_data needs
        e, f, v = dp.eval(coord.reshape(1, -1), box.reshape(1, 9), self.types)
        work = self.work
        with open(os.path.join(work, "frame.data"), "w") as out:
            out.write(f"water\n\n{len(coord)} atoms\n2 atom types\n\n")
            for k, axis in enumerate("xyz"):
                out.write(f"0 {lengths[k]!r} {axis}lo {axis}hi\n")
            out.write("\nMasses\n\n1 15.999\n2 1.008\n\nAtoms # atomic\n\n")
            for i, (t, x) in enumerate(zip(self.types, coord)):
                out.write(f"{i + 1} {t + 1} {x[0]!r} {x[1]!r} {x[2]!r}\n")
        script = f"""units metal
boundary p p p
atom_style atomic
read_data frame.data
plugin load {os.environ['DEEPKF_PLUGIN']}
pair_style deepkf {self.f64}
pair_coeff * * O H
compute p all pressure NULL virial
thermo_style custom step pe c_p[1] c_p[2] c_p[3] c_p[4] c_p[5] c_p[6]
thermo_modify format float %.17g
dump d all custom 1 forces.dump id fx fy fz
dump_modify d format float %.17g sort id
run 0
"""
        with open(os.path.join(work, "in.lmp"), "w") as out:
            out.write(script)
        p = subprocess.run([os.environ["DEEPKF_LMP"], "-in", "in.lmp", "-log", "log.lammps"], cwd=work,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout[-1500:] + p.stderr[-800:])
        lines = p.stdout.splitlines()
        row = lines[[i for i, l in enumerate(lines) if l.split()[:2] == ["Step", "PotEng"]][0] + 1].split()
        assert_close(self, float(row[1]), e[0, 0], 1e-12, "energy against LAMMPS")
        dump = np.loadtxt(os.path.join(work, "forces.dump"), skiprows=9)
        assert_close(self, dump[:, 1:4], f[0], 1e-10, "forces against LAMMPS")
        # LAMMPS's pressure tensor from the virial: P_ab = W_ab / V * nktv2p (metal units), xx yy zz xy xz yz
        volume = np.prod(lengths)
        w = v[0].reshape(3, 3)
        want = np.array([w[0, 0], w[1, 1], w[2, 2], w[0, 1], w[0, 2], w[1, 2]]) / volume * 1.6021765e6
        assert_close(self, np.array([float(x) for x in row[2:8]]), want, 1e-10, "virial against LAMMPS")


try:
    import ase  # noqa: F401
    from ase import Atoms
    from ase.calculators.calculator import PropertyNotImplementedError
    from deepkf.calculator import DP, DeepKF
    HAVE_ASE = True
except ImportError:
    HAVE_ASE = False


@unittest.skipUnless(HAVE_ASE, "ASE is not installed (apt-get install python3-ase)")
class AseTest(Models):
    def water_box(self, frame=0):
        return Atoms(["O" if t == 0 else "H" for t in self.types], positions=self.coord[frame].reshape(-1, 3),
                     cell=self.box[frame].reshape(3, 3), pbc=True)

    def test_energy_and_forces_equal_deeppot(self):
        atoms = self.water_box()
        atoms.calc = DeepKF(self.f64)
        e, f, v = DeepPot(self.f64).eval(self.coord[:1], self.box[:1], self.types)
        self.assertEqual(atoms.get_potential_energy(), e[0, 0])
        self.assertEqual(atoms.get_potential_energy(force_consistent=True), e[0, 0])
        assert_close(self, atoms.get_forces(), f[0], 0, "ASE forces")

    def test_forces_are_minus_the_energy_gradient(self):
        atoms = self.water_box(1)
        atoms.calc = DP(model=self.f64)
        forces = atoms.get_forces()
        h = 1e-5
        for i in (0, 1, 5, 23):
            for a in range(3):
                p = atoms.copy()
                p.calc = atoms.calc
                pos = p.get_positions()
                pos[i, a] += h
                p.set_positions(pos)
                up = p.get_potential_energy()
                pos[i, a] -= 2 * h
                p.set_positions(pos)
                down = p.get_potential_energy()
                self.assertAlmostEqual(-(up - down) / (2 * h), forces[i, a], delta=1e-6,
                                       msg=f"force on atom {i} along {a} against the energy's central difference")

    def test_stress_is_the_strain_derivative(self):
        atoms = self.water_box(2)
        atoms.calc = DeepKF(self.f64)
        stress = atoms.get_stress(voigt=False)
        virial = atoms.calc.results["virial"]
        assert_close(self, stress, -0.5 * (virial + virial.T) / atoms.get_volume(), 1e-14, "stress = -W/V")
        # sigma_ab = (1/V) dE/d(eps_ab) by central differences of a symmetric strain
        h = 1e-6
        cell, pos = atoms.get_cell().array, atoms.get_positions()
        for a, b in [(0, 0), (1, 2), (0, 1), (2, 2)]:
            energies = []
            for sign in (1, -1):
                eps = np.zeros((3, 3))
                eps[a, b] += sign * h / 2
                eps[b, a] += sign * h / 2
                p = atoms.copy()
                p.calc = atoms.calc
                p.set_cell(cell @ (np.eye(3) + eps), scale_atoms=False)
                p.set_positions(pos @ (np.eye(3) + eps))
                energies.append(p.get_potential_energy())
            want = (energies[0] - energies[1]) / (2 * h) / atoms.get_volume()
            self.assertAlmostEqual(stress[a, b], want, delta=1e-7, msg=f"stress {a}{b} against the strain derivative")

    def test_molecule_without_cell(self):
        positions = [(0.0, 0.0, 0.0), (0.9572, 0.0, 0.0), (-0.2400, 0.9266, 0.0)]  # O H H, one free molecule
        water = Atoms("OH2", positions=positions, pbc=False)
        water.calc = DeepKF(self.f64)
        e, f, _ = DeepPot(self.f64).eval(np.array(positions).reshape(1, -1), None, np.array([0, 1, 1]))
        self.assertEqual(water.get_potential_energy(), e[0, 0])
        assert_close(self, water.get_forces(), f[0], 0, "forces of a molecule without a cell")
        with self.assertRaises(PropertyNotImplementedError):
            water.get_stress()

    def test_unknown_element(self):
        atoms = Atoms("OHNa", positions=[(0, 0, 0), (1, 0, 0), (0, 3, 0)], cell=[10, 10, 10], pbc=True)
        atoms.calc = DeepKF(self.f64)
        with self.assertRaises(ValueError) as c:
            atoms.get_potential_energy()
        self.assertIn("Na", str(c.exception))
        self.assertIn("type map (O, H)", str(c.exception))

    def test_deepmd_kit_script(self):
        """DeePMD-kit's calculator example, with only the import line and the model file changed."""
        model = self.f64
        script = f'''
from ase import Atoms
from deepkf.calculator import DP

water = Atoms(
    "H2O",
    positions=[(0.7601, 1.9270, 1), (1.9575, 1, 1), (1.0, 1.0, 1.0)],
    cell=[100, 100, 100],
    calculator=DP(model="{model}"),
)
print(water.get_potential_energy())
print(water.get_forces())

from ase.optimize import BFGS

dyn = BFGS(water)
dyn.run(fmax=1e-6)
print(water.get_positions())
'''
        p = subprocess.run([os.environ.get("PYTHON", "python3"), "-c", script], capture_output=True, text=True,
                           env=os.environ)
        self.assertEqual(p.returncode, 0, p.stderr[-1500:])
        self.assertIn("BFGS:", p.stdout)


class TutorialTest(Models):
    @unittest.skipUnless(HAVE_ASE, "ASE is not installed")
    def test_water_ase_tutorial(self):
        """python/examples/water_ase.py (docs/python.md) with 20 MD steps."""
        script = os.path.join(SOURCE, "python", "examples", "water_ase.py")
        out = os.path.join(self.work, "md.xyz")
        p = subprocess.run([os.environ.get("PYTHON", "python3"), script, self.f64, "--steps", "20", "--out", out],
                           capture_output=True, text=True, env=os.environ, cwd=self.work)
        self.assertEqual(p.returncode, 0, p.stdout[-800:] + p.stderr[-1500:])
        self.assertIn("192 atoms", p.stdout)
        self.assertIn("relaxed: E =", p.stdout)
        self.assertIn("20 steps in", p.stdout)
        from ase.io import read
        self.assertEqual(len(read(out, ":")), 2, "frames written at steps 0 and 20")


@unittest.skipUnless(deepkf._core.cuda_available(), "no CUDA device")
class CudaTest(Models):
    def test_cuda_equals_cpu(self):
        for model in (self.f64, self.compressed):
            cpu = DeepPot(model, device="cpu").eval(self.coord, self.box, self.types, atomic=True)
            gpu = DeepPot(model, device="cuda").eval(self.coord, self.box, self.types, atomic=True)
            for name, a, b in zip(("energy", "force", "virial", "atom energy", "atom virial"), gpu, cpu):
                assert_close(self, a, b, 1e-10, f"{name} on the GPU against the CPU ({model})")


class UncertaintyTest(Models):
    def test_model_devi_equals_command_line(self):
        out = os.path.join(self.work, "md.out")
        run("model-devi", "-m", self.f64, self.f64b, "-s", WATER, "-o", out)
        want = np.loadtxt(out)
        table = deepkf.calc_model_devi(self.coord, self.box, self.types, [DeepPot(self.f64), DeepPot(self.f64b)],
                                       fname=os.path.join(self.work, "py.out"))
        self.assertEqual(table.shape[0], want.shape[0])
        for c in range(1, 7):
            assert_close(self, table[:, c], want[:, c], 1e-5, f"model_devi column {c}")
        if want.shape[1] > 7:
            assert_close(self, table[:, 7], want[:, 7], 1e-5, "model_devi devi_e")
        again = np.loadtxt(os.path.join(self.work, "py.out"))
        assert_close(self, again[:, 1:], table[:, 1:], 1e-5, "the written file")

    def test_kalman_sigma_equals_command_line(self):
        ckpt = os.path.join(self.work, "f64", "model.ckpt")
        prefix = os.path.join(self.work, "u")
        run("uncertainty", "-c", ckpt, "-s", WATER, "-o", prefix, "--force-atoms", "4", "--threads", "1")
        with open(prefix + ".frames.tsv") as f:
            header = f.readline().rstrip("\n").split("\t")
        table = np.genfromtxt(prefix + ".frames.tsv", delimiter="\t", skip_header=1, dtype=str, comments=None)
        sigma = deepkf.KalmanSigma(ckpt).eval(self.coord, self.box, self.types, force_atoms=4, seed=1)
        for name in ("sigma_e", "sigma_f_max", "sigma_f_mean", "sigma_f_rms"):
            want = table[:, header.index(name)].astype(float)
            assert_close(self, sigma[name], want, 1e-5, name)


if __name__ == "__main__":
    unittest.main()
