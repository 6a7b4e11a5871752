#!/usr/bin/env bash
# Ordinary mistakes and damaged data through the `deepkf` command line: each one gives one line
# "deepkf: error: ..." naming the file, field and value, with exit status 1 (never "internal error", never a
# silently smaller dataset), and `deepkf data summary` ends with the frames read against those found.
# Usage: cli_bad_input.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-bad-input.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
source "$source_dir/tests/support/cli_checks.sh"

# input.json for a small silicon model; $1 is a python expression that edits the dict d.
make_input() {
  python3 - "$1" "$source_dir" >"$work/input.json" <<'EOF'
import json, sys
d = {"model": {"type_map": ["Si"],
               "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                              "axis_neuron": 2, "type_one_side": True},
               "fitting_net": {"neuron": [8, 8]}},
     "optimizer": {"type": "RLEKF", "kf_blocksize": 256, "p0": 10.0},
     "training": {"training_data": {"systems": [sys.argv[2] + "/data/si_cp2k.h5"]}, "numb_steps": 2,
                  "disp_freq": 1, "save_freq": 2, "num_threads": 1}}
exec(sys.argv[1])
print(json.dumps(d))
EOF
}

# An npy system folder of two Si atoms in a 5 A cube, two frames, written with the standard library only.
make_npy_system() {
  python3 - "$1" <<'EOF'
import os, struct, sys
root = sys.argv[1]
os.makedirs(root + "/set.000", exist_ok=True)
open(root + "/type.raw", "w").write("0\n0\n")
open(root + "/type_map.raw", "w").write("Si\n")
def npy(path, shape, values):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % dims
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%dd" % len(values), *values))
npy(root + "/set.000/coord.npy", (2, 6), [0, 0, 0, 1.2, 1.2, 1.2, 0, 0, 0.1, 1.2, 1.2, 1.3])
npy(root + "/set.000/box.npy", (2, 9), [5, 0, 0, 0, 5, 0, 0, 0, 5] * 2)
npy(root + "/set.000/energy.npy", (2,), [-10.8, -10.7])
npy(root + "/set.000/force.npy", (2, 6), [0.1, 0, 0, -0.1, 0, 0] * 2)
EOF
}

# 1. Data summary: frames read against frames found.
"$deepkf" data summary "$source_dir/data/si_cp2k.h5" --rcut 4 >"$work/out" 2>&1 || fail "summary of si_cp2k.h5: $(tail -3 "$work/out")"
last=$(tail -1 "$work/out")
[ "$last" = "frames read: 38 of 38 found in the files" ] || fail "summary's last line: '$last'"

# 2. A folder with frames but no type.raw inside a folder of systems (formerly skipped without a word).
make_npy_system "$work/systems/good"
make_npy_system "$work/systems/untyped"
rm "$work/systems/untyped/type.raw"
expect_error "folder without type.raw" "$work/systems/untyped holds frames (set.000) but no type.raw" \
  "$deepkf" data summary "$work/systems"
rm -rf "$work/systems/untyped"
"$deepkf" data summary "$work/systems" --allow-suspicious-units >"$work/out" 2>&1 ||
  fail "summary of a good npy folder: $(tail -3 "$work/out")"
[ "$(tail -1 "$work/out")" = "frames read: 2 of 2 found in the files" ] || fail "npy summary: $(tail -1 "$work/out")"

# 3. A non-digit in an .npy header's shape (formerly std::stoll's exception).
cp -r "$work/systems/good" "$work/badshape"
python3 - "$work/badshape/set.000/coord.npy" <<'EOF'
import sys
p = sys.argv[1]
b = open(p, "rb").read()
open(p, "wb").write(b.replace(b"(2, 6)", b"(2, x)"))
EOF
expect_error "npy shape with a letter" "$work/badshape/set.000/coord.npy: bad shape (2, x) in npy header" \
  "$deepkf" data summary "$work/badshape"

# 4. Two atoms 0.05 A apart through the periodic boundary, in the summary and at training set-up.
cat >"$work/close.xyz" <<'EOF'
2
Lattice="5 0 0 0 5 0 0 0 5" Properties=species:S:1:pos:R:3:forces:R:3 energy=-10.8
Si 0 0 0 0.1 0 0
Si 1.2 1.2 1.2 -0.1 0 0
2
Lattice="5 0 0 0 5 0 0 0 5" Properties=species:S:1:pos:R:3:forces:R:3 energy=-10.7
Si 0 0 0 0.1 0 0
Si 0 0 4.95 -0.1 0 0
EOF
close_message="$work/close.xyz:Si2 frame 1: atoms 0 and 1 (a periodic image of 1) are 0.05 A apart, closer than 0.1 A"
expect_error "close atoms in data summary" "$close_message" "$deepkf" data summary "$work/close.xyz"
make_input "d['training']['training_data']['systems'] = ['$work/close.xyz']"
expect_error "close atoms at training set-up" "$close_message" \
  "$deepkf" train "$work/input.json" -o "$work/run_close" --no-progress

# 5. An extended XYZ count line of 99999999999 (formerly std::bad_alloc).
printf '99999999999\nenergy=-1\nSi 0 0 0\n' >"$work/count.xyz"
expect_error "absurd atom count" "$work/count.xyz line 1: atom count 99999999999 is impossible" \
  "$deepkf" data summary "$work/count.xyz"

# 6. Input values: wrong types, overflowing numbers, fractions for integers, duplicate elements.
make_input "d['model'] = None"
expect_error "model null" "'model' in $work/input.json is null: must be an object" \
  "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
make_input "d['model'] = 3"
expect_error "model a number" "'model' in $work/input.json is 3: must be an object" \
  "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
make_input "d['training']['numb_steps'] = 1e30"
expect_error "numb_steps 1e30" \
  "'training.numb_steps' in $work/input.json is 1e+30: must be an integer from -9223372036854775808 to 9223372036854775807" \
  "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
make_input "d['model']['descriptor']['axis_neuron'] = 0.5"
expect_error "axis_neuron 0.5" "'model.descriptor.axis_neuron' in $work/input.json is 0.5: must be an integer" \
  "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
make_input "d['model']['type_map'] = ['Si', 'Si']"
expect_error "duplicate type_map entry" \
  "model key 'model.type_map' in $work/input.json names 'Si' twice (entries 0 and 1): each element once" \
  "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
expect_error "duplicate --type-map entry" "the type map (Si Si) names 'Si' twice" \
  "$deepkf" data summary "$source_dir/data/si_cp2k.h5" --type-map Si,Si

# 7. sel smaller than the neighbour counts: a warning with the number of neighbours cut, training goes on.
make_input "d['model']['descriptor']['sel'] = [4]; d['training']['numb_steps'] = 1"
"$deepkf" train "$work/input.json" -o "$work/run_sel" --no-progress >"$work/out" 2>&1 ||
  fail "training with sel [4]: $(tail -3 "$work/out")"
grep -q "sel \[4\] is smaller than the training data's neighbour counts within rcut 4 A" "$work/out" ||
  fail "no sel warning: $(cat "$work/out")"
grep -q "neighbours (.*%) in .* frames are cut" "$work/out" || fail "sel warning without counts: $(cat "$work/out")"
echo "ok: sel warning: $(grep -o "sel \[4\] is smaller.*" "$work/out")"

# 8. --restart when numb_steps is not above the checkpoint's step (formerly an internal error).
make_input "pass"
"$deepkf" train "$work/input.json" -o "$work/run_done" --no-progress >"$work/out" 2>&1 ||
  fail "training 2 steps: $(tail -3 "$work/out")"
expect_error "restart with nothing left" \
  "checkpoint $work/run_done/model.ckpt is at step 2 and 'training.numb_steps' in $work/input.json is 2: nothing is left to train; set numb_steps above 2" \
  "$deepkf" train "$work/input.json" -o "$work/run_done" --restart "$work/run_done/model.ckpt" --no-progress

# 9. --restart with an input that describes another model (formerly: the checkpoint's model, silently).
make_input "d['model']['descriptor']['rcut'] = 4.5; d['model']['fitting_net']['neuron'] = [8, 8, 8]; d['training']['numb_steps'] = 4"
expect_error "restart with another model" \
  "differs from that of checkpoint '$work/run_done/model.ckpt' (input vs checkpoint: descriptor.rcut: 4.5 vs 4.0; fitting_net.neuron.2: 8 vs none)" \
  "$deepkf" train "$work/input.json" -o "$work/run_done" --restart "$work/run_done/model.ckpt" --no-progress

# 10. Data with an element the type map lacks.
make_input "d['model']['type_map'] = ['O', 'H']"
expect_error "data with an element not in type_map" "Si" \
  "$deepkf" train "$work/input.json" -o "$work/run_types" --no-progress

# 11. Damaged files and files given in each other's place (run_done from case 8).
expect_error "checkpoint given as a model" \
  "'$work/run_done/model.ckpt' is a training checkpoint, not a model file; export it first" \
  "$deepkf" test -m "$work/run_done/model.ckpt" -s "$source_dir/data/si_cp2k.h5"
expect_error "model given to export" "'$work/run_done/model.pt' is a model file, not a training checkpoint" \
  "$deepkf" export "$work/run_done/model.pt" -o "$work/exported.pt"
# One bit flipped in every 4096 bytes of the model file and of the checkpoint: wherever they land (tensor
# data, metadata, archive structure), loading must stop and say the file is corrupt.
flip_bits() {
  python3 -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read())
for i in range(100, len(d), 4096): d[i] ^= 0x04
open(sys.argv[2], "wb").write(bytes(d))' "$1" "$2"
}
flip_bits "$work/run_done/model.pt" "$work/flipped.pt"
expect_error "model file with flipped bits" "is corrupt" "$deepkf" info "$work/flipped.pt"
flip_bits "$work/run_done/model.ckpt" "$work/flipped.ckpt"
expect_error "checkpoint with flipped bits" "is corrupt" "$deepkf" export "$work/flipped.ckpt" -o "$work/x.pt"

# 12. Damage in the covariance blocks only: the export succeeds and says that a restart would fail.
python3 -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[-100] ^= 0x04
open(sys.argv[2], "wb").write(bytes(d))' "$work/run_done/model.ckpt" "$work/cov.ckpt"
expect "export with a damaged covariance" "warning: the checkpoint's Kalman covariance is damaged" \
  "$deepkf" export "$work/cov.ckpt" -o "$work/cov.pt"
"$deepkf" info "$work/cov.pt" >"$work/out" 2>&1 || fail "the model exported from cov.ckpt: $(tail -3 "$work/out")"

# 13. Command-line files and output folders.
expect_error "missing input file" "deepkf: error: INPUT: File does not exist: $work/none.json" \
  "$deepkf" train "$work/none.json"
make_input "pass"
cp "$work/input.json" "$work/input.before"
expect_error "-o naming the input file" "-o $work/input.json names the input file $work/input.json" \
  "$deepkf" train "$work/input.json" -o "$work/input.json" --no-progress
cmp -s "$work/input.json" "$work/input.before" || fail "-o naming the input file changed the input"
# A second run into a folder that a run holds (flock(1) takes the same lock) stops before writing anything.
mkdir -p "$work/run_busy"
flock "$work/run_busy/.deepkf.lock" sleep 60 &
holder=$!
sleep 0.5
expect_error "output folder in use" "output folder $work/run_busy is in use by" \
  "$deepkf" train "$work/input.json" -o "$work/run_busy" --no-progress
[ -e "$work/run_busy/train.log" ] && fail "the refused run wrote $work/run_busy/train.log"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# The temporary file of a checkpoint write that was killed is removed by the next run into the folder.
mkdir -p "$work/run_tmp"
echo partial >"$work/run_tmp/.model.ckpt.tmp-123456"
expect "unfinished files removed" "removed 1 unfinished file(s) of a run that was killed while writing: .model.ckpt.tmp-123456" \
  "$deepkf" train "$work/input.json" -o "$work/run_tmp" --no-progress
[ -e "$work/run_tmp/.model.ckpt.tmp-123456" ] && fail "the unfinished checkpoint file is still there"

# 14. Values and systems that used to pass silently.
for seed in '"x"' '[]'; do
  make_input "d['model']['fitting_net']['seed'] = $seed"
  expect_error "fitting_net.seed $seed" "model key 'model.fitting_net.seed' must be an integer, got $seed" \
    "$deepkf" train "$work/input.json" -o "$work/run" --no-progress
done
python3 -c 'import sys
open(sys.argv[1], "wb").write(b"2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3 energy=-10.8\n"
                              b"Si 0 0 0\nSi 1.2 1.2 1.5\x007\n")' "$work/nul.xyz"
expect_error "NUL byte inside a number" "'1.5\x007' is not a number" "$deepkf" data summary "$work/nul.xyz"
python3 - "$work/empty" <<'EOF2'
import os, struct, sys
root = sys.argv[1]
os.makedirs(root + "/set.000", exist_ok=True)
open(root + "/type.raw", "w").write("0\n0\n")
open(root + "/type_map.raw", "w").write("Si\n")
for name, width in (("coord", 6), ("box", 9), ("energy", 0), ("force", 6)):
    dims = "0," if width == 0 else "0, %d" % width
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % dims
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open("%s/set.000/%s.npy" % (root, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
EOF2
if "$deepkf" data summary "$work/empty" >"$work/out" 2>&1; then
  expect_error "deepkf test on a system without frames" "the systems given have no frames: nothing to test" \
    "$deepkf" test -m "$work/run_done/model.pt" -s "$work/empty"
  expect "deepkf test with one system without frames" "warning: system $work/empty has no frames; left out" \
    "$deepkf" test -m "$work/run_done/model.pt" -s "$work/empty" -s "$source_dir/data/si_cp2k.h5"
  make_input "d['training']['training_data']['systems'] = ['$work/empty']"
  expect_error "training system without frames" "training system $work/empty" \
    "$deepkf" train "$work/input.json" -o "$work/run_empty" --no-progress
else
  ok "a system without frames is refused when read: $(grep "deepkf: error" "$work/out" | head -1)"
fi

[ $failures -eq 0 ] || exit 1
echo "every bad input gave one error line and status 1"
