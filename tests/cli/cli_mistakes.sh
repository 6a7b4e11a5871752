#!/usr/bin/env bash
# Mistakes on the command line: each is one line `deepkf: error: ...` on stderr, nothing on stdout, status
# 1, with the nearest command or option when one is close; --help and --version keep status 0. Then dp's
# options that every command takes: -l FILE (a copy of what is printed, the log included), -v LEVEL, and
# the backend choice (--pt), before or after the command.
# Usage: cli_mistakes.sh DEEPKF SOURCE_DIR
set -u
deepkf=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/deepkf-mistakes.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$source_dir/tests/support/cli_checks.sh"
source "$source_dir/tests/cli/si_input.sh"
cd "$work" || exit 1

# mistake NAME LINE ARGS...: deepkf ARGS prints exactly LINE on stderr, nothing on stdout, and exits with 1.
mistake() {
  local name=$1 line=$2
  shift 2
  "$deepkf" "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ $rc -ne 1 ]; then
    fail "$name: exit status $rc, expected 1: $(head -3 "$work/stderr")"
  elif [ -s "$work/stdout" ]; then
    fail "$name: printed on stdout: $(head -3 "$work/stdout")"
  elif [ "$(wc -l <"$work/stderr")" -ne 1 ]; then
    fail "$name: $(wc -l <"$work/stderr") lines on stderr, expected 1: $(head -3 "$work/stderr")"
  elif [ "$(cat "$work/stderr")" != "$line" ]; then
    fail "$name: '$(cat "$work/stderr")', expected '$line'"
  else
    ok "$name: $line"
  fi
}

commands="data, convert, info, train, test, export, freeze, compress, change-bias, neighbor-stat, plan, \
uncertainty, model-devi, learn"
mistake "misspelt command" 'deepkf: error: unknown command "trian"; did you mean "train"?' trian
mistake "command with a letter too many" 'deepkf: error: unknown command "trainn"; did you mean "train"?' trainn
mistake "command with letters swapped" 'deepkf: error: unknown command "tset"; did you mean "test"?' tset
mistake "command in capitals" 'deepkf: error: unknown command "Train"; did you mean "train"?' Train input.json
mistake "nothing like a command" "deepkf: error: unknown command \"xyzzy\"; the commands are $commands" xyzzy
mistake "no command" "deepkf: error: deepkf needs a command: $commands"
mistake "misspelt sub-command" 'deepkf: error: unknown command "sumary" for deepkf data; did you mean "summary"?' \
  data sumary x.h5
mistake "misspelt option" 'deepkf: error: unknown option --modle for deepkf test; did you mean --model?' \
  test --modle m.pt
mistake "misspelt option with =" 'deepkf: error: unknown option --modle for deepkf test; did you mean --model?' \
  test --modle=m.pt -s x.h5
mistake "unknown option before a missing file" \
  'deepkf: error: unknown option --foo for deepkf train (deepkf train --help lists its options)' train --foo x.json
mistake "unknown short option" 'deepkf: error: unknown option -x for deepkf info (deepkf info --help lists its options)' \
  info -x m.pt
mistake "misspelt help" 'deepkf: error: unknown option --hlep for deepkf; did you mean --help?' --hlep
mistake "misspelt dp option" 'deepkf: error: unknown option --log-pth for deepkf train; did you mean --log-path?' \
  train in.json --log-pth x.log
mistake "missing input" 'deepkf: error: INPUT is required (deepkf train --help shows the usage)' train
mistake "option without its value" \
  'deepkf: error: --model: 1 required TEXT:FILE missing (deepkf test --help shows the usage)' test -m
mistake "missing file" 'deepkf: error: INPUT: File does not exist: missing.json' train missing.json
mistake "an argument too many" 'deepkf: error: unexpected argument "extra" for deepkf info' info "$deepkf" extra
mistake "bad log level" 'deepkf: error: --log-level: LOUD not in {DEBUG,3,INFO,2,WARNING,1,ERROR,0}' \
  -v LOUD info "$deepkf"

# --help and --version print as before, with status 0.
expect "deepkf --help" "Subcommands:" "$deepkf" --help
expect "deepkf train --help" "INPUT" "$deepkf" train --help
expect "deepkf --version" "deepkf 0.1.0" "$deepkf" --version
expect "deepkf --help lists dp's options" "-l,--log-path" "$deepkf" --help

write_si_input input.json
# dp train input.json -l FILE -v LEVEL: the log's lines in FILE, as in train.log; the summary too.
expect "train -l run.log -v INFO" "finished after 2 steps" "$deepkf" train input.json -l run.log -v INFO -o run
if [ -s run/train.log ] && diff <(grep '^\[' run.log) run/train.log >/dev/null; then
  ok "-l: run.log holds the $(wc -l <run/train.log) lines of train.log"
else
  fail "-l: run.log and run/train.log differ: $(diff <(grep '^\[' run.log) run/train.log | head -3)"
fi
grep -q "^finished after 2 steps" run.log && ok "-l: the summary is in run.log too" ||
  fail "-l: no summary in run.log: $(tail -3 run.log)"
# dp's global options before the command; --pt is accepted with a note; -v ERROR keeps the log off stderr
# and out of the -l file (as dp's level applies to both), while train.log keeps every line.
"$deepkf" --pt -v ERROR -l quiet.log train input.json -o quiet >quiet.out 2>quiet.err
rc=$?
if [ $rc -ne 0 ]; then
  fail "--pt -v ERROR -l before the command: status $rc: $(tail -3 quiet.err)"
elif grep -q '^\[' quiet.err; then
  fail "-v ERROR: log lines on stderr: $(head -2 quiet.err)"
elif ! grep -q "^note: --pt changes nothing" quiet.out; then
  fail "--pt: no note in: $(head -3 quiet.out)"
elif grep -q '^\[' quiet.log; then
  fail "-v ERROR -l: log lines in quiet.log, as dp's -v applies to its -l file too: $(grep -m2 '^\[' quiet.log)"
elif ! grep -q "training from step" quiet/train.log; then
  fail "-v ERROR: train.log lost its lines: $(head -3 quiet/train.log)"
else
  ok "--pt -v ERROR -l before the command: a note, no log on stderr or in quiet.log, train.log whole"
fi
# -l naming the run's own train.log on a restart: the earlier lines stay, each line once.
sed 's/"numb_steps": 2/"numb_steps": 4/' input.json >longer.json
before=$(wc -l <run/train.log)
expect "restart with -l run/train.log" "is the command's own log" \
  "$deepkf" train longer.json -r run/model.ckpt -o run -l run/train.log
after=$(wc -l <run/train.log)
steps=$(grep -c "step       3 " run/train.log)
[ "$after" -gt "$before" ] && [ "$steps" -eq 1 ] && ok "-l train.log: $before lines, then $after" ||
  fail "-l train.log: $before lines before the restart, $after after, step 3 logged $steps times"
# Any command: what deepkf test prints, in the file.
"$deepkf" test -m run/model.pt -s "$source_dir/data/si_cp2k.h5" -n 2 -o t -l test.log >test.out 2>&1 &&
  cmp -s test.out test.log && grep -q "all systems" test.log && ok "test -l: test.log holds what was printed" ||
  fail "test -l: test.log differs from the console: $(diff test.out test.log | head -3)"
mistake "-l into a missing folder" "deepkf: error: cannot write the log file $work/no/x.log (-l): No such file or directory" \
  info "$deepkf" -l "$work/no/x.log"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all cli_mistakes checks passed"
