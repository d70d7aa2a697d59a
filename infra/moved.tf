# Upgrades of a deployment made before route keys took ANY method (2026-11): each old
# `GET /path` route becomes the `ANY /path` route in place (UpdateRoute), so requests never
# meet a path without a route while the upgrade applies; `POST /ui/sign-out` likewise, and
# `POST /ui/sign-in`, whose path `ANY /ui/sign-in` now covers, is removed. Remove this file once
# every deployment has applied a version with it.

moved {
  from = aws_apigatewayv2_route.route["GET /.well-known/terraform.json"]
  to   = aws_apigatewayv2_route.route["ANY /.well-known/terraform.json"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules/{namespace}/{name}/{system}/versions"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules/{namespace}/{name}/{system}/versions"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules/{namespace}/{name}/{system}/{version}/download"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules/{namespace}/{name}/{system}/{version}/download"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/mirror/{hostname}/{namespace}/{type}/{file}"]
  to   = aws_apigatewayv2_route.route["ANY /v1/mirror/{hostname}/{namespace}/{type}/{file}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/providers/{namespace}/{type}/versions"]
  to   = aws_apigatewayv2_route.route["ANY /v1/providers/{namespace}/{type}/versions"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}"]
  to   = aws_apigatewayv2_route.route["ANY /v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules/search"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules/search"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules/{namespace}/{name}/{system}"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules/{namespace}/{name}/{system}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /v1/modules/{namespace}/{name}/{system}/{version}"]
  to   = aws_apigatewayv2_route.route["ANY /v1/modules/{namespace}/{name}/{system}/{version}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /"]
  to   = aws_apigatewayv2_route.route["ANY /"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/modules/{namespace}/{name}/{system}"]
  to   = aws_apigatewayv2_route.route["ANY /ui/modules/{namespace}/{name}/{system}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/modules/{namespace}/{name}/{system}/{version}"]
  to   = aws_apigatewayv2_route.route["ANY /ui/modules/{namespace}/{name}/{system}/{version}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/providers/{hostname}/{namespace}/{type}"]
  to   = aws_apigatewayv2_route.route["ANY /ui/providers/{hostname}/{namespace}/{type}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/providers/{hostname}/{namespace}/{type}/{version}"]
  to   = aws_apigatewayv2_route.route["ANY /ui/providers/{hostname}/{namespace}/{type}/{version}"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/sign-in"]
  to   = aws_apigatewayv2_route.route["ANY /ui/sign-in"]
}

moved {
  from = aws_apigatewayv2_route.route["GET /ui/assets/{file}"]
  to   = aws_apigatewayv2_route.route["ANY /ui/assets/{file}"]
}

moved {
  from = aws_apigatewayv2_route.route["POST /ui/sign-out"]
  to   = aws_apigatewayv2_route.route["ANY /ui/sign-out"]
}
