//! The puller adapter: an invocation's S3 notifications of pull records to
//! `upstream::copy::copy_batch`, and its reports back as JSON.

use aws_lambda_events::s3::S3Event;
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use super::{BoxError, PullerState, reported};
use crate::storage::Storage;

/// Pull what one invocation's pull records name (what the runtime calls). An `Err` (storage or
/// the upstream unreachable) makes Lambda retry the event; a zip that does not verify is not.
pub async fn pull<S: Storage>(state: &PullerState<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    Box::pin(pull_payload(state, event.payload)).await
}

/// The puller's answer to an invocation's JSON (what tests call): each pull record's copy
/// report, under its key.
pub async fn pull_payload<S: Storage>(state: &PullerState<S>, payload: Value) -> Result<Value, BoxError> {
    let event: S3Event = serde_json::from_value(payload).map_err(|e| format!("expected S3 notifications: {e}"))?;
    let record_keys = crate::events::pull_records(&event, &state.config.bucket);
    let limit = state.config.limits.provider_zip_bytes;
    let reports = crate::upstream::copy::copy_batch(&state.storage, &state.upstream, record_keys, limit)
        .await
        .map_err(reported)?;
    Ok(serde_json::to_value(reports)?)
}
