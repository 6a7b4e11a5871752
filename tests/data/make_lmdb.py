"""Writes small LMDB databases in DeePMD-kit's layout (deepmd/dpmodel/utils/lmdb_data.py) and the same
numbers as DeePMD npy system folders, for tests/data/test_Lmdb.cpp.

Usage: make_lmdb.py OUTDIR. Exits 77 (a skipped test) when lmdb, msgpack or numpy cannot be imported.

OUTDIR/good.lmdb: 7 frames in two kinds, interleaved (A B A A B A B):
  A: atoms O H H, periodic, float32 arrays named as numpy's str(dtype) ("float32"), energy a 0-d array,
     forces and virials;
  B: atoms H O H H, non-periodic (an all-zero cell in frame 1, no "cells" entry in the others), float64
     arrays named by numpy's array-protocol code ("<f8"), energy a plain msgpack float, forces only.
  Its metadata has nframes, frame_idx_fmt "012d", type_map [O, H] and frame_nlocs, as DeePMD-kit's
  merge_lmdb writes them.
OUTDIR/npy/sys_a, OUTDIR/npy/sys_b: the frames of A and B (A's values after float32 rounding) as npy
  folders with type_map.raw (B marked nopbc).
OUTDIR/plain.lmdb: the A frames alone with the least metadata (nframes only: the default key format, no
  type map), arrays without "shape", coordinates big-endian (">f8").
OUTDIR/bad/NAME.lmdb: good.lmdb with one thing broken (see BAD below).
"""

import os
import sys

try:
    import lmdb
    import msgpack
    import numpy as np
except ImportError as e:  # the test reports itself skipped
    print(f"skipped: {e}", file=sys.stderr)
    sys.exit(77)


def encoded(a, dtype_name=None, shape=True):
    """An array as DeePMD-kit's records hold it: {type, shape, data}."""
    out = {"type": dtype_name or str(a.dtype), "data": a.tobytes()}
    if shape:
        out["shape"] = list(a.shape)
    return out


def frame_a(f):
    """Frame f of kind A: O H H in a 10 A cubic box, float32."""
    coord = np.array([[1, 1, 1], [2, 1, 1], [1, 2, 1]], dtype=np.float64) + 0.05 * f
    coord[1, 2] += 0.013 * f
    box = np.diag([10.0, 10.5, 11.0]) + 0.1 * np.triu(np.ones((3, 3)), 1)
    force = np.sin(np.arange(9).reshape(3, 3) + f)
    virial = np.cos(np.arange(9).reshape(3, 3) * 0.7 + f)
    energy = -15.25 + 0.125 * f
    a = {
        "types": np.array([0, 1, 1], dtype=np.int32),
        "coord": coord.astype(np.float32),
        "box": box.astype(np.float32),
        "energy": np.array(energy, dtype=np.float32),
        "force": force.astype(np.float32),
        "virial": virial.astype(np.float32),
    }
    return a


def frame_b(f):
    """Frame f of kind B: H O H H without a cell, float64."""
    coord = np.array([[0, 0, 0], [1.1, 0, 0], [0, 1.2, 0], [0, 0, 1.3]]) + 0.01 * f
    return {
        "types": np.array([1, 0, 1, 1], dtype=np.int64),
        "coord": coord,
        "box": None,
        "energy": -20.5 - 0.25 * f,
        "force": np.cos(np.arange(12).reshape(4, 3) + 0.5 * f),
        "virial": None,
    }


def record(fr, kind, zero_cell=False):
    """One frame's msgpack map in DeePMD-kit's (dpdata's) names."""
    code = {"A": None, "B": "<f8"}[kind]
    r = {
        "atom_types": encoded(fr["types"], "int32" if kind == "A" else "<i8"),
        "coords": encoded(fr["coord"], code),
        "atom_numbs": [int((fr["types"] == t).sum()) for t in (0, 1)],
    }
    if fr["box"] is not None:
        r["cells"] = encoded(fr["box"], code)
    elif zero_cell:
        r["cells"] = encoded(np.zeros((3, 3)), code)
    r["energies"] = encoded(fr["energy"]) if kind == "A" else fr["energy"]
    r["forces"] = encoded(fr["force"], code)
    if fr["virial"] is not None:
        r["virials"] = encoded(fr["virial"], code)
    return r


KINDS = "ABAABAB"


def good_frames():
    """The records of good.lmdb and, per kind, the frames as numbers."""
    records, frames, count = [], {"A": [], "B": []}, {"A": 0, "B": 0}
    for i, kind in enumerate(KINDS):
        fr = (frame_a if kind == "A" else frame_b)(count[kind])
        count[kind] += 1
        frames[kind].append(fr)
        records.append(record(fr, kind, zero_cell=(i == 1)))
    return records, frames


def good_metadata(records):
    return {
        "nframes": len(records),
        "frame_idx_fmt": "012d",
        "system_info": {"natoms": [1, 2], "formula": "test"},
        "type_map": ["O", "H"],
        "frame_nlocs": [len(np.frombuffer(r["atom_types"]["data"], dtype=r["atom_types"]["type"])) for r in records],
    }


def write_lmdb(path, metadata, records, fmt="012d", skip=()):
    """metadata (a dict, or raw bytes) under __metadata__ (None: no such key), record i under format(i, fmt)."""
    os.makedirs(path, exist_ok=True)
    env = lmdb.open(path, map_size=16 * 1024 * 1024)
    with env.begin(write=True) as txn:
        if metadata is not None:
            raw = metadata if isinstance(metadata, bytes) else msgpack.packb(metadata, use_bin_type=True)
            txn.put(b"__metadata__", raw)
        for i, r in enumerate(records):
            if i in skip:
                continue
            raw = r if isinstance(r, bytes) else msgpack.packb(r, use_bin_type=True)
            txn.put(format(i, fmt).encode(), raw)
    env.close()


def write_npy(path, frames, nopbc):
    os.makedirs(os.path.join(path, "set.000"), exist_ok=True)
    np.savetxt(os.path.join(path, "type.raw"), frames[0]["types"], fmt="%d")
    with open(os.path.join(path, "type_map.raw"), "w") as f:
        f.write("O\nH\n")
    if nopbc:
        open(os.path.join(path, "nopbc"), "w").close()

    def put(name, key):
        rows = [np.asarray(fr[key], dtype=np.float64).reshape(-1) for fr in frames]
        np.save(os.path.join(path, "set.000", name), np.stack(rows))

    put("coord.npy", "coord")
    put("energy.npy", "energy")
    put("force.npy", "force")
    if not nopbc:
        put("box.npy", "box")
        put("virial.npy", "virial")


def broken(records, frame, change):
    """A copy of records whose record `frame` has change(record) applied."""
    out = [dict(r) for r in records]
    change(out[frame])
    return out


def bad_cases(records, meta):
    """name -> (metadata, records, write options): each breaks one thing of good.lmdb."""
    nan_force = np.sin(np.arange(9).reshape(3, 3)).astype(np.float32)
    nan_force[2, 1] = np.nan
    meta_with = lambda **kw: {**meta, **kw}
    return {
        "no_metadata": (None, records, {}),
        "metadata_not_msgpack": (b"\xc1\xc1", records, {}),
        "nframes_text": (meta_with(nframes="seven"), records, {}),
        "missing_frame": (meta, records, {"skip": (5,)}),
        "key_format": (meta_with(frame_idx_fmt="%d"), records, {}),
        "type_map_numbers": (meta_with(type_map=[8, 1]), records, {}),
        "frame_nlocs_wrong": (meta_with(frame_nlocs=[3, 4, 3, 3, 4, 5, 4]), records, {}),
        "frame_not_msgpack": (meta, records[:2] + [b"\xc1garbage"] + records[3:], {}),
        "frame_not_map": (meta, records[:2] + [msgpack.packb([1, 2, 3])] + records[3:], {}),
        "no_coords": (meta, broken(records, 3, lambda r: r.pop("coords")), {}),
        "coords_short": (meta, broken(records, 3, lambda r: r.update(coords=encoded(np.zeros(8)))), {}),
        "unknown_dtype": (
            meta,
            broken(records, 0, lambda r: r.update(forces={**r["forces"], "type": "complex64"})),
            {},
        ),
        "data_length": (
            meta,
            broken(records, 0, lambda r: r.update(coords={**r["coords"], "data": r["coords"]["data"][:-2]})),
            {},
        ),
        "shape_mismatch": (
            meta,
            broken(records, 0, lambda r: r.update(coords={**r["coords"], "shape": [4, 3]})),
            {},
        ),
        "nan_force": (meta, broken(records, 2, lambda r: r.update(forces=encoded(nan_force))), {}),
        "negative_type": (
            meta,
            broken(records, 0, lambda r: r.update(atom_types=encoded(np.array([0, -1, 1], dtype=np.int32)))),
            {},
        ),
        "type_outside": (
            meta,
            broken(records, 0, lambda r: r.update(atom_types=encoded(np.array([0, 2, 1], dtype=np.int32)))),
            {},
        ),
        "float_types": (
            meta,
            broken(records, 0, lambda r: r.update(atom_types=encoded(np.array([0.0, 1.0, 1.0])))),
            {},
        ),
        "flat_cell": (
            meta,
            broken(records, 0, lambda r: r.update(cells=encoded(np.diag([10.0, 10.0, 0.0])))),
            {},
        ),
        "no_energy": (meta, broken(records, 1, lambda r: r.pop("energies")), {}),
    }


def main(out):
    records, frames = good_frames()
    meta = good_metadata(records)
    write_lmdb(os.path.join(out, "good.lmdb"), meta, records)
    write_npy(os.path.join(out, "npy", "sys_a"), frames["A"], nopbc=False)
    write_npy(os.path.join(out, "npy", "sys_b"), frames["B"], nopbc=True)

    plain = []
    for fr in frames["A"]:
        r = record(fr, "A")
        r = {k: ({**v, "type": v["type"]} if isinstance(v, dict) else v) for k, v in r.items()}
        for k in ("atom_types", "coords", "forces"):
            r[k].pop("shape")
        r["coords"] = {"type": ">f8", "data": fr["coord"].astype(">f8").tobytes()}
        plain.append(r)
    write_lmdb(os.path.join(out, "plain.lmdb"), {"nframes": len(plain)}, plain)

    for name, (m, recs, opts) in bad_cases(records, meta).items():
        write_lmdb(os.path.join(out, "bad", name + ".lmdb"), m, recs, **opts)


if __name__ == "__main__":
    main(sys.argv[1])
