#!/usr/bin/env bash
# Regenerates the signature corpus the signing tests read
# (`signing::tests::the_gpg_corpus_is_judged_as_openpgp_says`): real keys and detached signatures
# made by GnuPG, each at a fixed instant (--faked-system-time), so that the tests judge them at
# chosen instants and never read the clock.
#   bash functions/registry/testdata/signing/make.sh          (needs gpg 2.2 or later)
#   bash functions/registry/testdata/signing/make.sh CASE...  (only those, e.g. primary_uid_expires)
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
trap 'for h in "${homes[@]}"; do gpgconf --homedir "$h" --kill all; done; rm -rf "${homes[@]}"' EXIT
new_case() { export GNUPGHOME; GNUPGHOME=$(mktemp -d); homes+=("$GNUPGHOME"); }
export_key() { g --armor --export >"$1.asc"; }
sign() { # sign CASE TIME [gpg options] over SHA256SUMS
  local name=$1 time=$2; shift 2
  rm -f "$name.sig" # gpg --batch will not overwrite it
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

# Issue 44: a key's expiry and key flags are read from its valid self-certifications only. The
# SHA-1 cases are RSA: rpgp refuses Ed25519 over SHA-1 outright, so they would not reach the rule.

expired_uid_revoked() { # expired on 2024-01-01 with a user ID revoked before: the revocation says nothing of expiry
  new_case
  local t=1672531200 # 2023-01-01T00:00:00Z
  g --faked-system-time "$(at $t)" --quick-gen-key "Old <old@example.com>" ed25519 sign,cert 2024-01-01
  g --faked-system-time "$(at $((t + 100 * DAY)))" --quick-add-uid "$(fingerprint)" "Spare <spare@example.com>"
  g --faked-system-time "$(at $((t + 200 * DAY)))" --quick-revoke-uid "$(fingerprint)" "Spare <spare@example.com>"
  export_key expired-uid-revoked
  sign expired-uid-revoked $((t + 300 * DAY)) # 2023-10-28: dated before the expiry, as a backdated one would be
}

certify_only_uid_revoked() { # certify-only, then a user ID added and revoked: the newest signature has no key flags
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Certifier <certifier@example.com>" ed25519 sign,cert never
  sign certify-only-uid-revoked $((T0 + DAY))
  edit "$(fingerprint)" $((T0 + 2 * DAY)) change-usage S Q save
  g --faked-system-time "$(at $((T0 + 3 * DAY)))" --quick-add-uid "$(fingerprint)" "Spare <spare@example.com>"
  g --faked-system-time "$(at $((T0 + 4 * DAY)))" --quick-revoke-uid "$(fingerprint)" "Spare <spare@example.com>"
  export_key certify-only-uid-revoked
}

sha1_self_cert() { # the key's only self-certification is over SHA-1
  new_case
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA1 --quick-gen-key "Sha1 <sha1@example.com>" rsa3072 \
    sign,cert never
  export_key sha1-self-cert
  sign sha1-self-cert $((T0 + DAY)) --digest-algo SHA256
}

sha1_superseded() { # a SHA-1 self-certification, then a SHA-256 one: the newer, valid one counts
  new_case
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA1 --quick-gen-key "Renewed <renewed@example.com>" rsa3072 \
    sign,cert never
  g --armor --export >old.asc
  g --faked-system-time "$(at $((T0 + DAY)))" --cert-digest-algo SHA256 --quick-set-expire "$(fingerprint)" 5y
  g --import old.asc && rm old.asc # gpg replaced the SHA-1 one; both are in the key file
  export_key sha1-superseded
  sign sha1-superseded $((T0 + 2 * DAY)) --digest-algo SHA256
}

primary_uid_expires() { # the primary user ID's certification expires the key; a newer one of another does not
  new_case
  local first=$GNUPGHOME
  g --faked-system-time "$(at $T0)" --quick-gen-key "Other <other@example.com>" ed25519 sign,cert never
  g --faked-system-time "$(at $((T0 + DAY)))" --quick-add-uid "$(fingerprint)" "Primary <primary@example.com>"
  g --faked-system-time "$(at $((T0 + 2 * DAY)))" --quick-set-primary-uid "$(fingerprint)" "Primary <primary@example.com>"
  new_case # the same key in a second home, where it still never expires
  cp -a "$first/." "$GNUPGHOME/"
  local second=$GNUPGHOME
  GNUPGHOME=$first
  edit "$(fingerprint)" $((T0 + 3 * DAY)) expire 30 y save # every user ID: expires 2025-02-03
  GNUPGHOME=$second
  edit "$(fingerprint)" $((T0 + 4 * DAY)) 'uid 2' updpref y save # "Other" alone, newer, no expiry
  g --export | GNUPGHOME=$first g --import
  GNUPGHOME=$first
  export_key primary-uid-expires
  sign primary-uid-expires $((T0 + 5 * DAY))
}

signing_subkey() { # a certify-only primary with two user IDs, and a signing subkey that signs
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Main <main@example.com>" ed25519 cert never
  g --faked-system-time "$(at $T0)" --quick-add-uid "$(fingerprint)" "Alias <alias@example.com>"
  g --faked-system-time "$(at $T0)" --quick-add-key "$(fingerprint)" ed25519 sign never
  export_key signing-subkey
  sign signing-subkey $((T0 + DAY))
}

sha1_subkey_binding() { # a signing subkey whose (only) binding signature is over SHA-1
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Bound <bound@example.com>" rsa3072 cert never
  g --faked-system-time "$(at $T0)" --quick-add-key "$(fingerprint)" rsa3072 sign never
  echo 'cert-digest-algo SHA1' >"$GNUPGHOME/gpg.conf"
  edit "$(fingerprint)" $((T0 + DAY)) 'key 1' expire 2y save # gpg replaces the binding with one over SHA-1
  rm "$GNUPGHOME/gpg.conf"
  export_key sha1-subkey-binding
  sign sha1-subkey-binding $((T0 + 2 * DAY))
}

# A newer self-signature over SHA-1 that restricts the key, beside the older, laxer SHA-256 one it
# replaced (gpg keeps only the newest; the old one is imported back, as a key file may hold both).
# gpg honours the newer one. The registry may neither honour it (SHA-1 signatures can be forged)
# nor pass over it for the older one (that lifted the restriction): it refuses the key.

sha1_expiry() { # never expires (SHA-256), then expires on 2025-01-04 by a SHA-1 self-certification
  new_case
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA256 --quick-gen-key "Lax <lax@example.com>" rsa3072 \
    sign,cert never
  g --armor --export >old.asc
  g --faked-system-time "$(at $((T0 + DAY)))" --cert-digest-algo SHA1 --quick-set-expire "$(fingerprint)" 2d
  g --import old.asc && rm old.asc
  export_key sha1-expiry
  sign sha1-expiry $((T0 + DAY + 60)) --digest-algo SHA256
}

sha1_certify_only() { # signs (SHA-256), then made certify-only by a SHA-1 self-certification
  new_case
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA256 --quick-gen-key "Usage <usage@example.com>" rsa3072 \
    sign,cert never
  g --armor --export >old.asc
  sign sha1-certify-only $((T0 + 3600)) --digest-algo SHA256
  echo 'cert-digest-algo SHA1' >"$GNUPGHOME/gpg.conf" # change-usage takes no --cert-digest-algo in batch
  edit "$(fingerprint)" $((T0 + DAY)) change-usage S Q save
  rm "$GNUPGHOME/gpg.conf"
  g --import old.asc && rm old.asc
  export_key sha1-certify-only
}

sha1_subkey_expiry() { # a signing subkey bound for ever (SHA-256), then bound to expire on 2025-01-04 over SHA-1
  new_case
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA256 --quick-gen-key "Rebound <rebound@example.com>" rsa3072 \
    cert never
  g --faked-system-time "$(at $T0)" --cert-digest-algo SHA256 --quick-add-key "$(fingerprint)" rsa3072 sign never
  g --armor --export >old.asc
  local sub
  sub=$(gpg --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ && ++n == 2 {print $10}')
  g --faked-system-time "$(at $((T0 + DAY)))" --cert-digest-algo SHA1 --quick-set-expire "$(fingerprint)" 2d "$sub"
  sign sha1-subkey-expiry $((T0 + DAY + 60)) --digest-algo SHA256
  g --armor --export >new.asc
  new_case # the home that made them keeps one binding per subkey; a fresh one, given both, keeps both
  g --import old.asc && g --import new.asc && rm old.asc new.asc
  export_key sha1-subkey-expiry
}

stale_copy() { # revoked, but the file also holds an export from before: gpg, importing it, merges the copies
  new_case
  g --faked-system-time "$(at $T0)" --quick-gen-key "Stale <stale@example.com>" ed25519 sign,cert never
  g --armor --export >old.asc
  sign stale-copy $((T0 + 3600))
  sed 's/^:-----/-----/' "$GNUPGHOME/openpgp-revocs.d/$(fingerprint).rev" | g --import
  export_key stale-copy
  cat old.asc >>stale-copy.asc && rm old.asc
}

if (($#)); then
  for case in "$@"; do "$case"; done
  exit
fi

good
subkey_outlives_primary
revoked_subkey
revoked_primary
not_for_signing
rsa 1024
rsa 3072
expired_uid_revoked
certify_only_uid_revoked
sha1_self_cert
sha1_superseded
primary_uid_expires
signing_subkey
sha1_subkey_binding
sha1_expiry
sha1_certify_only
sha1_subkey_expiry
stale_copy
ls
