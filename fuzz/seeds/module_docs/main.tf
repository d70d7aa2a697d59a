
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 6.0"
    }
    widget = {
      source = "registry.example.com/acme/widget"
    }
    legacy = ">= 2.0"
  }
}

resource "aws_vpc" "this" {
  cidr_block = var.cidr
}

module "labels" {
  source  = "app.terraform.io/acme/labels/null"
  version = "~> 1.2"
}
