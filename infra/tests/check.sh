#!/usr/bin/env bash
# Offline checks of infra/ (`make infra-check`, part of `make test`): terraform fmt, terraform
# validate and terraform test (mocked AWS provider) against the provider in a filesystem
# mirror, and checkov. Whatever cannot run here says SKIPPED; whatever runs must pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
TERRAFORM="${TERRAFORM:-terraform}"
MIRROR="${TF_PLUGIN_MIRROR:-/opt/tf-plugins}"

if command -v "$TERRAFORM" >/dev/null 2>&1; then
  echo "terraform fmt -check -recursive infra"
  TF_CLI_CONFIG_FILE=/dev/null "$TERRAFORM" fmt -check -recursive infra
  echo "ok    terraform fmt"
else
  echo "=== SKIPPED: terraform fmt, validate and test of infra/ (terraform CLI not found) ==="
fi

if command -v "$TERRAFORM" >/dev/null 2>&1 && [ -d "$MIRROR/registry.terraform.io/hashicorp/aws" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' "$MIRROR" > "$work/tf.rc"
  cp -r infra "$work/infra"
  tf() { TF_CLI_CONFIG_FILE="$work/tf.rc" TF_DATA_DIR="$work/.tf-$1" "$TERRAFORM" "${@:2}"; }
  for example in minimal oidc; do
    echo "terraform validate infra/examples/$example (AWS provider from $MIRROR)"
    (cd "$work/infra/examples/$example" && tf "example-$example" init -input=false -backend=false >/dev/null && tf "example-$example" validate -no-color)
    echo "ok    terraform validate infra/examples/$example"
  done
  echo "terraform test infra (mocked AWS provider)"
  (cd "$work/infra" && tf module init -input=false -backend=false >/dev/null && tf module test -no-color)
else
  echo "=== SKIPPED: terraform validate and test of infra/ (no AWS provider at $MIRROR, and no network to fetch one) ==="
fi

# CHECKOV: a checkov outside PATH (.ci/run keeps it in a virtual environment of its own).
checkov="${CHECKOV:-checkov}"
if command -v "$checkov" >/dev/null 2>&1; then
  echo "checkov -d infra"
  "$checkov" -d infra --framework terraform --quiet --compact --skip-download
  echo "ok    checkov"
else
  echo "=== SKIPPED: checkov not installed (pip install checkov, or set CHECKOV; tests/setup.sh installs it, make test runs it) ==="
fi
