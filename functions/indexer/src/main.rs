//! The indexer Lambda: wiring only. S3 notifications in, manifests rebuilt by `registry::index`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::tracing::init_default_subscriber();
    let function = registry::lambda::indexer_function().await?;
    lambda_http::lambda_runtime::run(lambda_http::service_fn(|event| registry::lambda::index(&function, event))).await
}
