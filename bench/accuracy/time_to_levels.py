#!/usr/bin/env python3
"""Time to accuracy from bench_time_to_accuracy's table.md files.

usage: time_to_levels.py LEVELS TABLE.md [TABLE.md ...]
  LEVELS: validation force RMSE levels in eV/A, comma-separated (e.g. 0.25,0.15,0.13)

Prints one markdown row per run: the epochs and training wall time of its last point, its last force
RMSE, and for each level the training wall time and epoch of its first point at or below that level
("-" where the run never got there). Runs of several tables are listed
in the order met; a run name met twice keeps its first table's rows.
"""
import sys


def read_table(path):
    runs = {}
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 5 or cells[0] in ("optimizer", "---"):
                continue
            name, epoch, wall, _, rmse_f = cells
            runs.setdefault(name, []).append((float(epoch), float(wall), float(rmse_f) / 1000.0))
    return runs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    levels = [float(x) for x in sys.argv[1].split(",")]
    runs = {}
    for path in sys.argv[2:]:
        for name, points in read_table(path).items():
            runs.setdefault(name, points)
    head = "| run | epochs | wall (s) | last rmse_f (eV/A) | " + " | ".join(f"to {x:g}" for x in levels) + " |"
    print(head)
    print("|---" * (4 + len(levels)) + "|")
    for name, points in runs.items():
        cells = []
        for level in levels:
            hit = next((p for p in points if p[2] <= level), None)
            cells.append("-" if hit is None else f"{hit[1]:.1f} s ({hit[0]:.2f})")
        epoch, wall, last = points[-1]
        print(f"| {name} | {epoch:g} | {wall:.1f} | {last:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
