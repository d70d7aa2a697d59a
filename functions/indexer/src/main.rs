//! The indexer Lambda: wiring only. S3 notifications (or a maintenance command) in, manifests
//! rebuilt by `registry::index`.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    registry::lambda::init_logging();
    let state = registry::lambda::indexer_state().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::indexer::index(&state, event))).await
}
