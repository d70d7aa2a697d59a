# The smallest deployment: `make build` first, then `terraform init && terraform apply` here
# (or `make deploy` from the repository root).
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

variable "reserved_concurrency" {
  description = "Reserved concurrent executions per function; -1 (the default) reserves none, which a new account with a low concurrency quota needs. Set it (e.g. TF_VAR_reserved_concurrency=50 make deploy) where the account's quota leaves 100 unreserved after every function's share."
  type        = number
  default     = -1
}

module "registry" {
  source               = "../.."
  name                 = "tf-registry"
  lambda_dir           = var.lambda_dir
  reserved_concurrency = var.reserved_concurrency
}

output "registry_hostname" {
  value = module.registry.registry_hostname
}

output "mirror_url" {
  value = module.registry.mirror_url
}

output "region" {
  description = "Where it is deployed: `make token-create DEPLOYED=infra/examples/minimal` acts there."
  value       = var.region
}

output "bucket_name" {
  value = module.registry.bucket_name
}

output "cli_config" {
  value = module.registry.cli_config
}
