# Download counts (docs/USAGE.md): each read function that answers downloads writes one JSON
# line per download to its log ({"level":"INFO","usage":{...}}, registry::usage); a
# subscription on its log group delivers exactly those lines, in batches, to the usage
# function, which folds them into usage/. Nothing on the read path waits for it.
resource "aws_lambda_permission" "logs_invoke_usage" {
  for_each = toset(local.usage_sources)

  statement_id   = "logs-${each.key}"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.function["usage"].function_name
  principal      = "logs.amazonaws.com"
  source_arn     = "${aws_cloudwatch_log_group.function[each.key].arn}:*"
  source_account = data.aws_caller_identity.current.account_id
}

resource "aws_cloudwatch_log_subscription_filter" "usage" {
  for_each = toset(local.usage_sources)

  name            = "${var.name}-${each.key}-usage"
  log_group_name  = aws_cloudwatch_log_group.function[each.key].name
  filter_pattern  = "{ $.usage.v = 1 }"
  destination_arn = aws_lambda_function.function["usage"].arn

  depends_on = [aws_lambda_permission.logs_invoke_usage]
}
