# Alarms and a dashboard (var.monitoring): what an operator must hear about, each with a
# threshold that docs/OPERATIONS.md explains, with what to do when it fires. They notify only
# when alarm_topic_arn names an SNS topic (when they fire and when they clear).
locals {
  alarm_actions = var.alarm_topic_arn != "" ? [var.alarm_topic_arn] : []
  monitored     = var.monitoring ? local.functions : {}
  # The alarms every function gets, by the suffix of their names.
  function_metrics = {
    errors    = { metric = "Errors", what = "failed", section = "function errors" }
    throttles = { metric = "Throttles", what = "was throttled", section = "throttles" }
  }
  # The queues holding what the indexer and the puller still failed on after Lambda's retries.
  dead_letter_queues = {
    indexer = aws_sqs_queue.indexer_dlq.name
    puller  = aws_sqs_queue.puller_dlq.name
    usage   = aws_sqs_queue.usage_dlq.name
  }
}

# More than 5xx_percent of the API's answers were 5xx over 5 minutes, counted only once at
# least 20 requests came in (a single failure of three requests is not an outage).
resource "aws_cloudwatch_metric_alarm" "api_5xx" {
  count = var.monitoring ? 1 : 0

  alarm_name          = "${var.name}-api-5xx"
  alarm_description   = "More than ${var.alarm_5xx_percent}% of API answers were 5xx over 5 minutes (at least 20 requests). docs/OPERATIONS.md: API 5xx."
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.alarm_5xx_percent
  evaluation_periods  = 1
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags

  metric_query {
    id          = "rate"
    expression  = "IF(requests >= 20, 100 * errors / requests, 0)"
    label       = "5xx %"
    return_data = true
  }
  metric_query {
    id = "errors"
    metric {
      namespace   = "AWS/ApiGateway"
      metric_name = "5xx"
      dimensions  = { ApiId = aws_apigatewayv2_api.registry.id, Stage = "$default" }
      period      = 300
      stat        = "Sum"
    }
  }
  metric_query {
    id = "requests"
    metric {
      namespace   = "AWS/ApiGateway"
      metric_name = "Count"
      dimensions  = { ApiId = aws_apigatewayv2_api.registry.id, Stage = "$default" }
      period      = 300
      stat        = "Sum"
    }
  }
}

# Per function: errors (a crash, a time-out, memory: the registry answers its own errors as
# HTTP responses, so any Lambda error is a bug or a limit worth a look) and throttles
# (reserved_concurrency or the account's limit too low for the traffic).
resource "aws_cloudwatch_metric_alarm" "function" {
  for_each = {
    for pair in setproduct(keys(local.monitored), keys(local.function_metrics)) :
    "${pair[0]}-${pair[1]}" => { function = pair[0], kind = pair[1] }
  }

  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = "The ${each.value.function} function ${local.function_metrics[each.value.kind].what} at least once in 5 minutes. docs/OPERATIONS.md: ${local.function_metrics[each.value.kind].section}."
  namespace           = "AWS/Lambda"
  metric_name         = local.function_metrics[each.value.kind].metric
  dimensions          = { FunctionName = aws_lambda_function.function[each.value.function].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  threshold           = 1
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

# An S3 event the indexer (an upload not published) or the puller (an upstream release not
# copied) gave up on after Lambda's retries: one message is already one too many.
resource "aws_cloudwatch_metric_alarm" "dead_letters" {
  for_each = var.monitoring ? local.dead_letter_queues : {}

  alarm_name          = "${var.name}-${each.key}-dead-letters"
  alarm_description   = "The ${each.key}'s dead-letter queue holds events it failed on. docs/OPERATIONS.md: dead letters."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  threshold           = 1
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_dashboard" "registry" {
  count = var.monitoring ? 1 : 0

  dashboard_name = var.name
  dashboard_body = jsonencode({
    widgets = [
      {
        type = "metric", x = 0, y = 0, width = 12, height = 6
        properties = {
          title  = "API requests and errors"
          region = data.aws_region.current.name
          stat   = "Sum"
          period = 300
          metrics = [for m in ["Count", "4xx", "5xx"] :
          ["AWS/ApiGateway", m, "ApiId", aws_apigatewayv2_api.registry.id, "Stage", "$default"]]
        }
      },
      {
        type = "metric", x = 12, y = 0, width = 12, height = 6
        properties = {
          title  = "API latency (p50, p99)"
          region = data.aws_region.current.name
          period = 300
          metrics = [for s in ["p50", "p99"] :
          ["AWS/ApiGateway", "Latency", "ApiId", aws_apigatewayv2_api.registry.id, "Stage", "$default", { stat = s }]]
        }
      },
      {
        type = "metric", x = 0, y = 6, width = 24, height = 6
        properties = {
          title  = "Function errors and throttles"
          region = data.aws_region.current.name
          stat   = "Sum"
          period = 300
          metrics = flatten([for f in keys(local.functions) : [
            ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.function[f].function_name],
            ["AWS/Lambda", "Throttles", "FunctionName", aws_lambda_function.function[f].function_name],
          ]])
        }
      },
      {
        type = "metric", x = 0, y = 12, width = 12, height = 6
        properties = {
          title  = "Function duration (p99)"
          region = data.aws_region.current.name
          stat   = "p99"
          period = 300
          metrics = [for f in keys(local.functions) :
          ["AWS/Lambda", "Duration", "FunctionName", aws_lambda_function.function[f].function_name]]
        }
      },
      {
        type = "metric", x = 12, y = 12, width = 12, height = 6
        properties = {
          title  = "Dead letters"
          region = data.aws_region.current.name
          stat   = "Maximum"
          period = 300
          metrics = [for f, q in local.dead_letter_queues :
          ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", q]]
        }
      },
    ]
  })
}
