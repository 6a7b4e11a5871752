#!/usr/bin/env python3
"""One lease's results as one JSON document: every figure of scripts/gpu_check.sh's output folders.

    python3 scripts/gpu_results.py --commit C --date D OUT_DIR [OUT_DIR ...] > bench/results/<lease>/lease.json

OUT_DIR: the folders `gpu_check.sh run` wrote (a lease's first run and, on the same machine, its later
ones, such as the suite phase alone). Reads gpu_check.log (machine, software), bench_kalman.txt (Kalman
step against a copy pass; joint update), train.tar.gz (learning curves: time to force accuracy),
bench_lammps.txt (MD throughput, per device), mpi_scaling.txt (data-parallel training) and tests.txt (test
programs and ctest). What a folder lacks is left out of the document.
"""
import argparse
import io
import json
import re
import sys
import tarfile
from pathlib import Path

FORCE_TARGETS = (0.3, 0.2, 0.15, 0.10, 0.05)  # eV/A, validation force RMSE


def machine(log: str) -> dict:
    m = {}
    gpu = re.search(r"\|\s+\d+\s+(NVIDIA [^|]*?)\s{2,}", log)
    if gpu:
        m["gpu"] = gpu.group(1).strip()
    mem = re.search(r"/\s*(\d+)MiB \|", log)
    if mem:
        m["gpu_memory_mib"] = int(mem.group(1))
    for key, pattern in (("driver", r"Driver Version: (\S+)"), ("cuda", r"CUDA Version: (\S+)"),
                         ("nvcc", r"Cuda compilation tools, release [^,]*, (V\S+)"),
                         ("torch", r"^torch (\S+) cuda"), ("cpu", r"model name\s*: (.*)"),
                         ("cmake", r"cmake version ([0-9.]+)")):
        found = re.search(pattern, log, re.M)
        if found:
            m[key] = found.group(1).strip()
    cores = re.search(r"^(\d+) cores, (\d+) GiB", log, re.M)
    if cores:
        m["cores"], m["memory_gib"] = int(cores.group(1)), int(cores.group(2))
    return m


KALMAN_COLUMNS = ("b", "nb", "dtype", "P_MiB", "step_ms", "pass_ms", "step_per_pass", "dense_ms",
                  "dense_per_step", "GBps_step", "joint_ms", "joint_per_step")


def kalman(text: str) -> dict:
    """bench_kalman's rows (b, nb, dtype, ...): the scalar step, and where timed the joint update of m."""
    out = {"scalar": [], "joint": []}
    m = re.search(r"joint/step \(m = (\d+)\)", text)
    if m:
        out["joint_measurements"] = int(m.group(1))
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 10 and words[0].isdigit() and words[2] in ("float64", "float32"):
            row = {k: (v if k == "dtype" else float(v)) for k, v in zip(KALMAN_COLUMNS, words)}
            out["joint" if "joint_ms" in row else "scalar"].append(row)
    return out


def lcurve(text: str) -> dict:
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    rows = [[float(x) for x in r] for r in rows]
    if not rows:
        return {}
    step, wall = rows[-1][0], rows[-1][-1]
    curve = {"steps": int(step), "wall_s": wall, "s_per_step": wall / step if step else None,
             "rmse_f_val_first": rows[0][3], "rmse_f_val_last": rows[-1][3],
             "rmse_f_val_best": min(r[3] for r in rows), "rmse_e_val_last": rows[-1][1]}
    for target in FORCE_TARGETS:
        hit = next((r for r in rows if r[3] <= target), None)
        curve[f"first_at_or_below_{target:g}_eV_per_A"] = (
            {"step": int(hit[0]), "wall_s": hit[-1]} if hit else None)
    return curve


def training(archive: Path) -> dict:
    runs = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name.lstrip("./")
            if name.endswith("/lcurve.out"):
                text = tar.extractfile(member).read().decode()
                runs.setdefault(name.split("/")[0], {}).update(lcurve(text))
            elif name.endswith("/train.log"):
                text = tar.extractfile(member).read().decode()
                run = runs.setdefault(name.split("/")[0], {})
                for key, pattern in (("optimizer", r"optimizer (.*?)(;|$)"), ("p0", r"\] (p0 .*)"),
                                     ("step_split", r"(time: [^\n]*)")):
                    found = re.findall(pattern, text, re.M)
                    if found:
                        value = found[-1]
                        run[key] = (value[0] if isinstance(value, tuple) else value).strip()
    return runs


def lammps(text: str) -> list:
    rows, device = [], None
    for line in text.splitlines():
        if line.startswith("device:"):
            device = line.split(":", 1)[1].strip()
            continue
        words = line.split()
        if len(words) >= 9 and words[0].startswith("water") and words[1].isdigit():
            rows.append({"device": device, "system": words[0], "np": int(words[1]), "atoms": int(words[2]),
                         "dtype": words[3], "model": words[4], "steps": int(words[5]),
                         "atom_steps_per_s": float(words[6])})
    return rows


def mpi_scaling(text: str) -> list:
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0].isdigit():
            rows.append({"ranks": int(cells[0]), "training_step_ms": float(cells[1]),
                         "kalman_step_ms": float(cells[2]), "filter_update_ms": float(cells[3]),
                         "speed_up": float(cells[4]), "parallel_efficiency": cells[5]})
    return rows


def tests(text: str) -> dict:
    out = {}
    results = re.findall(r"Test\s+#\d+: (.*?) \.{3,}\s*(\**\s*\w[\w :]*?)\s+[\d.]+ sec", text)
    if results:
        out["ctest_run"] = len(results)
        out["ctest_passed"] = sum(1 for _, r in results if r == "Passed")
        out["ctest_not_passed"] = {name: r.strip("* ") for name, r in results if r != "Passed"}
    catch = re.findall(r"^(All tests passed|test cases:.*)$", text, re.M)
    if catch:
        out["catch_summaries"] = catch
    total = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
    if total:
        out["ctest_summary"] = total.group(0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    doc = {"date": args.date, "commit": args.commit, "runs": []}
    for d in args.dirs:
        run = {"folder": d.name}
        log = (d / "gpu_check.log").read_text() if (d / "gpu_check.log").exists() else ""
        phases = re.search(r"phases:(.*)", log)
        if phases:
            run["phases"] = phases.group(1).split()
        if "machine" not in doc and log:
            doc["machine"] = machine(log)
        readers = (("bench_kalman.txt", "kalman_step", kalman), ("bench_lammps.txt", "lammps", lammps),
                   ("mpi_scaling.txt", "mpi_scaling", mpi_scaling), ("tests.txt", "tests", tests))
        for name, key, read in readers:
            if (d / name).exists():
                run[key] = read((d / name).read_text())
        if (d / "train.tar.gz").exists():
            run["training"] = training(d / "train.tar.gz")
        doc["runs"].append(run)
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
