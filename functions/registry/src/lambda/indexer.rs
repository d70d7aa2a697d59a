//! The indexer adapter: an invocation's JSON, S3 notifications (`events::process`) or a
//! maintenance command (`maintenance`), to the library call, and its summary back as JSON.

use aws_lambda_events::s3::S3Event;
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use super::{BoxError, IndexerState, reported};
use crate::maintenance::{Maintenance, MaintenanceRequest};
use crate::storage::Storage;

/// What the indexer function is invoked with: a maintenance command (`aws lambda invoke`), or
/// S3 notifications (`aws_lambda_events`' type, as S3 delivers them).
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum IndexerEvent {
    /// `{"reindex": "all"}` or `{"audit": "all"}`.
    Maintenance(MaintenanceRequest),
    /// An S3 notification batch.
    S3(S3Event),
}

/// Index what one invocation names (what the runtime calls). An `Err` makes Lambda retry the
/// event, so only transient failures are errors.
pub async fn index<S: Storage>(state: &IndexerState<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    // Boxed for the same reason as the handler's future in `http::response_event`.
    Box::pin(index_payload(state, event.payload)).await
}

/// The indexer's answer to an invocation's JSON (what tests call).
pub async fn index_payload<S: Storage>(state: &IndexerState<S>, payload: Value) -> Result<Value, BoxError> {
    let event: IndexerEvent = serde_json::from_value(payload)
        .map_err(|e| format!("expected S3 notifications or {{\"reindex\": \"all\"}}: {e}"))?;
    let indexer = crate::index::Indexer::new(&state.storage, state.config.limits.clone())
        .signing_for(state.config.hostname.clone());
    let summary = match event {
        IndexerEvent::Maintenance(request) => {
            Maintenance::try_from(request).map_err(reported)?.run(&indexer).await.map_err(reported)?
        }
        IndexerEvent::S3(event) => {
            crate::events::process(&indexer, &state.config.bucket, &event).await.map_err(reported)?
        }
    };
    tracing::info!(indexed = ?summary.indexed, unchanged = summary.unchanged.len(), ignored = summary.ignored_keys, "indexer done");
    Ok(serde_json::to_value(summary)?)
}
