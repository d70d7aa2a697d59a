"""Pull a provider version's packages, or a module package, from an OCI registry with the ORAS
Python client.

    oras_pull.py HOST REPOSITORY TAG TOKEN OUTDIR BACKEND

Holds Basic credentials (any user, the token as password) and fetches the tag's
manifest: a provider's image index, then each platform's manifest and its single layer; a
module's image manifest and its single layer. Prints, by platform (os_arch, or "module"), the
layer's digest, the file it was saved as and the manifest, as JSON. BACKEND is the client's
auth backend: "token" (its default) answers the registry's Bearer challenge by asking the
token endpoint the challenge names, with the Basic credentials; "basic" sends them with every
request, unasked. The caller
(tests/integration/oci_clients.rs) checks digests and bytes; TLS trust comes from
REQUESTS_CA_BUNDLE.
"""

import json
import os
import sys

import oras.client


def main():
    host, repository, tag, token, outdir, backend = sys.argv[1:7]
    client = oras.client.OrasClient(hostname=host, auth_backend=backend)
    client.auth.set_basic_auth("ci", token)
    container = f"{host}/{repository}:{tag}"
    index = client.get_manifest(container)
    pulled = {}
    if index["artifactType"] == "application/vnd.opentofu.modulepkg":
        [layer] = [layer for layer in index["layers"] if layer["mediaType"] == "archive/zip"]
        client.download_blob(container, layer["digest"], os.path.join(outdir, "module.zip"))
        json.dump({"module": {"digest": layer["digest"], "file": "module.zip", "manifest": index}}, sys.stdout)
        return
    assert index["artifactType"] == "application/vnd.opentofu.provider", index
    for entry in index["manifests"]:
        platform = f'{entry["platform"]["os"]}_{entry["platform"]["architecture"]}'
        by_digest = f'{host}/{repository}@{entry["digest"]}'
        manifest = client.get_manifest(by_digest)
        [layer] = [layer for layer in manifest["layers"] if layer["mediaType"] == "archive/zip"]
        name = layer["annotations"]["org.opencontainers.image.title"]
        client.download_blob(container, layer["digest"], os.path.join(outdir, name))
        pulled[platform] = {"digest": layer["digest"], "file": name, "manifest": manifest}
    json.dump(pulled, sys.stdout)


if __name__ == "__main__":
    main()
