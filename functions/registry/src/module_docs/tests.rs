use super::*;

fn file(path: &str, text: &str) -> KeptFile {
    KeptFile { path: path.to_string(), bytes: Some(text.as_bytes().to_vec()) }
}

const README: &str = "# VPC\n\n[![CI](https://ci.example/badge.svg)](https://ci.example)\n\nA VPC with public and private subnets.\n\n| Name | Value |\n|---|---|\n| a | b |\n\n```hcl\nmodule \"vpc\" {\n  source = \"x\"\n}\n```\n";

const VARIABLES: &str = r#"
variable "name" {
  type        = string
  description = "Name of the VPC."
}

variable "cidr" {
  description = "CIDR block"
  type        = string
  default     = "10.0.0.0/16"
}

variable "subnets" {
  type = list(object({
    name = string
    cidr = string
    tags = optional(map(string), {})
  }))
  default = [{ name = "a", cidr = "10.0.1.0/24" }]
  description = <<-EOT
    The subnets to create.
    One per zone.
  EOT
}

variable "password" {
  type      = string
  sensitive = true
  default   = null
}

variable "count_of" {
  type    = number
  default = 3
}

variable "untyped" {}
"#;

const OUTPUTS: &str = r#"
output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}

output "secret" {
  value     = var.password
  sensitive = true
}
"#;

const MAIN: &str = r#"
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
"#;

#[test]
fn summary_is_the_first_paragraph_of_prose() {
    let readme = "---\ntitle: x\n---\n# VPC module\n\n[![CI](https://ci/badge.svg)](https://ci)\n\n\
                      Creates a **VPC** with [subnets](https://example.com/x) and `NAT`\ngateways.\n\nMore text.\n";
    assert_eq!(summary(readme).as_deref(), Some("Creates a VPC with subnets and NAT gateways."));
    assert_eq!(
        summary("# Title\n\n```hcl\nmodule {}\n```\n\n| a | b |\n|---|---|\n\nText after.").as_deref(),
        Some("Text after.")
    );
    assert_eq!(
        summary("<p align=center><img src=x></p>\nSetext\n======\n\nBody __here__.").as_deref(),
        Some("Body here.")
    );
    assert_eq!(summary("# Only a heading\n"), None);
    assert_eq!(summary(""), None);
    let long = format!("{} end", "word ".repeat(100));
    let cut = summary(&long).unwrap();
    assert!(cut.ends_with("word…") && cut.chars().count() <= SUMMARY_MAX_CHARS + 1, "{cut}");
    // Not Markdown at all, odd bytes: never a panic.
    assert_eq!(summary("é]( ]").as_deref(), Some("é"));
}

#[test]
fn reads_a_real_world_module() {
    let files = [
        file("README.md", README),
        file("variables.tf", VARIABLES),
        file("outputs.tf", OUTPUTS),
        file("main.tf", MAIN),
        file("modules/subnet/main.tf", "variable \"zone\" { type = string }\noutput \"id\" { value = 1 }\n"),
        file("modules/subnet/README.md", "# Subnet\n"),
        file("modules/notes/README.md", "not a module: no .tf file"),
        file("examples/complete/main.tf", "module \"vpc\" {\n  source = \"../..\"\n  name = \"x\"\n}\n"),
    ];
    let docs = extract(&files, "abc");
    assert_eq!(docs.sha256, "abc");
    assert!(docs.warnings.is_empty(), "{:?}", docs.warnings);
    let root = &docs.root;
    assert_eq!(root.path, "");
    assert_eq!(root.readme.as_deref(), Some(README));
    let input = |name: &str| root.inputs.iter().find(|i| i.name == name).unwrap().clone();
    assert_eq!(
        input("name"),
        Input {
            name: "name".into(),
            r#type: Some("string".into()),
            description: Some("Name of the VPC.".into()),
            default: None,
            required: true,
            sensitive: false,
            non_nullable: false,
        }
    );
    assert_eq!(input("cidr").default.as_deref(), Some("\"10.0.0.0/16\""));
    assert!(!input("cidr").required);
    let subnets = input("subnets");
    assert_eq!(
        subnets.r#type.as_deref(),
        Some("list(object({\n    name = string\n    cidr = string\n    tags = optional(map(string), {})\n  }))")
    );
    assert_eq!(subnets.default.as_deref(), Some(r#"[{"cidr":"10.0.1.0/24","name":"a"}]"#));
    assert_eq!(subnets.description.as_deref(), Some("The subnets to create.\nOne per zone.\n"));
    assert_eq!((input("password").default.as_deref(), input("password").sensitive), (Some("null"), true));
    assert!(!input("password").required, "a null default makes a variable optional");
    assert_eq!(input("count_of").default.as_deref(), Some("3"));
    assert_eq!((input("untyped").r#type, input("untyped").required), (None, true));
    assert_eq!(root.inputs.len(), 6);

    assert_eq!(
        root.outputs,
        [
            Output { name: "vpc_id".into(), description: Some("The VPC's id.".into()), sensitive: false },
            Output { name: "secret".into(), description: None, sensitive: true },
        ]
    );
    assert_eq!(root.required_version.as_deref(), Some(">= 1.5"));
    let provider = |name: &str| root.provider_dependencies.iter().find(|p| p.name == name).unwrap().clone();
    assert_eq!(
        provider("aws"),
        ProviderDependency {
            name: "aws".into(),
            namespace: "hashicorp".into(),
            source: "hashicorp/aws".into(),
            version: ">= 5.0, < 6.0".into()
        }
    );
    assert_eq!(provider("widget").namespace, "acme");
    assert_eq!((provider("legacy").source.as_str(), provider("legacy").version.as_str()), ("", ">= 2.0"));
    assert_eq!(root.resources, [Resource { name: "this".into(), r#type: "aws_vpc".into() }]);
    assert_eq!(
        root.dependencies,
        [Dependency {
            name: "labels".into(),
            source: "app.terraform.io/acme/labels/null".into(),
            version: "~> 1.2".into()
        }]
    );

    assert_eq!(docs.submodules.len(), 1, "modules/notes has no module file");
    let subnet = &docs.submodules[0];
    assert_eq!((subnet.path.as_str(), subnet.readme.as_deref()), ("modules/subnet", Some("# Subnet\n")));
    assert_eq!((subnet.inputs[0].name.as_str(), subnet.outputs[0].name.as_str()), ("zone", "id"));
    assert_eq!(docs.examples.len(), 1);
    assert_eq!(docs.examples[0].dependencies[0].source, "../..");
}

#[test]
fn a_file_that_does_not_parse_is_a_warning_and_the_rest_is_read() {
    let files = [
        file("broken.tf", "variable \"x\" {\n  type = \n"),
        file("variables.tf", "variable \"ok\" { default = true }\n"),
        file("broken.tf.json", "{\"variable\": "),
        KeptFile { path: "huge.tf".into(), bytes: None },
        KeptFile { path: "latin1.tf".into(), bytes: Some(vec![0xe9, b'\n']) },
        file("zz_dup.tf", "variable \"ok\" {}\n"),
    ];
    let docs = extract(&files, "");
    assert_eq!(docs.root.inputs.len(), 1);
    assert_eq!(docs.root.inputs[0].default.as_deref(), Some("true"));
    let warnings = docs.warnings.join("\n");
    assert!(warnings.contains("broken.tf:2:10: does not parse as HCL (invalid expression"), "{warnings}");
    assert!(
        warnings.contains("broken.tf.json:1:13: does not parse as JSON (EOF while parsing a value);"),
        "{warnings}"
    );
    assert!(warnings.contains("huge.tf: larger than 1024 KiB, not read"), "{warnings}");
    assert!(warnings.contains("latin1.tf: not UTF-8"), "{warnings}");
    assert!(warnings.contains("zz_dup.tf: variable \"ok\" is declared twice"), "{warnings}");
}

#[test]
fn reads_json_syntax() {
    let json = r#"{
          "variable": {"region": {"type": "string", "default": "eu-west-1", "description": "Where."}},
          "output": [{"arn": {"value": "${aws_vpc.this.arn}", "sensitive": true}}],
          "terraform": {"required_version": ">= 1.6", "required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}}},
          "resource": {"aws_vpc": {"this": {}, "other": {}}},
          "module": {"m": {"source": "./m"}}
        }"#;
    let docs = extract(&[file("main.tf.json", json)], "");
    let root = &docs.root;
    assert_eq!(root.inputs[0].default.as_deref(), Some("\"eu-west-1\""));
    assert_eq!(root.inputs[0].description.as_deref(), Some("Where."));
    assert!(root.outputs[0].sensitive);
    assert_eq!(root.required_version.as_deref(), Some(">= 1.6"));
    assert_eq!(root.provider_dependencies[0].version, "~> 5.0");
    assert_eq!(root.resources.len(), 2);
    assert_eq!(root.dependencies[0].source, "./m");
}

#[test]
fn wanted_files_are_readmes_and_module_files_of_documented_directories() {
    for path in
        ["README.md", "readme.markdown", "main.tf", "x.tf.json", "x.tofu", "modules/a/main.tf", "examples/b/README.md"]
    {
        assert!(wanted(path), "{path}");
    }
    for path in
        ["docs/README.md", "modules/a/b/main.tf", "modules/main.tf", "main.go", "examples/b/notes.txt", "README.txt"]
    {
        assert!(!wanted(path), "{path}");
    }
}

#[test]
fn a_file_whose_objects_would_parse_in_quadratic_time_is_not_read() {
    // hcl-edit compares each attribute of an object with every one before it: 4,000 attributes
    // are 8 million comparisons, a 1 MiB file's 150,000 would take minutes.
    let file = |keys: usize| {
        let attributes: String = (0..keys).map(|i| format!("a{i}=1,")).collect();
        format!("variable \"v\" {{}}\nlocals {{\n  x = {{{attributes}}}\n}}\n")
    };
    let widest = (KEPT_FILE_BYTES - file(0).len()) / "a999999=1,".len();
    for keys in [4_000, widest] {
        let text = file(keys);
        assert!(text.len() <= KEPT_FILE_BYTES);
        let docs = extract(&[KeptFile { path: "main.tf".into(), bytes: Some(text.into_bytes()) }], "00");
        assert!(docs.root.inputs.is_empty(), "not parsed");
        assert_eq!(docs.warnings.len(), 1, "{:?}", docs.warnings);
        let warning = &docs.warnings[0];
        assert!(warning.starts_with(&format!("main.tf: objects of up to {keys} attributes")), "{warning}");
        assert!(warning.ends_with("not read"), "what the judgment takes for a file not read: {warning}");
    }
    // Objects within the bound are read as ever: a map of 3,000 entries.
    let docs = extract(&[KeptFile { path: "main.tf".into(), bytes: Some(file(3_000).into_bytes()) }], "00");
    assert_eq!((docs.root.inputs.len(), docs.warnings.len()), (1, 0), "{:?}", docs.warnings);
}
