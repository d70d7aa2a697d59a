#!/usr/bin/env bash
# Regenerates the signature corpus the signing tests read (`signing::tests::corpus`): real
# keys and detached signatures made by GnuPG, each at a fixed instant (--faked-system-time),
# so that the tests judge them at chosen instants and never read the clock.
#   bash functions/registry/testdata/signing/make.sh     (needs gpg 2.2 or later)
# Each case NAME is NAME.asc (its public key, `gpg --armor --export`) and NAME.sig (a binary
# detached signature over SHA256SUMS, or over other bytes where the case says so).
set -euo pipefail
cd "$(dirname "$0")"
T0=1735689600 # 2025-01-01T00:00:00Z: every key is made then
DAY=86400
printf '%s  terraform-provider-widget_1.0.0_linux_amd64.zip\n' \
  4a5c8a2ec6a0a7a4f8d0e2f1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1 >SHA256SUMS

at() { echo "$1!"; }
g() { gpg --batch --quiet --pinentry-mode loopback --passphrase '' "$@" 2>/dev/null; }
fingerprint() { gpg --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/{print $10; exit}'; }
edit() { # edit KEY TIME COMMANDS...: gpg --edit-key, answering its prompts in order
  local key=$1 time=$2; shift 2
  printf '%s\n' "$@" | gpg --batch --expert --command-fd 0 --status-fd 2 --pinentry-mode loopback --passphrase '' \
    --faked-system-time "$(at "$time")" --edit-key "$key" >/dev/null 2>&1
}
homes=()
trap 'rm -rf "${homes[@]}"' EXIT
new_case() { export GNUPGHOME; GNUPGHOME=$(mktemp -d); homes+=("$GNUPGHOME"); }
export_key() { g --armor --export >"$1.asc"; }
sign() { # sign CASE TIME [gpg options] over SHA256SUMS
  local name=$1 time=$2; shift 2
  g --faked-system-time "$(at "$time")" "$@" --detach-sign -o "$name.sig" SHA256SUMS
}

good() { # an Ed25519 key that signs: the control every refusal is measured against
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Good <good@example.com>" ed25519 sign,cert never
  export_key good
  sign good $((T0 + DAY)) --digest-algo SHA256
  sign sha1 $((T0 + DAY)) --digest-algo SHA1
  sign md5 $((T0 + DAY)) --digest-algo MD5
  cp good.asc sha1.asc && cp good.asc md5.asc
  echo 'other bytes' >other
  g --faked-system-time "$(at $((T0 + DAY)))" --detach-sign -o other-bytes.sig other && rm other
  cp good.asc other-bytes.asc
}

subkey_outlives_primary() { # the primary expires after a year, its signing subkey after five
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Sub <sub@example.com>" ed25519 cert 1y
  g --faked-system-time "$(at $T0)" --quick-add-key "$(fingerprint)" ed25519 sign 5y
  export_key subkey-outlives-primary
  sign subkey-outlives-primary $((T0 + DAY))
}

revoked_subkey() { # signed, then its subkey revoked an hour later
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Revoked <revoked@example.com>" ed25519 cert never
  g --faked-system-time "$(at $T0)" --quick-add-key "$(fingerprint)" ed25519 sign never
  sign revoked-subkey $((T0 + 3600))
  edit "$(fingerprint)" $((T0 + 7200)) 'key 1' revkey y 0 '' y save
  export_key revoked-subkey
}

revoked_primary() { # signed, then the key revoked with the revocation certificate gpg made
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Gone <gone@example.com>" ed25519 sign,cert never
  sign revoked-primary $((T0 + 3600))
  sed 's/^:-----/-----/' "$GNUPGHOME/openpgp-revocs.d/$(fingerprint).rev" | g --import
  export_key revoked-primary
}

not_for_signing() { # signed, then its key flags changed to certify only
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Cert <cert@example.com>" ed25519 sign,cert never
  sign not-for-signing $((T0 + DAY))
  edit "$(fingerprint)" $((T0 + 2 * DAY)) change-usage S Q save
  export_key not-for-signing
}

rsa() { # rsa BITS: an RSA key of that size that signs
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "RSA $1 <rsa$1@example.com>" "rsa$1" sign,cert never
  export_key "rsa$1"
  sign "rsa$1" $((T0 + DAY)) --digest-algo SHA256
}

good
subkey_outlives_primary
revoked_subkey
revoked_primary
not_for_signing
rsa 1024
rsa 3072
ls
