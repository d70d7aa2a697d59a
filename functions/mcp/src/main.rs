//! The MCP Lambda (the Model Context Protocol server for coding assistants, `POST /mcp`):
//! wiring only. All logic is in the `registry` library.

use registry::app::Function;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    registry::lambda::init_logging();
    let app = registry::lambda::s3_app(Function::mcp()).await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| registry::lambda::http::respond(&app, event))).await
}
