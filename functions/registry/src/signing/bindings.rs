//! Which of a key's self-signatures say what it may do (RFC 9580), for [`super::policy`].
//!
//! A key's expiry and key flags are read only from the self-signatures that bind it
//! ([`bindings`], [`subkey_binding`]), and only from those that count (`counts`):
//! made by the primary key and verifying, over SHA-256 or stronger, dated between the key's
//! creation and now. Of each user ID, its newest certification (0x10-0x13) that counts speaks,
//! unless a certification revocation (0x30) that counts is as new or newer; of the user IDs
//! left, the newest marked primary (RFC 9580 §5.2.3.32), else the newest, speaks for the key, and
//! so does its newest direct-key signature (0x1F): the stricter of the two holds. A subkey
//! speaks through its newest binding (0x18) that counts, whose back-signature (0x19) must count
//! too when it lets the subkey sign. No other signature says anything of expiry or flags: a user
//! ID revocation carries neither, and read as a self-signature it made an expired key never
//! expire and a certify-only key sign (issue 44). A key nothing binds is refused.

use std::cmp::Reverse;

use pgp::composed::{SignedPublicKey, SignedPublicSubKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{PublicKey, Signature, SignatureType};
use pgp::types::{SignedUser, Tag};

use crate::clock::rfc3339;

/// How far ahead of the registry's clock a self-signature may be dated and still count: a key
/// is often made minutes before it is uploaded and indexed, on a clock that may run ahead
/// (Sequoia allows the same 30 minutes).
const CLOCK_SKEW_SECONDS: u64 = 30 * 60;

/// The signature types that bind a user ID to its key (RFC 9580 §5.2.1).
const CERTIFICATIONS: &[SignatureType] =
    &[SignatureType::CertGeneric, SignatureType::CertPersona, SignatureType::CertCasual, SignatureType::CertPositive];

/// Whether a digest is strong enough for a signature the registry relies on: a release's, and
/// every self-signature that says whether its key may have made it.
pub(super) fn strong(alg: Option<HashAlgorithm>) -> bool {
    use HashAlgorithm as H;
    matches!(alg, Some(H::Sha256 | H::Sha384 | H::Sha512 | H::Sha3_256 | H::Sha3_512))
}

fn seconds(t: Option<pgp::types::Timestamp>) -> u64 {
    t.map(|t| u64::from(t.as_secs())).unwrap_or(0)
}

/// The self-signatures that say what the primary key (made at `born`) may do: the
/// certification its user IDs speak through ([`user_id_binding`]) and its newest valid
/// direct-key signature, either or both; or why neither counts.
pub(super) fn bindings(key: &SignedPublicKey, born: u64, now: u64) -> Result<Vec<&Signature>, String> {
    let primary = &key.primary_key;
    let direct =
        newest(&key.details.direct_signatures, &[SignatureType::Key], born, now, |s| verified(s.verify_key(primary)))
            .map_err(|why| why.map(|why| format!("its newest direct-key signature {why}")))
            .and_then(|(sig, made)| {
                alive(sig, made, now).map(|()| sig).map_err(|why| Some(format!("its direct-key signature {why}")))
            });
    match (user_id_binding(key, born, now), direct) {
        (Err(why), Err(None)) => Err(why),
        (Err(why), Err(Some(direct))) => Err(format!("{why}; {direct}")),
        (user_id, direct) => Ok(user_id.into_iter().chain(direct).collect()),
    }
}

/// The certification a key's user IDs speak through: of the user IDs that count
/// ([`certification`]), the newest certification that marks its user ID primary, else the
/// newest (RFC 9580 §5.2.3.32 leaves several primaries to the implementation and recommends the
/// most recent). Or why none counts.
fn user_id_binding(key: &SignedPublicKey, born: u64, now: u64) -> Result<&Signature, String> {
    let mut best: Option<(bool, u64, &Signature)> = None;
    let mut why = None;
    for user in &key.details.users {
        match certification(user, &key.primary_key, born, now) {
            Ok((cert, made)) => {
                if best.is_none_or(|(primary, at, _)| (cert.is_primary(), made) > (primary, at)) {
                    best = Some((cert.is_primary(), made, cert));
                }
            }
            Err(reason) => {
                why.get_or_insert(reason);
            }
        }
    }
    match (best, why) {
        (Some((_, _, cert)), _) => Ok(cert),
        (None, why) => Err(why.unwrap_or_else(|| "it has no user ID".into())),
    }
}

/// A user ID's newest valid self-certification and when it was made, unless it lapsed or the
/// user ID is revoked ([`revoked_after`]); or why it has none that counts.
fn certification<'k>(
    user: &'k SignedUser,
    primary: &PublicKey,
    born: u64,
    now: u64,
) -> Result<(&'k Signature, u64), String> {
    let name = crate::address::printable(&String::from_utf8_lossy(user.id.id()));
    let certifies = |s: &Signature| verified(s.verify_certification(primary, Tag::UserId, &user.id));
    let (cert, made) = newest(&user.signatures, CERTIFICATIONS, born, now, certifies).map_err(|why| match why {
        Some(why) => format!("the newest self-certification of user ID {name:?} {why}"),
        None => format!("user ID {name:?} has no self-certification"),
    })?;
    if revoked_after(user, made, primary, born, now) {
        return Err(format!("user ID {name:?} is revoked"));
    }
    alive(cert, made, now).map_err(|why| format!("the self-certification of user ID {name:?} {why}"))?;
    Ok((cert, made))
}

/// Whether `user`, certified at `certified`, is revoked: its newest valid certification
/// revocation (0x30) by the key is as new or newer (a newer certification takes it back).
/// Unlike a key's revocation, a user ID's must count as a self-signature does: taking a user ID
/// out can make a laxer certification of another speak for the key.
fn revoked_after(user: &SignedUser, certified: u64, primary: &PublicKey, born: u64, now: u64) -> bool {
    let revokes = |s: &Signature| verified(s.verify_certification(primary, Tag::UserId, &user.id));
    newest(&user.signatures, &[SignatureType::CertRevocation], born, now, revokes)
        .is_ok_and(|(_, made)| made >= certified)
}

/// A subkey's newest valid binding signature (0x18) by its primary key, unless it lapsed; or why
/// there is none.
pub(super) fn subkey_binding<'k>(
    primary: &PublicKey,
    sub: &'k SignedPublicSubKey,
    born: u64,
    now: u64,
) -> Result<&'k Signature, String> {
    let binds = |s: &Signature| {
        verified(s.verify_subkey_binding(primary, &sub.key))?;
        back_signature(s, primary, sub, born, now)
    };
    let (binding, made) = newest(&sub.signatures, &[SignatureType::SubkeyBinding], born, now, binds)
        .map_err(|why| why.map_or_else(|| "it has none".into(), |why| format!("its newest binding signature {why}")))?;
    alive(binding, made, now).map_err(|why| format!("its binding signature {why}"))?;
    Ok(binding)
}

/// A binding that lets a subkey sign counts only with the subkey's primary key binding
/// signature (0x19) embedded, valid as a self-signature is: without it, anyone could bind
/// another's signing key as their subkey and claim its signatures (RFC 9580 §5.2.1).
fn back_signature(
    binding: &Signature,
    primary: &PublicKey,
    sub: &SignedPublicSubKey,
    born: u64,
    now: u64,
) -> Result<(), String> {
    if !binding.key_flags().sign() {
        return Ok(());
    }
    let Some(back) = binding.embedded_signature() else {
        return Err("lets the subkey sign but has no back-signature by the subkey (gpg makes one)".into());
    };
    if back.typ() != Some(SignatureType::KeyBinding) {
        return Err("lets the subkey sign but embeds no primary key binding signature".into());
    }
    counts(back, born, now, |b| verified(b.verify_primary_key_binding(&sub.key, primary)))
        .map(|_| ())
        .map_err(|why| format!("has a back-signature by the subkey that {why}"))
}

/// The newest of `sigs` of one of `types` that counts ([`counts`]) and when it was made; or
/// why the newest of them does not (`None`: there is none of those types). Of two made in the
/// same second, the later in the key counts (gpg appends).
fn newest<'s>(
    sigs: &'s [Signature],
    types: &[SignatureType],
    born: u64,
    now: u64,
    verifies: impl Fn(&Signature) -> Result<(), String>,
) -> Result<(&'s Signature, u64), Option<String>> {
    let mut candidates: Vec<&Signature> =
        sigs.iter().rev().filter(|s| s.typ().is_some_and(|t| types.contains(&t))).collect();
    candidates.sort_by_key(|s| Reverse(seconds(s.created())));
    let mut why = None;
    for sig in candidates {
        match counts(sig, born, now, &verifies) {
            Ok(made) => return Ok((sig, made)),
            Err(reason) => {
                why.get_or_insert(reason);
            }
        }
    }
    Err(why)
}

/// When a self-signature was made, if it counts at `now` for a key made at `born`; or why it
/// does not (a phrase: "uses …"). It counts if it is dated between the key's creation and
/// now ([`CLOCK_SKEW_SECONDS`]), over a strong digest ([`strong`], the release signature's
/// rule), and verifies (`verifies`, the costly check, last).
fn counts(
    sig: &Signature,
    born: u64,
    now: u64,
    verifies: impl Fn(&Signature) -> Result<(), String>,
) -> Result<u64, String> {
    let Some(made) = sig.created().map(|t| u64::from(t.as_secs())) else {
        return Err("has no creation time".into());
    };
    if made < born {
        return Err(format!("is dated {}, before the key was made ({})", rfc3339(made as i64), rfc3339(born as i64)));
    }
    if made > now.saturating_add(CLOCK_SKEW_SECONDS) {
        return Err(format!("is dated {}, in the future", rfc3339(made as i64)));
    }
    if !strong(sig.hash_alg()) {
        let alg = sig.hash_alg().map_or_else(|| "no".into(), |h| h.to_string());
        return Err(format!("uses the {alg} digest, which is too weak to trust"));
    }
    verifies(sig)?;
    Ok(made)
}

/// Whether a binding made at `made` is still in force at `now`: past its own expiration time
/// (RFC 9580 §5.2.3.18) it binds nothing, and no older one stands in for it.
fn alive(sig: &Signature, made: u64, now: u64) -> Result<(), String> {
    match sig.signature_expiration_time().map(|d| u64::from(d.as_secs())).filter(|&d| d > 0) {
        Some(d) if made + d <= now => Err(format!("expired at {}", rfc3339((made + d) as i64))),
        _ => Ok(()),
    }
}

fn verified(result: pgp::errors::Result<()>) -> Result<(), String> {
    result.map_err(|_| "does not verify".to_string())
}
