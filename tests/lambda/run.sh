#!/usr/bin/env bash
# `make lambda-test`: every Lambda binary under a real Lambda Runtime API emulator
# (`cargo lambda watch`), fed real event JSON, against the embedded S3 of registry-local:
#   1. archives are placed in the bucket, no manifest exists;
#   2. the indexer function gets an S3 notification batch and writes the manifests;
#   3. discovery, modules, mirror, providers, web, oci and mcp answer API Gateway HTTP API v2 events from them;
#   4. the usage function folds the download records the modules and mirror functions logged,
#      delivered as a CloudWatch Logs subscription delivers them, and the web function shows the count.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v cargo-lambda >/dev/null || { echo "cargo-lambda not found: run make setup" >&2; exit 1; }
REG_PORT="${REG_PORT:-18543}"; S3_PORT="${S3_PORT:-18544}"; WATCH_PORT="${WATCH_PORT:-19010}"
BIN="${CARGO_TARGET_DIR:-target}/debug"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Every binary this script runs. `--workspace --bins --tests` is the selection `make test`
# builds with, so this reuses its build (another selection unifies features differently and
# rebuilds dozens of crates).
cargo build -q --workspace --bins --tests
for bin in registry-local signed-release discovery modules mirror providers web oci mcp indexer puller usage; do
  [ -x "$BIN/$bin" ] || { echo "FAIL  $BIN/$bin was not built" >&2; exit 1; }
done

# wait_for WHAT SECONDS COMMAND...: run COMMAND until it succeeds, at most SECONDS; else fail
# naming WHAT, with the logs that say why.
wait_for() {
  local what="$1" seconds="$2"; shift 2
  local until=$(( $(date +%s) + seconds ))
  until "$@" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$until" ]; then
      echo "FAIL  $what did not appear within ${seconds} s" >&2
      for log in "$work"/*.log; do echo "--- $log" >&2; tail -n 30 "$log" >&2; done
      exit 1
    fi
    sleep 0.2
  done
}

# 1. Archives in the bucket (written as files: the embedded S3 serves its directory).
bucket="$work/data/s3/registry"
python3 - "$bucket" <<'PY'
import io, os, sys, tarfile, zipfile
bucket = sys.argv[1]
module = os.path.join(bucket, "modules/acme/network/aws")
os.makedirs(module)
with tarfile.open(os.path.join(module, "1.0.0.tar.gz"), "w:gz") as tar:
    data = b'output "name" {\n  value = "network"\n}\n'
    info = tarfile.TarInfo("main.tf"); info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
provider = os.path.join(bucket, "providers/example.com/acme/widget")
os.makedirs(provider)
with zipfile.ZipFile(os.path.join(provider, "terraform-provider-widget_0.1.0_linux_amd64.zip"), "w") as z:
    z.writestr("terraform-provider-widget_v0.1.0", "#!/bin/sh\n")
PY
# A signed provider release of the registry's own host (REGISTRY_HOSTNAME below), and the
# namespace's public key: keys made now by the test, never committed.
own="registry.example.com"
key_id="$("$BIN/signed-release" "$work/release" acme gizmo 1.0.0 linux_amd64)"
mkdir -p "$bucket/providers/$own/acme/gizmo" "$bucket/signing-keys/$own/acme"
cp "$work/release/release/"* "$bucket/providers/$own/acme/gizmo/"
cp "$work/release/key.asc" "$bucket/signing-keys/$own/acme/release.asc"

"$BIN/registry-local" serve --listen "127.0.0.1:$REG_PORT" --s3-listen "127.0.0.1:$S3_PORT" --data-dir "$work/data" > "$work/registry.log" 2>&1 &
pids+=($!)
# local.env is written last, once the registry serves: the files read below exist by then.
wait_for "the local registry's $work/data/local.env" 120 test -s "$work/data/local.env"
# The functions' own key: publishers may not write indexed/, where the indexer writes.
secret="$(cat "$work/data/functions.secret")"
cat > "$work/lambda.env" <<ENV
REGISTRY_BUCKET=registry
REGISTRY_S3_FORCE_PATH_STYLE=true
AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT
AWS_ACCESS_KEY_ID=functions-local
AWS_SECRET_ACCESS_KEY=$secret
AWS_REGION=us-east-1
REGISTRY_HOSTNAME=registry.example.com
RUST_LOG=info
ENV

# The emulator alone (`--only-lambda-apis`), and each function's binary as `make test` built
# it, polling the emulator under its own name: left to itself, `cargo lambda watch` would
# `cargo run` each function, a build without the tests' dev-dependencies that compiles the
# library and every function again (about a minute).
cargo lambda watch --only-lambda-apis -A 127.0.0.1 -P "$WATCH_PORT" > "$work/watch.log" 2>&1 &
pids+=($!)
wait_for "cargo lambda watch on port $WATCH_PORT" 120 bash -c "echo > /dev/tcp/127.0.0.1/$WATCH_PORT"
for function in discovery modules mirror providers web oci mcp indexer puller usage; do
  (
    set -a; . "$work/lambda.env"; set +a
    export AWS_LAMBDA_FUNCTION_NAME="$function" AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=4096
    export AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$WATCH_PORT/.rt/$function"
    exec "$BIN/$function"
  ) > "$work/$function.log" 2>&1 &
  pids+=($!)
done

# Events: the recorded API Gateway v2 event with another path; an S3 notification batch.
events=functions/registry/tests/events
token="$(cat "$work/data/dev-token")"
event() {
  python3 - "$events/apigw_v2_module_versions.json" "$1" "${2-$token}" > "$work/event.json" <<'PY'
import json, os, sys
e = json.load(open(sys.argv[1]))
if sys.argv[3]:
    e["headers"]["authorization"] = "Bearer " + sys.argv[3]
else:
    e["headers"].pop("authorization", None)
e["rawPath"] = e["requestContext"]["http"]["path"] = sys.argv[2]
e["rawQueryString"] = os.environ.get("QUERY", "")
e["routeKey"] = e["requestContext"]["routeKey"] = "$default"
e.pop("pathParameters", None)
# METHOD and BODY: a POST with a JSON body (the MCP endpoint), as API Gateway sends it.
if os.environ.get("METHOD"):
    e["requestContext"]["http"]["method"] = os.environ["METHOD"]
if os.environ.get("BODY"):
    e["body"] = os.environ["BODY"]
    e["isBase64Encoded"] = False
    e["headers"]["content-type"] = "application/json"
name, _, value = os.environ.get("EXTRA_HEADER", "").partition("=")
if name:
    e["headers"][name] = value
print(json.dumps(e))
PY
}
# A function that is not running leaves an invocation waiting: bounded, and then a failure.
invoke() { timeout 120 cargo lambda invoke "$1" -A 127.0.0.1 -P "$WATCH_PORT" --data-file "$2"; }
# check NAME FUNCTION PATH STATUS NEEDLE: the answer's status and a string its body or headers hold.
failures=0
# SEND_TOKEN overrides the bearer token sent ("" sends none).
check() {
  event "$3" "${SEND_TOKEN-$token}"
  local out; out="$(invoke "$2" "$work/event.json" 2>&1)" || true
  if python3 - "$out" "$4" "$5" <<'PY'
import json, sys
try:
    answer = json.loads(sys.argv[1])
except ValueError:
    sys.exit(f"not JSON: {sys.argv[1][:300]}")
text = json.dumps(answer)
ok = answer.get("statusCode") == int(sys.argv[2]) and sys.argv[3] in text
sys.exit(0 if ok else f"status {answer.get('statusCode')}: {text[:300]}")
PY
  then echo "ok    $1"; else echo "FAIL  $1"; failures=$((failures + 1)); fi
}

python3 - "$work/s3event.json" <<'PY'
import json, sys
def record(key):
    return {"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
            "eventTime": "2026-11-22T22:00:00.000Z", "eventName": "ObjectCreated:Put",
            "userIdentity": {"principalId": "AWS:AROAEXAMPLE:ci"},
            "requestParameters": {"sourceIPAddress": "127.0.0.1"},
            "responseElements": {"x-amz-request-id": "LOCAL", "x-amz-id-2": "LOCAL"},
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "registry-indexer",
                   "bucket": {"name": "registry", "arn": "arn:aws:s3:::registry"},
                   "object": {"key": key, "size": 1, "eTag": "x", "sequencer": "01"}}}
json.dump({"Records": [record("modules/acme/network/aws/1.0.0.tar.gz"),
                       record("providers/example.com/acme/widget/terraform-provider-widget_0.1.0_linux_amd64.zip"),
                       record("providers/registry.example.com/acme/gizmo/terraform-provider-gizmo_1.0.0_SHA256SUMS.sig")]},
          open(sys.argv[1], "w"))
PY
# pull NAME KEY EXPECTED: the puller invoked with an S3 notification of KEY answers EXPECTED.
pull() {
  python3 - "$work/pullevent.json" "$work/s3event.json" "$2" <<'PY'
import json, sys
event = json.load(open(sys.argv[2]))
record = event["Records"][0]
record["s3"]["object"]["key"] = sys.argv[3]
json.dump({"Records": [record]}, open(sys.argv[1], "w"))
PY
  local out; out="$(invoke puller "$work/pullevent.json" 2>&1)" || true
  if echo "$out" | grep -qF "\"$2\":$3"; then echo "ok    puller: $1"; else echo "FAIL  puller: $1: $out"; failures=$((failures + 1)); fi
}
# A pull record that is gone by the time the puller runs: it wires up (the upstream client
# with the system's roots) and answers that nothing was there to copy.
pull "an S3 notification of a pull record is answered (nothing left to copy)" \
  "upstream/pulls/registry.terraform.io/hashicorp/null/3.2.0.json" '{"copied":[],"present":[]}'
# A module pull record (the modules pull-through's large archives) of a host not allowed: the
# puller wires up its module upstreams, refuses it by name and records why (no network needed).
pull "a module pull record of a host not allowed is refused by name and recorded" \
  "upstream-modules/example.com/acme/vpc/aws/1.0.0.pull.json" \
  '{"failed":"example.com/acme/vpc/aws: its host or namespace is not in REGISTRY_UPSTREAM_MODULES"}'
out="$(invoke indexer "$work/s3event.json" 2>&1)" || true
if echo "$out" | grep -q '"module acme/network/aws"' && echo "$out" | grep -q '"provider example.com/acme/widget 0.1.0"' \
  && echo "$out" | grep -q '"provider registry.example.com/acme/gizmo 1.0.0"'; then
  echo "ok    indexer: S3 notification batch indexed the module, the mirrored provider and the signed release"
else
  echo "FAIL  indexer: $out"; failures=$((failures + 1))
fi

# The audit the deployed `make audit` alternative runs: {"audit": "all"} on the indexer. The
# batch above published on the log with the event's principal, and every chain is clean.
echo '{"audit": "all"}' > "$work/audit.json"
out="$(invoke indexer "$work/audit.json" 2>&1)" || true
if echo "$out" | grep -q '"chain":\[\]' && echo "$out" | grep -q '"unexplained":\[\]' \
  && echo "$out" | grep -q '"unserved":\[\]' && grep -rqs '"principal": "AWS:AROAEXAMPLE:ci"' "$bucket/indexed/log/chains/"; then
  echo "ok    indexer: {\"audit\": \"all\"} finds every chain whole, every served archive explained and every logged one served, the event's principal logged"
else
  echo "FAIL  indexer audit: $out"; failures=$((failures + 1))
fi

check "discovery: /.well-known/terraform.json" discovery "/.well-known/terraform.json" 200 '\"modules.v1\":\"/v1/modules/\"'
check "discovery: providers.v1 offered" discovery "/.well-known/terraform.json" 200 '\"providers.v1\":\"/v1/providers/\"'
check "providers: versions" providers "/v1/providers/acme/gizmo/versions" 200 '\"protocols\":[\"6.0\"]'
check "providers: download names the signing key" providers "/v1/providers/acme/gizmo/1.0.0/download/linux/amd64" 200 "$key_id"
check "providers: download presigns the signature" providers "/v1/providers/acme/gizmo/1.0.0/download/linux/amd64" 200 "SHA256SUMS.sig?"
check "providers: another platform is 404" providers "/v1/providers/acme/gizmo/1.0.0/download/darwin/arm64" 404 '\"errors\"'
SEND_TOKEN="" check "providers: no token is 401" providers "/v1/providers/acme/gizmo/versions" 401 '\"errors\"'
check "modules: versions" modules "/v1/modules/acme/network/aws/versions" 200 '{\"version\":\"1.0.0\"}'
check "modules: download is a presigned URL" modules "/v1/modules/acme/network/aws/1.0.0/download" 200 "X-Amz-Signature"
check "modules: unknown version is 404" modules "/v1/modules/acme/network/aws/9.9.9/download" 404 '\"errors\"'
check "modules: encoded dot-dot is 400" modules "/v1/modules/%2e%2e/network/aws/versions" 400 '\"errors\"'
SEND_TOKEN="" check "modules: no token is 401 with a Bearer challenge" modules "/v1/modules/acme/network/aws/versions" 401 '"www-authenticate": "Bearer realm='
SEND_TOKEN="tfr_not-a-real-token" check "mirror: unknown token is 401" mirror "/v1/mirror/example.com/acme/widget/index.json" 401 '\"errors\"'
check "mirror: index.json" mirror "/v1/mirror/example.com/acme/widget/index.json" 200 '\"0.1.0\":{}'
check "mirror: VERSION.json with h1" mirror "/v1/mirror/example.com/acme/widget/0.1.0.json" 200 'h1:'
check "web: the module list from the catalog" web "/v1/modules" 200 '\"id\":\"acme/network/aws/1.0.0\"'
QUERY="q=network&limit=5" check "web: search" web "/v1/modules/search" 200 '\"name\":\"network\"'
check "web: details with the docs read at publish time" web "/v1/modules/acme/network/aws" 200 '\"outputs\":[{\"description\":\"\",\"name\":\"name\"'
QUERY="limit=1000" check "web: a limit over 100 is 400" web "/v1/modules" 400 'limit must be a whole number'
check "web: the module page, under its Content-Security-Policy" web "/ui/modules/acme/network/aws" 200 "default-src 'none'"
check "web: the module page's usage snippet" web "/ui/modules/acme/network/aws" 200 'acme/network/aws&quot;'
SEND_TOKEN="" check "web: a page without sign-in is a 401 page" web "/ui/modules/acme/network/aws" 401 'Sign in'
QUERY="x=1" check "modules: a query string is 400" modules "/v1/modules/acme/network/aws/versions" 400 'query strings are not part of this API'
check "modules: the list route is not the modules function's" modules "/v1/modules" 404 'this function does not serve module_list'
# lambda_http builds a URL from these headers and panics on these values; the guard before it
# (registry::lambda::http::guard) makes them harmless, and the registry never reads them.
EXTRA_HEADER="x-forwarded-proto=a b" check "modules: an odd X-Forwarded-Proto is ignored" modules "/v1/modules/acme/network/aws/versions" 200 '{\"version\":\"1.0.0\"}'
oci_repo="/v2/providers/example.com/acme/widget"
SEND_TOKEN="" check "oci: /v2/ without credentials is a Bearer challenge naming the token endpoint" oci "/v2/" 401 'Bearer realm=\"https://registry.example.com/v2/token\",service=\"registry.example.com\"'
check "oci: the token endpoint hands back the token presented" oci "/v2/token" 200 "\\\"access_token\\\":\\\"$token\\\""
SEND_TOKEN="" check "oci: the token endpoint without credentials is the anonymous token" oci "/v2/token" 200 'anonymous'
check "oci: tags are the mirrored versions" oci "$oci_repo/tags/list" 200 '\"tags\":[\"0.1.0\"]'
check "oci: a tag is the provider's image index" oci "$oci_repo/manifests/0.1.0" 200 'application/vnd.opentofu.provider'
check "oci: an unknown tag is MANIFEST_UNKNOWN" oci "$oci_repo/manifests/9.9.9" 404 'MANIFEST_UNKNOWN'
mcp_call() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2"; }
METHOD=POST BODY='{"jsonrpc":"2.0","id":1,"method":"tools/list"}' check "mcp: tools/list" mcp "/mcp" 200 'get_module_details'
METHOD=POST BODY="$(mcp_call get_module_details '{"module":"acme/network/aws"}')" check "mcp: a module's interface from its docs" mcp "/mcp" 200 '\"isError\":false'
METHOD=POST BODY="$(mcp_call get_module_details '{"module":"acme/nothing/aws"}')" check "mcp: an absent module is the tool's error" mcp "/mcp" 200 'module acme/nothing/aws not found'
METHOD=POST BODY='[1]' check "mcp: a batch is a JSON-RPC error" mcp "/mcp" 400 '-32600'
SEND_TOKEN="" METHOD=POST BODY='{"jsonrpc":"2.0","id":1,"method":"tools/list"}' check "mcp: no token is 401 with a Bearer challenge" mcp "/mcp" 401 'Bearer realm='
check "mcp: GET opens no stream (405)" mcp "/mcp" 405 'allow'
EXTRA_HEADER="host=exa mple.com" check "mirror: an odd Host is ignored" mirror "/v1/mirror/example.com/acme/widget/index.json" 200 '\"0.1.0\":{}'

# 4. Download counts. Each download answered above wrote one record line to its function's log
# (stdout, as Lambda keeps it): modules' download once, the mirror's VERSION.json once. Those
# lines, as the subscription would deliver them (gzip, base64), go to the usage function; the
# same batch again counts nothing more.
python3 - "$work/usage.json" "$work/modules.log" "$work/mirror.log" <<'PY'
import base64, gzip, json, sys, time
events = []
for path in sys.argv[2:]:
    for line in open(path):
        if line.startswith('{"level":"INFO","usage":'):
            events.append({"id": str(len(events)), "timestamp": int(time.time() * 1000), "message": line.rstrip("\n")})
batch = {"messageType": "DATA_MESSAGE", "owner": "123456789012", "logGroup": "/aws/lambda/registry-modules",
         "logStream": "2026/11/27/[$LATEST]0", "subscriptionFilters": ["registry-modules-usage"], "logEvents": events}
data = base64.b64encode(gzip.compress(json.dumps(batch).encode())).decode()
json.dump({"awslogs": {"data": data}}, open(sys.argv[1], "w"))
PY
out="$(invoke usage "$work/usage.json" 2>&1)" || true
again="$(invoke usage "$work/usage.json" 2>&1)" || true
if echo "$out" | grep -q '"downloads":2' && echo "$out" | grep -q '"written":2' && echo "$again" | grep -q '"repeated":2' \
  && [ -f "$bucket/usage/modules/acme/network/aws.json" ] && [ -f "$bucket/usage/providers/example.com/acme/widget.json" ]; then
  echo "ok    usage: the modules and mirror functions' download records folded once, the same batch again counted nothing"
else
  echo "FAIL  usage: $out / again: $again"; failures=$((failures + 1))
fi
check "web: details count the download, and name its caller to this admin token" web "/v1/modules/acme/network/aws/1.0.0" 200 '\"callers\":[{\"caller\":\"token local-dev\",\"downloads\":1'

if [ "$failures" -ne 0 ]; then
  for log in "$work"/*.log; do echo "--- $log"; tail -n 20 "$log"; done
  echo "$failures failed"; exit 1
fi
echo "lambda-test: all functions answered through the Runtime API emulator"
