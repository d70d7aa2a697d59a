#!/usr/bin/env python3
"""`make build`'s check: each Lambda zip's size and its bootstrap's, unzipped; fails when a
bootstrap is over LIMIT bytes. A binary that links what it should not (another protocol's
code, aws-config's credential chain) shows here first.

usage: package_sizes.py LIMIT ZIP..."""
import os
import sys
import zipfile

limit, zips = int(sys.argv[1]), sys.argv[2:]
over = []
print(f"| function | bootstrap.zip | bootstrap |\n| --- | --- | --- |")
for path in zips:
    name = os.path.basename(os.path.dirname(path))
    with zipfile.ZipFile(path) as z:
        size = z.getinfo("bootstrap").file_size
    print(f"| {name} | {os.path.getsize(path):,} bytes | {size:,} bytes |")
    if size > limit:
        over.append(f"{name} ({size:,} bytes)")
if over:
    sys.exit(f"over {limit:,} bytes unzipped: {', '.join(over)} (docs/PERFORMANCE.md, Lambda packages)")
