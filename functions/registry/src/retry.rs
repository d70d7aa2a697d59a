//! Retrying a read-modify-write that lost a race: the one loop behind every conditional write
//! (an indexing pass, a change to the token store). An attempt that ends in `Error::Conflict`
//! (S3's 412 or 409: someone else wrote first) is run again after a growing, jittered wait, so
//! racing writers spread out; one that found the storage unavailable (throttled), a few times
//! too; any other result ends the loop.

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, chain};

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait after the first lost race; it doubles after each one, up to `max`.
    pub first: Duration,
    pub max: Duration,
}

/// How many times an attempt that found the storage unavailable is run again.
pub const UNAVAILABLE_RETRIES: u32 = 3;

/// Run `attempt` until it ends in anything but a conflict, at most `backoff.attempts` times;
/// an unavailable storage is tried again `UNAVAILABLE_RETRIES` times among them.
/// After the last lost race: `Error::Unavailable`, naming `what` (a transient failure: Lambda
/// retries the event, a person runs the command again).
pub async fn on_conflict<T, F, Fut>(backoff: Backoff, what: &str, mut attempt: F) -> Result<T, Error>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut wait = backoff.first;
    let mut unavailable_left = UNAVAILABLE_RETRIES;
    for n in 1..=backoff.attempts {
        match attempt(n).await {
            Err(Error::Conflict(why)) => {
                tracing::debug!(what, attempt = n, why, "lost a race; reading again");
                tokio::time::sleep(jitter(wait)).await;
                wait = (wait * 2).min(backoff.max);
            }
            // Throttled (S3's SlowDown once the SDK's own retries or its retry quota are
            // spent): back off and read again, a few times; a store that stays down fails.
            Err(e @ Error::Unavailable { .. }) if unavailable_left > 0 => {
                unavailable_left -= 1;
                tracing::debug!(what, attempt = n, why = %chain(&e), "storage unavailable; backing off");
                tokio::time::sleep(jitter(wait)).await;
                wait = (wait * 2).min(backoff.max);
            }
            other => return other,
        }
    }
    Err(Error::unavailable(format!("{what}: still contended after {} attempts; try again", backoff.attempts)))
}

/// A random wait in [d/2, d].
fn jitter(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let fraction = (h.finish() % 1000) as f64 / 1000.0;
    d.mul_f64(0.5 + fraction / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Backoff = Backoff { attempts: 3, first: Duration::from_millis(1), max: Duration::from_millis(2) };

    #[tokio::test]
    async fn conflicts_are_retried_and_anything_else_is_not() {
        let calls = std::cell::Cell::new(0);
        let won = on_conflict(QUICK, "x", |n| {
            calls.set(n);
            async move { if n < 3 { Err(Error::Conflict("lost".into())) } else { Ok(n) } }
        })
        .await;
        assert_eq!((won, calls.get()), (Ok(3), 3));

        let gave_up = on_conflict(QUICK, "the store", |_| async { Err::<(), _>(Error::Conflict("lost".into())) }).await;
        assert_eq!(gave_up, Err(Error::unavailable("the store: still contended after 3 attempts; try again")));

        let calls = std::cell::Cell::new(0);
        let failed = on_conflict(QUICK, "x", |n| {
            calls.set(n);
            async { Err::<(), _>(Error::NotFound("gone".into())) }
        })
        .await;
        assert_eq!((failed, calls.get()), (Err(Error::NotFound("gone".into())), 1));

        // Unavailable (throttled): tried again a few times, then its error stands.
        let many = Backoff { attempts: 10, ..QUICK };
        let calls = std::cell::Cell::new(0);
        let down = on_conflict(many, "x", |n| {
            calls.set(n);
            async { Err::<(), _>(Error::unavailable("SlowDown")) }
        })
        .await;
        assert_eq!((down, calls.get()), (Err(Error::unavailable("SlowDown")), 1 + UNAVAILABLE_RETRIES));
    }

    #[test]
    fn jitter_stays_within_half_and_whole() {
        for _ in 0..100 {
            let d = jitter(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(50) && d <= Duration::from_millis(100), "{d:?}");
        }
    }
}
