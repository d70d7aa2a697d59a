//! The puller Lambda: wiring only. Pull records in (S3 notifications), upstream zips copied into
//! the bucket by `registry::upstream::copy`, where the indexer takes over.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    registry::lambda::init_logging();
    let state = registry::lambda::puller_state().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::puller::pull(&state, event))).await
}
