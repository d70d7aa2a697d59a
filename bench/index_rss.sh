#!/usr/bin/env bash
# Peak memory while indexing one large provider zip: `registry-local reindex` (embedded S3
# server and indexer in one process, so an upper bound for the indexer alone) over a data
# directory holding a SIZE_MIB zip of incompressible data. Prints the figures; `make bench-index`.
set -euo pipefail
SIZE_MIB="${SIZE_MIB:-1024}"
BIN="${BIN:-target/debug/registry-local}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dir="$work/data/s3/registry/providers/example.com/acme/big"
mkdir -p "$dir"
zip="$dir/terraform-provider-big_1.0.0_linux_amd64.zip"
python3 - "$zip" "$SIZE_MIB" <<'PY'
import os, sys, zipfile
path, mib = sys.argv[1], int(sys.argv[2])
chunk = os.urandom(1 << 20)
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
    with zf.open("terraform-provider-big_v1.0.0", "w", force_zip64=True) as f:
        for i in range(mib):
            # Vary each MiB cheaply so no layer can deduplicate it.
            f.write(i.to_bytes(8, "little") + chunk[8:])
    zf.writestr("LICENSE", "benchmark\n")
PY
echo "zip: $(du -m "$zip" | cut -f1) MiB"
REGISTRY_MAX_PROVIDER_ZIP_BYTES=$((4 << 30)) /usr/bin/time -v "$BIN" reindex --data-dir "$work/data" 2> "$work/time.txt" | tail -n 2
grep -E 'Maximum resident set size|Elapsed \(wall clock\)' "$work/time.txt"
index="$work/data/s3/registry/indexed/providers/example.com/acme/big/1.0.0.json"
served="$(grep -o '"h1:[^"]*"' "$index" | tr -d '"')"
# The same hash computed independently (Python, streaming), as the CLI defines it.
expected="$(python3 - "$zip" <<'PY'
import base64, hashlib, sys, zipfile
lines = []
with zipfile.ZipFile(sys.argv[1]) as zf:
    for info in zf.infolist():
        h = hashlib.sha256()
        with zf.open(info) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        lines.append((info.filename, f"{h.hexdigest()}  {info.filename}\n"))
summary = hashlib.sha256("".join(l for _, l in sorted(lines)).encode()).digest()
print("h1:" + base64.b64encode(summary).decode())
PY
)"
echo "indexer h1:  $served"
echo "python  h1:  $expected"
[ "$served" = "$expected" ] || { echo "MISMATCH" >&2; exit 1; }
