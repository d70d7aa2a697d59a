#!/usr/bin/env bash
# The steps of a module repository's tag jobs, shared by the GitHub actions
# (ci/github/check-module, ci/github/publish-module) and the GitLab template
# (ci/gitlab/publish-module.yml); tests/integration/ci_templates.rs runs them against a local
# registry.
#
#   publish-module.sh build DIR  build registry-local (make publish's command) from the
#                                repository this script is in, into DIR
#   publish-module.sh check      terraform fmt -check, init -backend=false, validate, and
#                                terraform test when the module has tests, in a job of its
#                                own that cannot reach the role
#   publish-module.sh publish    registry-local publish with the role's AWS credentials and
#                                the job's own token for the registry
#
# Environment: REGISTRY_MODULE (NAMESPACE/NAME/SYSTEM), REGISTRY_URL (https://HOST),
# REGISTRY_BUCKET, REGISTRY_TOKEN (the job's OIDC token for the registry), REGISTRY_MODULE_DIR
# (default .), REGISTRY_PUBLISH (the registry-local binary, default on PATH), TERRAFORM.
# The result goes to the job's summary: $GITHUB_STEP_SUMMARY, else REGISTRY_SUMMARY_FILE; a
# check that fails says which there too. The checks' settings (REGISTRY_SEMVER_POLICY,
# REGISTRY_MAX_*) are the environment's: give the job the values the registry runs with.
set -euo pipefail

dir="${REGISTRY_MODULE_DIR:-.}"
terraform="${TERRAFORM:-terraform}"
publish="${REGISTRY_PUBLISH:-registry-local}"
summary="${GITHUB_STEP_SUMMARY:-${REGISTRY_SUMMARY_FILE:-}}"

say() { printf '\n== %s\n' "$*"; }

# A line in the job's summary.
summarise() {
  if [ -n "$summary" ]; then printf '%s\n' "$*" >>"$summary"; fi
}

# Run a check (LABEL COMMAND...); its failure goes to the summary before the job stops.
checked() {
  local label="$1"
  shift
  say "$label"
  if ! "$@"; then
    summarise "### ${REGISTRY_MODULE:-the module}: not published, \`$label\` failed (the job's log says why)"
    exit 1
  fi
}

build() {
  local dest="${1:?usage: $0 build DIR}" root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  # A runner image's stable may be older than the workspace's rust-version (offline: as is).
  if command -v rustup >/dev/null 2>&1; then rustup update stable --no-self-update >/dev/null 2>&1 || true; fi
  # From the repository's root, so that its rust-toolchain.toml picks the toolchain.
  (cd "$root" && cargo build --profile tool --locked -p registry-local --bin registry-local \
    --target-dir "${CARGO_TARGET_DIR:-$root/target}")
  mkdir -p "$dest"
  cp "${CARGO_TARGET_DIR:-$root/target}/tool/registry-local" "$dest/"
}

# A job given REGISTRY_TOKEN reaches the registry's modules the module calls with it
# (terraform's TF_TOKEN_ variable: the host with dots as underscores; a host with a port has
# none). The check jobs of the CI files have none.
registry_credentials() {
  local host="${REGISTRY_URL#https://}"
  host="${host%%/*}"
  if [ -n "${REGISTRY_TOKEN:-}" ] && [[ "$host" != *:* ]]; then
    local name
    name="TF_TOKEN_$(printf '%s' "$host" | sed -e 's/-/__/g' -e 's/\./_/g')"
    # A host that is not ASCII would need its punycode form: not given a token.
    if [[ "$name" =~ ^[A-Za-z0-9_]+$ ]]; then export "$name=$REGISTRY_TOKEN"; fi
  fi
}

check() {
  registry_credentials
  checked "terraform fmt -check" "$terraform" -chdir="$dir" fmt -check -recursive -diff
  checked "terraform init -backend=false" "$terraform" -chdir="$dir" init -backend=false -input=false -no-color
  checked "terraform validate" "$terraform" -chdir="$dir" validate -no-color
  local file found=""
  # The directory quoted, so brackets in its name are not a pattern.
  for file in "$dir"/*.tftest.hcl "$dir"/tests/*.tftest.hcl; do
    if [ -e "$file" ]; then found=1 && break; fi
  done
  if [ -n "$found" ]; then
    checked "terraform test" "$terraform" -chdir="$dir" test -no-color
  else
    say "terraform test: skipped, the module has no *.tftest.hcl"
  fi
}

publish() {
  : "${REGISTRY_MODULE:?REGISTRY_MODULE=NAMESPACE/NAME/SYSTEM}"
  : "${REGISTRY_URL:?REGISTRY_URL=https://registry.example.com}"
  : "${REGISTRY_BUCKET:?REGISTRY_BUCKET=the registry bucket}"
  say "publish $REGISTRY_MODULE to $REGISTRY_URL"
  # A summary file that came with the job (an artifact of another) is not this job's to keep.
  if [ -n "${REGISTRY_SUMMARY_FILE:-}" ] && [ -z "${GITHUB_STEP_SUMMARY:-}" ]; then : >"$REGISTRY_SUMMARY_FILE"; fi
  local out status=0
  out="$(mktemp)"
  "$publish" publish --dir="$dir" --module="$REGISTRY_MODULE" --bucket="$REGISTRY_BUCKET" \
    --registry="$REGISTRY_URL" 2>&1 | tee "$out" || status=$?
  if [ -n "$summary" ]; then
    local verdict="published"
    [ "$status" -eq 0 ] || verdict="not published"
    {
      printf '### %s: %s\n\n' "$REGISTRY_MODULE" "$verdict"
      printf '```text\n'
      # The progress line's carriage returns would garble the summary.
      tr '\r' '\n' <"$out" | grep -v '^waiting for the indexer' || true
      printf '```\n'
    } >>"$summary"
  fi
  rm -f "$out"
  return "$status"
}

case "${1:-}" in
  build) build "${2:-}" ;;
  check) check ;;
  publish) publish ;;
  *)
    echo "usage: $0 build DIR|check|publish" >&2
    exit 2
    ;;
esac
