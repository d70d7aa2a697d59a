# Sign-in without stored secrets (docs/DEPLOY.md, "Sign in with OpenID Connect"): GitHub Actions
# jobs of one organisation read its modules with their own ID tokens, and people run
# `terraform login` through a Cognito user pool whose groups name the namespaces they read.
terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.81, < 7.0"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "eu-west-1"
}

variable "lambda_dir" {
  description = "Where `make build` left NAME/bootstrap.zip."
  type        = string
  default     = "../../../target/lambda"
}

variable "github_owner" {
  description = "The GitHub organisation whose workflows may read the modules of the namespace of the same name."
  type        = string
  default     = "acme"
}

variable "cognito_domain" {
  description = "The Cognito hosted sign-in domain prefix (DOMAIN.auth.REGION.amazoncognito.com)."
  type        = string
  default     = "acme-registry"
}

resource "aws_cognito_user_pool" "people" {
  name = "registry-people"
}

resource "aws_cognito_user_pool_domain" "sign_in" {
  domain       = var.cognito_domain
  user_pool_id = aws_cognito_user_pool.people.id
}

# terraform login is a public client (no secret) using the authorization code grant with PKCE;
# it listens on http://localhost:PORT/login for a port of login.ports (10000 to 10010 here).
resource "aws_cognito_user_pool_client" "terraform_cli" {
  name                                 = "terraform-cli"
  user_pool_id                         = aws_cognito_user_pool.people.id
  generate_secret                      = false
  allowed_oauth_flows_user_pool_client = true
  allowed_oauth_flows                  = ["code"]
  allowed_oauth_scopes                 = ["openid"]
  callback_urls                        = [for port in range(10000, 10011) : "http://localhost:${port}/login"]
  supported_identity_providers         = ["COGNITO"]
  access_token_validity                = 60
  token_validity_units {
    access_token = "minutes"
  }
}

locals {
  cognito_issuer = "https://cognito-idp.${var.region}.amazonaws.com/${aws_cognito_user_pool.people.id}"
  cognito_base   = "https://${var.cognito_domain}.auth.${var.region}.amazoncognito.com/oauth2"
}

module "registry" {
  source     = "../.."
  name       = "tf-registry"
  lambda_dir = var.lambda_dir
  oidc_issuers = [
    {
      issuer   = "https://token.actions.githubusercontent.com"
      audience = "https://tf-registry.${var.github_owner}"
      rules = [{
        claim     = "repository_owner"
        equals    = var.github_owner
        modules   = [var.github_owner]
        providers = ["registry.terraform.io/hashicorp/*"]
      }]
    },
    {
      # Cognito's access tokens carry the app client in client_id (no aud).
      issuer   = local.cognito_issuer
      audience = aws_cognito_user_pool_client.terraform_cli.id
      rules = [
        { claim = "cognito:groups", equals = "team-*", modules = ["{value}"] },
        { claim = "cognito:groups", equals = "platform", modules = ["*"], providers = ["*"] },
      ]
      login = {
        client = aws_cognito_user_pool_client.terraform_cli.id
        authz  = "${local.cognito_base}/authorize"
        token  = "${local.cognito_base}/token"
        scopes = ["openid"]
      }
    },
  ]
}

output "registry_hostname" {
  value = module.registry.registry_hostname
}

output "cli_config" {
  value = module.registry.cli_config
}
