//! The discovery Lambda: wiring only. It answers from configuration and builds no S3 client.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::tracing::init_default_subscriber();
    let app = registry::lambda::discovery_app()?;
    lambda_http::run(lambda_http::service_fn(|request| registry::lambda::handle(&app, request))).await
}
