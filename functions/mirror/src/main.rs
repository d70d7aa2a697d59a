//! The mirror Lambda: wiring only. All logic is in the `registry` library.

use registry::router::Service;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::tracing::init_default_subscriber();
    let app = registry::lambda::s3_app(Service::Mirror).await?;
    lambda_http::run(lambda_http::service_fn(|request| registry::lambda::handle(&app, request))).await
}
