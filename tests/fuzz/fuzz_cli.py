#!/usr/bin/env python3
"""Command-line fuzzing: seeded mutants of valid deepkf command lines, each run in its own process.

Every mutant must end as one of: accepted (status 0), or a clean error (status 1 with one line on stderr
that starts with "deepkf: error:" or "deepkf <command>: error:"). Anything else is a finding: another
status, a signal, a hang, a stack trace or "internal error" in the output.

    fuzz_cli.py DEEPKF SOURCE_DIR [--mutants N] [--seed S] [--timeout T] [--report FILE]

The seeds are command lines of every subcommand that runs in seconds on the project's data (a two-step
training made first). Mutations: an argument dropped, repeated, swapped with its neighbour, replaced by an
extreme or empty value, or misspelt; an unknown option or a second positional argument added.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

EXTREMES = ["", "-1", "0", "1e309", "nan", "-inf", "99999999999", "x", "--", "-", "/nonexistent/file",
            "\x7f", "é", "a b", "--help", "-o"]


def seed_lines(model, ckpt, run_dir, data_h5, inp, work):
    """Valid command lines, one per subcommand and common option set."""
    out = os.path.join(work, "o")
    return [
        ["data", "summary", "--rcut", "5.0", data_h5],
        ["neighbor-stat", "-s", data_h5, "-r", "5.0", "-t", "Si"],
        ["info", model],
        ["test", "-m", model, "-s", data_h5, "-n", "2", "-o", out],
        ["test", "-m", model, "--train-data", inp, "-b", "4", "-o", out, "--shuffle-test", "-r", "3"],
        ["export", ckpt, "-o", os.path.join(work, "e.pt")],
        ["freeze", "-c", run_dir, "-o", os.path.join(work, "f.pt")],
        ["compress", "-i", model, "-o", os.path.join(work, "c.pt")],
        ["change-bias", model, "-s", data_h5, "-o", os.path.join(work, "b.pt")],
        ["plan", inp, "--np", "2"],
        ["uncertainty", "-c", ckpt, "-s", data_h5, "-o", os.path.join(work, "u")],
        ["model-devi", "-m", model, model, "-s", data_h5, "-o", os.path.join(work, "md.out")],
        ["train", inp, "-o", os.path.join(work, "t"), "--no-progress"],
        ["convert", data_h5, "-o", os.path.join(work, "conv.h5")],
        ["-v", "WARNING", "info", model],
    ]


def mutate(line, rng):
    line = list(line)
    kind = rng.randrange(8)
    i = rng.randrange(len(line))
    if kind == 0:
        del line[i]
    elif kind == 1:
        line.insert(i, line[i])
    elif kind == 2 and len(line) > 1:
        j = min(i + 1, len(line) - 1)
        line[i], line[j] = line[j], line[i]
    elif kind == 3:
        line[i] = rng.choice(EXTREMES)
    elif kind == 4 and line[i]:
        k = rng.randrange(len(line[i]))
        c = rng.choice("abcdefghijklmnopqrstuvwxyz-_.0")
        line[i] = line[i][:k] + c + line[i][k + 1:] if rng.random() < 0.5 else line[i][:k] + line[i][k + 1:]
    elif kind == 5:
        line.insert(i, rng.choice(["--unknown", "-Z", "--threads", "--np", "--restart", "--rcut"]))
    elif kind == 6:
        line.append(rng.choice(EXTREMES[1:]))
    else:
        line[i] = line[i] + rng.choice(EXTREMES)
    return line


def classify(proc_status, stdout, stderr):
    text = stdout + stderr
    if "internal error" in text or "terminate called" in text or "Traceback" in text \
            or "Exception raised from" in text:
        return "internal error"
    if proc_status < 0:
        return "crash"
    if proc_status == 0:
        return "accepted"
    errors = [l for l in stderr.splitlines() if l.startswith("deepkf") and ": error:" in l]
    if proc_status == 1 and len(errors) == 1:
        return "clean error"
    return f"status {proc_status}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("deepkf")
    ap.add_argument("source_dir")
    ap.add_argument("--mutants", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--report", default="")
    args = ap.parse_args()
    deepkf = os.path.abspath(args.deepkf)
    data_h5 = os.path.join(os.path.abspath(args.source_dir), "data", "si_cp2k.h5")
    work = tempfile.mkdtemp(prefix="deepkf-fuzz-cli.")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    try:
        inp = os.path.join(work, "in.json")
        json.dump({"model": {"type_map": ["Si"],
                             "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [32],
                                            "neuron": [4, 8], "axis_neuron": 2},
                             "fitting_net": {"neuron": [8, 8]}},
                   "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0},
                   "training": {"training_data": {"systems": [data_h5]}, "validation_fraction": 0.2,
                                "numb_steps": 2, "disp_freq": 1, "save_freq": 2, "num_threads": 1}},
                  open(inp, "w"))
        run_dir = os.path.join(work, "run")
        subprocess.run([deepkf, "train", inp, "-o", run_dir, "--no-progress"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        model, ckpt = os.path.join(run_dir, "model.pt"), os.path.join(run_dir, "model.ckpt")
        mwork = os.path.join(work, "m")
        seeds = seed_lines(model, ckpt, run_dir, data_h5, inp, mwork)
        # Every seed must run as it is: a mutant of a broken seed tests nothing.
        for line in seeds:
            shutil.rmtree(mwork, ignore_errors=True)
            os.makedirs(mwork)
            p = subprocess.run([deepkf] + line, capture_output=True, text=True, errors="replace",
                               timeout=600, env=env, cwd=mwork, stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                print(f"seed command failed: deepkf {' '.join(line)}: {p.stderr.strip()[-300:]}")
                return 2
        rng = random.Random(args.seed)
        counts, findings = {}, []
        for n in range(args.mutants):
            line = mutate(rng.choice(seeds), rng)
            if rng.random() < 0.3:
                line = mutate(line, rng)
            shutil.rmtree(mwork, ignore_errors=True)
            os.makedirs(mwork)
            try:
                p = subprocess.run([deepkf] + line, capture_output=True, text=True, errors="replace",
                                   timeout=args.timeout, env=env, cwd=mwork, stdin=subprocess.DEVNULL)
                verdict = classify(p.returncode, p.stdout, p.stderr)
                tail = (p.stderr.strip().splitlines() or [""])[-1][:200]
            except subprocess.TimeoutExpired:
                verdict, tail = "hang", ""
            counts[verdict] = counts.get(verdict, 0) + 1
            if verdict not in ("accepted", "clean error"):
                findings.append((verdict, line, tail))
        order = ["accepted", "clean error"] + sorted(k for k in counts if k not in ("accepted", "clean error"))
        report = [f"fuzz_cli --mutants {args.mutants} --seed {args.seed}", "",
                  "| mutants | " + " | ".join(order) + " |", "|---|" + "---|" * len(order),
                  f"| {args.mutants} | " + " | ".join(str(counts.get(k, 0)) for k in order) + " |"]
        for verdict, line, tail in findings:
            report.append(f"- {verdict}: deepkf {' '.join(repr(a) for a in line)}: {tail}")
        text = "\n".join(report) + "\n"
        print(text)
        if args.report:
            open(args.report, "w").write(text)
        return 1 if findings else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
