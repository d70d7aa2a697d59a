//! The discovery Lambda: wiring only. It answers from configuration and builds no S3 client.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    registry::lambda::init_logging();
    let app = registry::lambda::discovery_app()?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::http::respond(&app, event))).await
}
