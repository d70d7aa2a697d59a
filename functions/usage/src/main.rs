//! The usage Lambda: wiring only. The read functions' download records in (a CloudWatch Logs
//! subscription), per-version counts out (`registry::usage`), under `usage/` in the bucket.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    registry::lambda::init_logging();
    let state = registry::lambda::usage_state().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::usage::fold(&state, event))).await
}
