//! The puller adapter: an invocation's S3 notifications of pull records to
//! `upstream::copy::copy_batch` (providers) and `upstream::module_pull::pull` (modules), and
//! their reports back as JSON.

use aws_lambda_events::s3::S3Event;
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use super::{BoxError, PullerState, reported};
use crate::storage::Storage;

/// Pull what one invocation's pull records name (what the runtime calls). An `Err` (storage, or
/// for a provider the upstream unreachable) makes Lambda retry the event; a zip that does not
/// verify is not, and a module pull's upstream failure is recorded beside its pull record.
pub async fn pull<S: Storage>(state: &PullerState<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    Box::pin(pull_payload(state, event.payload)).await
}

/// The puller's answer to an invocation's JSON (what tests call): each pull record's copy
/// report, under its key. Provider pull records go to `upstream::copy::copy_batch`, module
/// pull records to `upstream::module_pull::pull`; every record is tried before the first
/// failure worth retrying is returned.
pub async fn pull_payload<S: Storage>(state: &PullerState<S>, payload: Value) -> Result<Value, BoxError> {
    let event: S3Event = serde_json::from_value(payload).map_err(|e| format!("expected S3 notifications: {e}"))?;
    let (module_keys, provider_keys): (Vec<String>, Vec<String>) =
        crate::events::pull_records(&event, &state.config.bucket)
            .into_iter()
            .partition(|key| crate::layout::upstream_module_pull_release(key).is_some());
    let mut reports = serde_json::Map::new();
    let mut failure = None;
    if !module_keys.is_empty() {
        let upstream =
            state.module_upstream.as_ref().ok_or("a module pull record, and REGISTRY_UPSTREAM_MODULES is empty")?;
        let bounds = state.config.archive_bounds();
        for key in module_keys {
            match crate::upstream::module_pull::pull(&state.storage, upstream, &key, bounds).await {
                Ok(report) => {
                    tracing::info!(key, ?report, "pulled");
                    reports.insert(key, serde_json::to_value(report)?);
                }
                Err(e) => {
                    tracing::error!(key, error = %crate::error::chain(&e), "module pull failed; the event will be retried");
                    failure.get_or_insert(e);
                }
            }
        }
    }
    if !provider_keys.is_empty() {
        let upstream = state.upstream.as_ref().ok_or("a provider pull record, and REGISTRY_UPSTREAM_HOSTS is empty")?;
        let limit = state.config.limits.provider_zip_bytes;
        match crate::upstream::copy::copy_batch(&state.storage, upstream, provider_keys, limit).await {
            Ok(copied) => {
                for (key, report) in copied {
                    reports.insert(key, serde_json::to_value(report)?);
                }
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => Err(reported(e)),
        None => Ok(Value::Object(reports)),
    }
}
