//! S3 event notifications, as S3 delivers them to the indexer Lambda, and the indexer's
//! handling of a batch.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::error::Error;
use crate::index::{Indexer, Outcome};
use crate::layout::{self, Owner};
use crate::storage::Storage;

/// What the indexer function is invoked with: S3 notifications, or a manual
/// `{"reindex": "all"}` (`aws lambda invoke`) to rebuild every manifest.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum IndexerEvent {
    Reindex { reindex: String },
    S3(S3Event),
}

#[derive(Debug, Deserialize)]
pub struct S3Event {
    /// Required: anything without it is not an S3 notification.
    #[serde(rename = "Records")]
    pub records: Vec<S3Record>,
}

#[derive(Debug, Deserialize)]
pub struct S3Record {
    #[serde(rename = "eventName", default)]
    pub event_name: String,
    #[serde(rename = "userIdentity", default)]
    pub user_identity: Option<UserIdentity>,
    pub s3: S3Entity,
}

#[derive(Debug, Deserialize)]
pub struct UserIdentity {
    /// For a write by a Lambda function's role: `AWS:ROLE_ID:FUNCTION_NAME`.
    #[serde(rename = "principalId", default)]
    pub principal_id: String,
}

#[derive(Debug, Deserialize)]
pub struct S3Entity {
    pub bucket: S3Bucket,
    pub object: S3Object,
}

#[derive(Debug, Deserialize)]
pub struct S3Bucket {
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub struct S3Object {
    /// URL-encoded, with `+` for a space, as S3 writes it in notifications.
    pub key: String,
}

/// What one invocation did, for the function's answer and log.
#[derive(Debug, Default, serde::Serialize)]
pub struct Summary {
    pub indexed: Vec<String>,
    pub unchanged: Vec<String>,
    pub ignored_keys: usize,
    /// Keys under `modules/` or `providers/` that fit no module or provider.
    pub rejected_keys: usize,
}

impl S3Event {
    /// The owners (modules, providers) whose manifests the batch may have changed, each once;
    /// the keys under `modules/` or `providers/` that fit no owner (they get a rejection
    /// record); and how many records were ignored (another bucket or kind of event, keys
    /// elsewhere in the bucket).
    ///
    /// `own_session` is the indexer's own role session name (its function name): records of
    /// its own manifest writes are skipped, so it does not wake itself up.
    pub fn owners(&self, bucket: &str, own_session: Option<&str>) -> (BTreeSet<Owner>, BTreeSet<String>, usize) {
        let mut owners = BTreeSet::new();
        let mut misplaced = BTreeSet::new();
        let mut ignored = 0;
        for record in &self.records {
            let by_self = match (own_session, &record.user_identity) {
                (Some(session), Some(who)) => who.principal_id.rsplit(':').next() == Some(session),
                _ => false,
            };
            let relevant = record.s3.bucket.name == bucket
                && !by_self
                && (record.event_name.starts_with("ObjectCreated:") || record.event_name.starts_with("ObjectRemoved:"));
            let key = relevant.then(|| decode_event_key(&record.s3.object.key)).flatten();
            match key.as_deref().map(|k| (layout::classify(k), layout::expected_name(k))) {
                Some((Some(kind), _)) => {
                    owners.insert(kind.owner());
                }
                Some((None, Some(_))) => {
                    misplaced.extend(key);
                }
                _ => ignored += 1,
            }
        }
        (owners, misplaced, ignored)
    }
}

/// Handle one invocation. Transient failures (S3 unavailable, a manifest still contended
/// after every retry) are returned as errors so that Lambda retries the event; everything
/// else, including rejected uploads, is an answer.
pub async fn handle<S: Storage>(
    indexer: &Indexer<'_, S>,
    bucket: &str,
    own_session: Option<&str>,
    event: IndexerEvent,
) -> Result<Summary, Error> {
    let mut summary = Summary::default();
    let results = match event {
        IndexerEvent::Reindex { reindex } if reindex == "all" => indexer.reindex_all().await?,
        IndexerEvent::Reindex { reindex } => {
            return Err(Error::BadRequest(format!(
                "unknown reindex request {:?}; use \"all\"",
                crate::address::printable(&reindex)
            )));
        }
        IndexerEvent::S3(event) => {
            let (owners, misplaced, ignored) = event.owners(bucket, own_session);
            summary.ignored_keys = ignored;
            for key in &misplaced {
                indexer.on_object_changed(key).await?;
            }
            summary.rejected_keys = misplaced.len();
            let mut results = Vec::with_capacity(owners.len());
            let mut failure = None;
            for owner in owners {
                // Index every owner even if one fails, then report the failure for a retry.
                match indexer.reindex(&owner).await {
                    Ok(outcome) => results.push((owner, outcome)),
                    Err(e) => {
                        tracing::error!(?owner, error = %e, "indexing failed");
                        failure = Some(e);
                    }
                }
            }
            if let Some(e) = failure {
                return Err(e);
            }
            results
        }
    };
    for (owner, outcome) in results {
        let name = match &owner {
            Owner::Module(m) => format!("module {m}"),
            Owner::Provider(p) => format!("provider {p}"),
        };
        match outcome {
            Outcome::Unchanged => summary.unchanged.push(name),
            Outcome::Written { .. } => summary.indexed.push(name),
        }
    }
    Ok(summary)
}

/// Decode a key from an S3 notification: `+` is a space, `%XX` an escaped byte.
pub fn decode_event_key(raw: &str) -> Option<String> {
    percent_decode(&raw.replace('+', " "))
}

/// Decode `%XX` escapes; `None` for malformed escapes or non-UTF-8 results.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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
        assert_eq!(percent_decode("bad%zz"), None);
        assert_eq!(percent_decode("cut%2"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
