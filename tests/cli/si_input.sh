# The small training input the command-line scripts train on (sourced): silicon, the project's CP2K frames,
# 2 steps.
# write_si_input FILE: writes it, with the data under $source_dir.
write_si_input() {
  cat >"$1" <<JSON
{"model": {"type_map": ["Si"],
           "descriptor": {"type": "se_e2_a", "rcut": 4.0, "rcut_smth": 1.0, "sel": [40], "neuron": [4, 8],
                          "axis_neuron": 2, "type_one_side": true},
           "fitting_net": {"neuron": [8, 8]}},
 "training": {"training_data": {"systems": ["$source_dir/data/si_cp2k.h5"]}, "numb_steps": 2,
              "disp_freq": 1, "save_freq": 2, "num_threads": 1}}
JSON
}
