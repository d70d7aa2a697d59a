#!/usr/bin/env bash
# `make bench`: every side-by-side benchmark on this machine, printed as markdown tables (the
# figures in docs/PERFORMANCE.md come from here). Bounded: about 30 minutes on 2 cores, plus
# the optimised builds the first time (and, once, zipping the AWS provider from /opt/tf-plugins
# for big_provider: ≈ 30 s, kept under the target directory). Plain HTTP on loopback only; servers stop by themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"

need() {
  command -v "$1" >/dev/null 2>&1 && return
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq "$2" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
  else
    echo "bench: needs $1 (apt-get install $2)" >&2; exit 1
  fi
}
need wrk wrk
need nginx nginx-light

# Servers optimised like release but quicker to build (profile perf); the Lambda binaries
# exactly as deployed (profile release), natively, for the cold-start runs.
cargo build -q --profile perf -p registry-bench -p registry-local
cargo build -q --release -p discovery -p modules -p mirror -p providers -p web -p oci -p mcp -p indexer -p puller
B="$TARGET/perf"
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%dT%H:%MZ)"

echo; echo "## Request overhead (registry vs raw S3 GET of the same manifest)"; echo
"$B/overhead" "${SECONDS_PER_RUN:-3}" "${ROUNDS:-3}"
echo; echo "## terraform init: registry vs nginx static files"; echo
"$B/init" "${INIT_ROUNDS:-7}" "${ZIP_MB:-4}"
echo; echo "## terraform init with S3's latency: registry vs nginx behind the same latency"; echo
"$B/aws_init" "${AWS_INIT_ROUNDS:-7}" "${BIG_ZIP_MB_AWS:-100}" bench/cost/counts.json
echo; echo "## What a month costs, from the counts just recorded"; echo
"$B/cost" bench/cost/counts.json bench/cost/organisation.json
echo; echo "## terraform init of one real-size provider: make dev vs nginx vs filesystem_mirror"; echo
"$B/big_provider" "$B/registry-local" "${BIG_ROUNDS:-5}" "${BIG_ZIP_MB:-180}"
echo; echo "## Manifest TTL with S3's latency put back in"; echo
"$B/ttl" "${TTL_ROUNDS:-7}" "${S3_LATENCY_MS:-20}" "${TTL_SECONDS:-5}"
echo; echo "## Pull-through mirror: first install vs direct from the upstream, second vs a pre-synced mirror"; echo
"$B/pull_through" "${PULL_ROUNDS:-9}" "${ZIP_MB:-4}"
echo; echo "## Modules pull-through: first init vs direct from the upstream, second vs private modules"; echo
"$B/module_pull_through" "${MODULE_PULL_ROUNDS:-9}" "${MODULE_FILES:-20}"
echo; echo "## Load held (registry-local in its own process): reads only"; echo
"$B/load" "$B/registry-local" "${LOAD_CONNECTIONS:-256}" "${LOAD_SECONDS:-60}" 0 0
echo; echo "## Load held while publishing (registry-local in its own process)"; echo
"$B/load" "$B/registry-local" "${LOAD_CONNECTIONS:-256}" "${LOAD_SECONDS:-60}" "${LOAD_MODULES:-100}" "${LOAD_PROVIDERS:-20}"
echo; echo "## Lambda cold start (Runtime API emulator)"; echo
"$B/coldstart" "$TARGET/release" "${COLD_RUNS:-20}"
echo; echo "## Scale"; echo
"$B/scale" "${MODULE_VERSIONS:-5000}" "${PROVIDER_VERSIONS:-200}" "${SECONDS_PER_RUN:-3}"
echo; echo "## Catalog: list, search and details at scale; docs and catalog cost per publish"; echo
"$B/catalog" "${CATALOG_MODULES:-5000}" "${SECONDS_PER_RUN:-3}" "${CATALOG_ROUNDS:-9}"
echo; echo "## Publishing at scale: 100 publishes at once across namespaces, a manifest of 20,000 versions (S3's latency)"; echo
"$B/publish_scale" "${SCALE_NAMESPACES:-500}" "${SCALE_PER_NAMESPACE:-100}" 100 "${SCALE_VERSIONS:-20000}"
echo; echo "## Download counts: the usage function's requests and time per batch, and the bill per million downloads (S3's latency)"; echo
"$B/usage" "${USAGE_BATCHES:-20}"
echo; echo "## MCP server: storage requests and time per tool call, and the bill per million calls (S3's latency)"; echo
"$B/mcp" "${MCP_CALLS:-20}"
echo; echo "## Micro-benchmarks (criterion)"; echo
cargo bench -q --profile perf -p registry-bench --features micro --bench hot_path -- --warm-up-time 1 --measurement-time 3 2>&1 \
  | grep -E '^[a-z_/0-9]+ +time:|^[a-z_/0-9]+$|^ +time:' || true
