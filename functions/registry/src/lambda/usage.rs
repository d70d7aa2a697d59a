//! The usage adapter: a CloudWatch Logs subscription's batch of the read functions' log lines
//! to `usage::fold_event`, and what it did back as JSON.

use lambda_runtime::LambdaEvent;
use serde_json::Value;

use super::{BoxError, UsageState, reported};
use crate::storage::Storage;

/// Fold one batch (what the runtime calls). An `Err` (storage) makes Lambda retry the event;
/// the documents it had already reached skip it then (its id is stored with their counts).
pub async fn fold<S: Storage>(state: &UsageState<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    fold_payload(state, event.payload).await
}

/// The usage function's answer to an invocation's JSON (what tests call).
pub async fn fold_payload<S: Storage>(state: &UsageState<S>, payload: Value) -> Result<Value, BoxError> {
    let event = serde_json::to_vec(&payload)?;
    let now = crate::clock::now_unix();
    match crate::usage::fold_event(&state.storage, &event, state.config.usage, now).await {
        Ok(folded) => {
            tracing::info!(?folded, "usage folded");
            Ok(serde_json::to_value(folded)?)
        }
        // A batch that is no batch will not become one: answered, not retried.
        Err(crate::Error::BadRequest(why)) => {
            tracing::error!(why, "not a usage batch");
            Ok(serde_json::json!({"refused": why}))
        }
        Err(e) => {
            tracing::error!(error = %crate::error::chain(&e), "usage fold failed; the event will be retried");
            Err(reported(e))
        }
    }
}
