//! The indexer Lambda: wiring only. S3 notifications in, manifests rebuilt by `registry::index`.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let function = registry::lambda::indexer_function().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::index(&function, event))).await
}
