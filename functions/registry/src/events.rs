//! S3 event notifications, as S3 delivers them to the indexer and puller Lambdas: the
//! indexer's handling of a batch (`process`, the loop over its records), what an indexer
//! invocation did (`Summary`), and the pull records a batch names (`pull_records`).

use std::collections::BTreeSet;

use aws_lambda_events::s3::S3Event;

use crate::error::{Error, chain};
use crate::index::{Indexer, Outcome, Pass};
use crate::layout;
use crate::storage::Storage;

/// What one invocation did, for the function's answer and log.
#[derive(Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Passes (modules, providers, provider versions) that wrote manifests.
    pub indexed: Vec<String>,
    /// Passes whose manifests already said this.
    pub unchanged: Vec<String>,
    /// Records about other buckets, other kinds of event, or keys outside the registry's prefixes.
    pub ignored_keys: usize,
    /// Keys under `modules/` or `providers/` that fit no module or provider.
    pub rejected_keys: usize,
    /// Pins and refusals of the modules pull-through put on the publish log.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logged: Vec<String>,
    /// Passes that failed (each with its error); the others were indexed regardless.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// What the audit (`maintenance::Maintenance::Audit`) found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::publish_log::audit::Report>,
}

/// The passes covering what the batch may have changed, each once (a module; a provider
/// version for a zip; a whole provider otherwise: `Pass::covering`); the keys under `modules/` or `providers/` that fit no owner (they get a rejection
/// record); and how many records were ignored (another bucket or kind of event, keys
/// elsewhere in the bucket).
///
/// Every record counts, whoever caused it: the indexer writes only where no notification
/// filter points (`layout::notifies`), so it never sees its own writes, and there is no
/// principal or session name a publisher could borrow to have an upload skipped.
pub fn passes(event: &S3Event, bucket: &str) -> (BTreeSet<Pass>, BTreeSet<String>, usize) {
    let mut passes = BTreeSet::new();
    let mut misplaced = BTreeSet::new();
    let mut ignored = 0;
    for record in &event.records {
        let name = record.event_name.as_deref().unwrap_or_default();
        let relevant = record.s3.bucket.name.as_deref() == Some(bucket)
            && (name.starts_with("ObjectCreated:") || name.starts_with("ObjectRemoved:"));
        let key = relevant.then(|| record.s3.object.key.as_deref().and_then(decode_event_key)).flatten();
        match key.as_deref().map(|k| (layout::classify(k), layout::expected_name(k))) {
            Some((Some(kind), _)) if !kind.is_derived() => {
                passes.insert(Pass::covering(&kind));
            }
            Some((None, Some(_))) => {
                misplaced.extend(key);
            }
            _ => ignored += 1,
        }
    }
    (passes, misplaced, ignored)
}

/// Process one S3 notification batch: record who uploaded each key, reject what fits no owner,
/// then run the passes covering the rest. Every pass runs even if another fails; then failures
/// are returned as an error (`Summary::tally`), so that Lambda retries the event (transient
/// failures: S3 unavailable, a manifest still contended after every retry). Everything else,
/// including rejected uploads, is an answer.
pub async fn process<S: Storage>(indexer: &Indexer<'_, S>, bucket: &str, event: &S3Event) -> Result<Summary, Error> {
    for record in &event.records {
        let key = record.s3.object.key.as_deref().and_then(decode_event_key);
        if let (Some(key), Some(principal)) = (key, record.principal_id.principal_id.as_deref()) {
            indexer.record_principal(&key, principal);
        }
    }
    let (passes, misplaced, ignored) = passes(event, bucket);
    let records = upstream_module_records(event, bucket);
    let mut summary = Summary { ignored_keys: ignored.saturating_sub(records.len()), ..Summary::default() };
    for key in &records {
        if indexer.log_upstream_module_record(key).await? {
            summary.logged.push(key.clone());
        }
    }
    for key in &misplaced {
        indexer.on_object_changed(key).await?;
    }
    summary.rejected_keys = misplaced.len();
    let mut results = Vec::with_capacity(passes.len());
    for pass in passes {
        let outcome = indexer.run(&pass).await;
        if let Err(e) = &outcome {
            tracing::error!(%pass, error = %chain(e), "indexing failed");
        }
        results.push((pass.to_string(), outcome));
    }
    summary.tally(results)
}

impl Summary {
    /// Each pass's outcome into the summary (written, unchanged or failed), then the summary, or
    /// an error naming every failed pass when one failed (the others were run regardless).
    pub fn tally(mut self, results: impl IntoIterator<Item = (String, Result<Outcome, Error>)>) -> Result<Self, Error> {
        let mut first_failure = None;
        for (pass, outcome) in results {
            match outcome {
                Ok(Outcome::Unchanged) => self.unchanged.push(pass),
                Ok(Outcome::Written { .. }) => self.indexed.push(pass),
                Err(e) => {
                    self.failed.push(format!("{pass}: {}", chain(&e)));
                    first_failure.get_or_insert(e);
                }
            }
        }
        match first_failure {
            None => Ok(self),
            Some(e) => {
                tracing::error!(indexed = self.indexed.len(), failed = ?self.failed, "indexing failed for some passes");
                // Unavailable whatever the first failure was: the event is retried, as for a
                // transient failure; the first is the cause, for the log.
                let what = format!("{} pass(es) failed: {}; the first", self.failed.len(), self.failed.join("; "));
                Err(Error::unavailable_from(what, e))
            }
        }
    }
}

/// The modules pull-through's pins and refusals a batch's created keys name, each once (they
/// classify as no owner: `passes` counts them as ignored).
fn upstream_module_records(event: &S3Event, bucket: &str) -> BTreeSet<String> {
    created_keys(event, bucket, |key| layout::upstream_module_record(key).is_some())
}

/// The pull records an S3 notification batch names (the puller's invocation): created keys
/// of this bucket that the puller's filter covers (`layout::notifies_puller`), each once.
pub fn pull_records(event: &S3Event, bucket: &str) -> BTreeSet<String> {
    created_keys(event, bucket, layout::notifies_puller)
}

/// The keys of this bucket a batch says were created and `wanted` takes, each once.
fn created_keys(event: &S3Event, bucket: &str, wanted: impl Fn(&str) -> bool) -> BTreeSet<String> {
    event
        .records
        .iter()
        .filter(|r| r.s3.bucket.name.as_deref() == Some(bucket))
        .filter(|r| r.event_name.as_deref().is_some_and(|n| n.starts_with("ObjectCreated:")))
        .filter_map(|r| r.s3.object.key.as_deref().and_then(decode_event_key))
        .filter(|key| wanted(key))
        .collect()
}

/// Decode a key from an S3 notification: `+` is a space, `%XX` an escaped byte.
pub fn decode_event_key(raw: &str) -> Option<String> {
    crate::percent::decode_text(raw, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(
            decode_event_key("modules/a/b/c/1.0.0%2Bbuild.5.tar.gz").as_deref(),
            Some("modules/a/b/c/1.0.0+build.5.tar.gz")
        );
        assert_eq!(decode_event_key("a+b").as_deref(), Some("a b"));
        assert_eq!(decode_event_key("bad%zz"), None);
        assert_eq!(decode_event_key("cut%2"), None);
        assert_eq!(decode_event_key("%ff"), None);
    }
}
