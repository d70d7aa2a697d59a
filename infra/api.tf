# HTTP API with exactly the routes the router serves. Authorization is the functions' job
# (bearer tokens from the terraform CLI), so routes have none at the gateway.
resource "aws_apigatewayv2_api" "registry" {
  name          = var.name
  protocol_type = "HTTP"
  tags          = var.tags

  # With a custom domain, the default https://ID.execute-api... endpoint would be a second
  # way in, with another hostname (and so other module addresses) and no custom-domain logs.
  disable_execute_api_endpoint = var.domain_name != "" && var.disable_execute_api_endpoint
}

resource "aws_apigatewayv2_integration" "function" {
  for_each = toset(distinct(values(local.routes)))

  api_id                 = aws_apigatewayv2_api.registry.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.function[each.key].invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = 29000
}

resource "aws_apigatewayv2_route" "route" {
  for_each = local.routes

  api_id    = aws_apigatewayv2_api.registry.id
  route_key = each.key
  target    = "integrations/${aws_apigatewayv2_integration.function[each.value].id}"

  # checkov:skip=CKV_AWS_309:The registry authorises requests itself (terraform CLI bearer tokens, per namespace); discovery must stay public.
}

resource "aws_lambda_permission" "api_invokes" {
  for_each = toset(distinct(values(local.routes)))

  statement_id  = "AllowApiGatewayInvoke"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.function[each.key].function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.registry.execution_arn}/*/*"
}

resource "aws_cloudwatch_log_group" "api" {
  name              = "/aws/apigateway/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags              = var.tags

  # checkov:skip=CKV_AWS_338:Access logs are operational; retention is the user's choice (log_retention_days).
  # checkov:skip=CKV_AWS_158:Access logs hold no secrets (no Authorization header, no query strings); kms_key_arn encrypts them when set.
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.registry.id
  name        = "$default"
  auto_deploy = true
  tags        = var.tags

  default_route_settings {
    throttling_rate_limit  = var.throttling_rate_limit
    throttling_burst_limit = var.throttling_burst_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api.arn
    # No query string and no Authorization header: neither URL signatures nor tokens are logged.
    format = jsonencode({
      requestId      = "$context.requestId"
      time           = "$context.requestTime"
      ip             = "$context.identity.sourceIp"
      method         = "$context.httpMethod"
      path           = "$context.path"
      routeKey       = "$context.routeKey"
      status         = "$context.status"
      latencyMs      = "$context.responseLatency"
      integrationMs  = "$context.integrationLatency"
      responseLength = "$context.responseLength"
      userAgent      = "$context.identity.userAgent"
    })
  }
}

resource "aws_apigatewayv2_domain_name" "registry" {
  count       = var.domain_name != "" ? 1 : 0
  domain_name = var.domain_name
  tags        = var.tags

  domain_name_configuration {
    certificate_arn = var.certificate_arn
    endpoint_type   = "REGIONAL"
    security_policy = "TLS_1_2"
  }

  lifecycle {
    precondition {
      condition     = var.certificate_arn != ""
      error_message = "certificate_arn is required when domain_name is set."
    }
  }
}

resource "aws_apigatewayv2_api_mapping" "registry" {
  count       = var.domain_name != "" ? 1 : 0
  api_id      = aws_apigatewayv2_api.registry.id
  domain_name = aws_apigatewayv2_domain_name.registry[0].id
  stage       = aws_apigatewayv2_stage.default.id
}
