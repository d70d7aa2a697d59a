//! Which of a key's self-signatures say what it may do (RFC 9580), for [`super::policy`].
//!
//! A key's expiry and key flags are read only from the self-signatures that bind it
//! ([`bindings`], [`subkey_binding`]). Each binding speaks through its newest self-signature
//! that counts (`counts`): made by the primary key and verifying, dated between the key's
//! creation and now. Of each user ID, that is its newest certification (0x10-0x13) or
//! certification revocation (0x30), the revocation winning a tie: a revoked user ID says
//! nothing. Of the user IDs left, the newest marked primary (RFC 9580 §5.2.3.32), else the newest,
//! speaks for the key, and so does its newest direct-key signature (0x1F): the stricter of the two
//! holds. A subkey speaks through its newest binding (0x18), whose back-signature (0x19) must
//! verify when it lets the subkey sign. No other signature says anything of expiry or flags: a
//! user ID revocation carries neither, and read as a self-signature it made an expired key never
//! expire and a certify-only key sign (issue 44). A key nothing binds is refused.
//!
//! The signature that speaks must be over SHA-256 or stronger ([`strong`]); when it is not, the
//! key (or the subkey) is refused ([`Unbound::Weak`]), and no older one stands in for it. A weak
//! self-signature could be forged, so it may not lift what an older one says; but it may be the
//! key holder's own restriction (an expiry, key flags that do not allow signing, a revoked user
//! ID: gpg honours SHA-1), and passing over it for the older, laxer one lifted that restriction
//! (the red team's finding after issue 44). Refusing is the one reading that neither honours nor
//! ignores it, and every weak self-signature can only refuse or change nothing. A signature that
//! does not verify, or is dated outside the key's life, is passed over: it is not the key
//! holder's word (anyone can append one, and a future date speaks only once it comes).

use std::cmp::Reverse;

use pgp::composed::{SignedPublicKey, SignedPublicSubKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{PublicKey, Signature, SignatureType};
use pgp::types::{KeyDetails, SignedUser, Tag};

use crate::clock::rfc3339;

/// How far ahead of the registry's clock a self-signature may be dated and still count: a key
/// is often made minutes before it is uploaded and indexed, on a clock that may run ahead
/// (Sequoia allows the same 30 minutes).
const CLOCK_SKEW_SECONDS: u64 = 30 * 60;

/// Whether a digest is strong enough for a signature the registry relies on: a release's, and
/// every self-signature that says whether its key may have made it.
pub(super) fn strong(alg: Option<HashAlgorithm>) -> bool {
    use HashAlgorithm as H;
    matches!(alg, Some(H::Sha256 | H::Sha384 | H::Sha512 | H::Sha3_256 | H::Sha3_512))
}

fn seconds(t: Option<pgp::types::Timestamp>) -> u64 {
    t.map(|t| u64::from(t.as_secs())).unwrap_or(0)
}

/// Why a key's (or a subkey's) self-signatures bind it to nothing the registry may rely on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unbound {
    /// No self-signature that counts binds it: why (a phrase).
    Nothing(String),
    /// The self-signature that would speak for one of its bindings is over a weak digest.
    Weak {
        /// Which one (a phrase: "its newest self-signature over user ID … uses the SHA1 digest").
        what: String,
        /// How to mend the key where re-signing it does not (a revoked user ID, which gpg does
        /// not re-sign).
        remedy: Option<String>,
    },
}

/// The self-signatures that say what the primary key (made at `born`) may do: the
/// certification its user IDs speak through ([`user_id_binding`]) and its newest valid
/// direct-key signature, either or both; or why neither counts.
pub(super) fn bindings(key: &SignedPublicKey, born: u64, now: u64) -> Result<Vec<&Signature>, Unbound> {
    let primary = &key.primary_key;
    let direct = match newest(&key.details.direct_signatures, &[SignatureType::Key], born, now, |s| {
        verified(s.verify_key(primary))
    }) {
        Ok((sig, made)) => {
            weak(sig, || format!("its newest direct-key signature (made {})", rfc3339(made as i64)), None)?;
            alive(sig, made, now).map(|()| sig).map_err(|why| Some(format!("its direct-key signature {why}")))
        }
        Err(why) => Err(why.map(|why| format!("its newest direct-key signature {why}"))),
    };
    match (user_id_binding(key, born, now), direct) {
        (Err(weak @ Unbound::Weak { .. }), _) => Err(weak),
        (Err(Unbound::Nothing(why)), Err(None)) => Err(Unbound::Nothing(why)),
        (Err(Unbound::Nothing(why)), Err(Some(direct))) => Err(Unbound::Nothing(format!("{why}; {direct}"))),
        (user_id, direct) => Ok(user_id.ok().into_iter().chain(direct.ok()).collect()),
    }
}

/// The certification a key's user IDs speak through: of the user IDs that count
/// ([`certification`]), the newest certification that marks its user ID primary, else the
/// newest (RFC 9580 §5.2.3.32 leaves several primaries to the implementation and recommends the
/// most recent). Or why none counts; or, if any user ID speaks through a weak signature, that.
fn user_id_binding(key: &SignedPublicKey, born: u64, now: u64) -> Result<&Signature, Unbound> {
    let mut best: Option<(bool, u64, &Signature)> = None;
    let mut why = None;
    for user in &key.details.users {
        match certification(user, &key.primary_key, born, now) {
            Ok((cert, made)) => {
                if best.is_none_or(|(primary, at, _)| (cert.is_primary(), made) > (primary, at)) {
                    best = Some((cert.is_primary(), made, cert));
                }
            }
            Err(weak @ Unbound::Weak { .. }) => return Err(weak),
            Err(Unbound::Nothing(reason)) => {
                why.get_or_insert(reason);
            }
        }
    }
    match (best, why) {
        (Some((_, _, cert)), _) => Ok(cert),
        (None, why) => Err(Unbound::Nothing(why.unwrap_or_else(|| "it has no user ID".into()))),
    }
}

/// The signatures that speak for a user ID: its certifications and their revocation.
const USER_ID_SIGNATURES: &[SignatureType] = &[
    SignatureType::CertGeneric,
    SignatureType::CertPersona,
    SignatureType::CertCasual,
    SignatureType::CertPositive,
    SignatureType::CertRevocation,
];

/// A user ID's newest self-certification and when it was made, unless its newest
/// self-signature is a revocation (a newer certification takes one back; of the two made in the
/// same second, the revocation wins) or its certification lapsed; or why it has none. A weak
/// revocation refuses the key as a weak certification does: honoured, it could let a laxer user
/// ID speak; passed over, it would keep in one the key holder took out.
fn certification<'k>(
    user: &'k SignedUser,
    primary: &PublicKey,
    born: u64,
    now: u64,
) -> Result<(&'k Signature, u64), Unbound> {
    let name = crate::address::printable(&String::from_utf8_lossy(user.id.id()));
    let certifies = |s: &Signature| verified(s.verify_certification(primary, Tag::UserId, &user.id));
    let (sig, made) = newest(&user.signatures, USER_ID_SIGNATURES, born, now, certifies).map_err(|why| {
        Unbound::Nothing(match why {
            Some(why) => format!("the newest self-signature over user ID {name:?} {why}"),
            None => format!("user ID {name:?} has no self-certification"),
        })
    })?;
    let revocation = sig.typ() == Some(SignatureType::CertRevocation);
    let what = || {
        let kind = if revocation { "a revocation" } else { "a certification" };
        format!("its newest self-signature over user ID {name:?} ({kind} made {})", rfc3339(made as i64))
    };
    // gpg re-signs every user ID but a revoked one (--quick-set-expire): that one can only be left out.
    let remedy = revocation.then(|| {
        format!(
            "gpg does not re-sign a revoked user ID: leave it out of the key file (gpg --armor --export-filter \
             keep-uid='uid <> {name}' --export {:X})",
            primary.fingerprint()
        )
    });
    weak(sig, what, remedy)?;
    if revocation {
        return Err(Unbound::Nothing(format!("user ID {name:?} is revoked")));
    }
    alive(sig, made, now)
        .map_err(|why| Unbound::Nothing(format!("the self-certification of user ID {name:?} {why}")))?;
    Ok((sig, made))
}

/// A subkey's newest binding signature (0x18) by its primary key, unless it lapsed or its
/// back-signature does not stand ([`back_signature`]); or why there is none.
pub(super) fn subkey_binding<'k>(
    primary: &PublicKey,
    sub: &'k SignedPublicSubKey,
    born: u64,
    now: u64,
) -> Result<&'k Signature, Unbound> {
    let binds = |s: &Signature| verified(s.verify_subkey_binding(primary, &sub.key));
    let (binding, made) =
        newest(&sub.signatures, &[SignatureType::SubkeyBinding], born, now, binds).map_err(|why| {
            Unbound::Nothing(
                why.map_or_else(|| "it has none".into(), |why| format!("its newest binding signature {why}")),
            )
        })?;
    let what = || format!("its newest binding signature (made {})", rfc3339(made as i64));
    weak(binding, what, None)?;
    back_signature(binding, primary, sub, born, now).map_err(|why| match why {
        Unbound::Nothing(why) => Unbound::Nothing(format!("{} {why}", what())),
        Unbound::Weak { what: back, remedy } => Unbound::Weak { what: format!("{} {back}", what()), remedy },
    })?;
    alive(binding, made, now).map_err(|why| Unbound::Nothing(format!("its binding signature {why}")))?;
    Ok(binding)
}

/// A binding that lets a subkey sign stands only with the subkey's primary key binding
/// signature (0x19) embedded, valid as a self-signature is and over a strong digest: without
/// it, anyone could bind another's signing key as their subkey and claim its signatures (RFC
/// 9580 §5.2.1). An older binding does not stand in for a newer one whose back-signature fails.
fn back_signature(
    binding: &Signature,
    primary: &PublicKey,
    sub: &SignedPublicSubKey,
    born: u64,
    now: u64,
) -> Result<(), Unbound> {
    if !binding.key_flags().sign() {
        return Ok(());
    }
    let nothing = |why: &str| Err(Unbound::Nothing(format!("lets the subkey sign but {why}")));
    let Some(back) = binding.embedded_signature() else {
        return nothing("has no back-signature by the subkey (gpg makes one)");
    };
    if back.typ() != Some(SignatureType::KeyBinding) {
        return nothing("embeds no primary key binding signature");
    }
    if let Err(why) = counts(back, born, now, |b| verified(b.verify_primary_key_binding(&sub.key, primary))) {
        return nothing(&format!("has a back-signature by the subkey that {why}"));
    }
    weak(back, || "lets the subkey sign with a back-signature by the subkey that".into(), None)
}

/// `Err` if `sig`, the self-signature that would speak, is over a weak digest: `what` names it
/// ("… uses the SHA1 digest" is appended).
fn weak(sig: &Signature, what: impl FnOnce() -> String, remedy: Option<String>) -> Result<(), Unbound> {
    if strong(sig.hash_alg()) {
        return Ok(());
    }
    let alg = sig.hash_alg().map_or_else(|| "no".into(), |h| h.to_string());
    Err(Unbound::Weak { what: format!("{} uses the {alg} digest", what()), remedy })
}

/// The newest of `sigs` of one of `types` that counts ([`counts`]), whatever its digest, and
/// when it was made; or why the newest of them does not (`None`: there is none of those types).
/// Of two made in the same second, a revocation counts first, then the later in the key (gpg
/// appends).
fn newest<'s>(
    sigs: &'s [Signature],
    types: &[SignatureType],
    born: u64,
    now: u64,
    verifies: impl Fn(&Signature) -> Result<(), String>,
) -> Result<(&'s Signature, u64), Option<String>> {
    let mut candidates: Vec<&Signature> =
        sigs.iter().rev().filter(|s| s.typ().is_some_and(|t| types.contains(&t))).collect();
    candidates.sort_by_key(|s| Reverse((seconds(s.created()), s.typ() == Some(SignatureType::CertRevocation))));
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
/// does not (a phrase: "is dated …"). It counts if it is dated between the key's creation and
/// now ([`CLOCK_SKEW_SECONDS`]) and verifies (`verifies`, the costly check, last). Its digest is
/// judged apart ([`weak`]): a weak signature that counts is the key holder's word all the same.
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
