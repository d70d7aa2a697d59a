//! The indexer function's maintenance commands, invoked by hand (`aws lambda invoke`) rather
//! than by S3: `{"reindex": "all"}` rebuilds every manifest, `{"audit": "all"}` replays the
//! publish log and compares it with every manifest. Read as JSON (`MaintenanceRequest`), typed
//! (`Maintenance`), then run; a run answers with the same `events::Summary` a batch does.

use serde::Deserialize;

use crate::error::Error;
use crate::events::Summary;
use crate::index::Indexer;
use crate::storage::Storage;

/// A maintenance command as the indexer function is invoked with it: an object with a
/// `reindex` or `audit` string (`"all"`, the only one there is, checked by `Maintenance`'s
/// `TryFrom`). Untagged, so that anything else falls through to the S3 notifications.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum MaintenanceRequest {
    /// `{"reindex": …}`.
    Reindex {
        /// `"all"`, the only rebuild there is.
        reindex: String,
    },
    /// `{"audit": …}`.
    Audit {
        /// `"all"`, the only audit there is.
        audit: String,
    },
}

/// A maintenance command the indexer function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maintenance {
    /// `{"reindex": "all"}`: rebuild every manifest (`Indexer::reindex_all`).
    Reindex,
    /// `{"audit": "all"}`: replay the publish log and compare it with every manifest.
    Audit,
}

impl TryFrom<MaintenanceRequest> for Maintenance {
    type Error = Error;

    /// Anything but `"all"` is refused (400), naming the value it was given.
    fn try_from(request: MaintenanceRequest) -> Result<Self, Error> {
        let (command, value, typed) = match &request {
            MaintenanceRequest::Reindex { reindex } => ("reindex", reindex, Maintenance::Reindex),
            MaintenanceRequest::Audit { audit } => ("audit", audit, Maintenance::Audit),
        };
        if value != "all" {
            return Err(Error::BadRequest(format!(
                "unknown {command} request {:?}; use \"all\"",
                crate::address::printable(value)
            )));
        }
        Ok(typed)
    }
}

impl Maintenance {
    /// Run the command. A reindex runs every owner's pass even if another fails, then returns
    /// the failures as an error naming each (`Summary::tally`); an audit answers its report.
    pub async fn run<S: Storage>(self, indexer: &Indexer<'_, S>) -> Result<Summary, Error> {
        match self {
            Maintenance::Reindex => {
                let results = indexer.reindex_all().await?;
                Summary::default().tally(results.into_iter().map(|(owner, outcome)| (owner.to_string(), outcome)))
            }
            Maintenance::Audit => {
                let report = crate::publish_log::audit::audit(indexer.storage()).await?;
                Ok(Summary { audit: Some(report), ..Summary::default() })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(json: serde_json::Value) -> Result<Maintenance, String> {
        let request: MaintenanceRequest = serde_json::from_value(json).map_err(|e| e.to_string())?;
        Maintenance::try_from(request).map_err(|e| e.to_string())
    }

    #[test]
    fn all_is_the_only_command_value() {
        assert_eq!(typed(serde_json::json!({"reindex": "all"})), Ok(Maintenance::Reindex));
        assert_eq!(typed(serde_json::json!({"audit": "all"})), Ok(Maintenance::Audit));
        // The first key that reads as a command decides, as before the typed command.
        assert_eq!(typed(serde_json::json!({"reindex": "all", "audit": "some"})), Ok(Maintenance::Reindex));
        assert_eq!(typed(serde_json::json!({"reindex": 1, "audit": "all"})), Ok(Maintenance::Audit));
        let refused = typed(serde_json::json!({"reindex": "some"})).unwrap_err();
        assert!(refused.contains(r#"unknown reindex request "some"; use "all""#), "{refused}");
        let refused = typed(serde_json::json!({"audit": "ALL"})).unwrap_err();
        assert!(refused.contains(r#"unknown audit request "ALL"; use "all""#), "{refused}");
        assert!(typed(serde_json::json!({"Records": []})).is_err(), "not a command: S3's to read");
    }
}
