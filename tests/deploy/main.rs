//! `make deploy-check`: infra/ applied as a user applies it, against an AWS API emulator, and
//! read back. moto (PyPI `moto[server]`) serves the AWS API over TLS on loopback; terraform
//! applies `infra/tests/deploy` (the module as `infra/examples/minimal` calls it, plus a
//! publisher with CI identities, a key admin and an upstream host) with dummy function zips; boto3 reads the
//! deployment back (`infra/tests/deploy/read_back.py`), and this test holds it against the
//! code's own tables: the router's route keys, the layout's notification filters and trust
//! boundary, the functions' configuration. Then a second plan may differ only where moto is
//! known not to store an attribute, and destroy must leave nothing.
//!
//! Where moto is less strict than AWS, or differently strict, the harness compensates in
//! `infra/tests/deploy/moto_tls.py` (bucket policy Conditions) and below (the re-plan), and
//! says so there.

// Test code: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

mod access;
mod ci_trust;
mod moto;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use registry::layout;
use registry::router::{BasePaths, route_templates};
use serde_json::{Value, json};
use support::{TempDir, lambda_binaries, skipped, terraform_or_skip};

/// The module's `name` in infra/tests/deploy/main.tf: every resource is named after it.
const NAME: &str = "tf-registry";
const REGION: &str = "eu-west-1";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the repository").to_path_buf()
}

/// What the test needs from the machine, or `None` after a loud SKIPPED line.
struct Tools {
    terraform: PathBuf,
    /// moto's virtual environment's python (boto3 and moto's IAM evaluator come with it).
    python: PathBuf,
    /// A filesystem mirror holding hashicorp/aws (no network to fetch it).
    mirror: PathBuf,
}

fn tools() -> Option<Tools> {
    const TEST: &str = "deploy-check (infra/ applied against moto)";
    let terraform = terraform_or_skip(TEST)?;
    let python = std::env::var_os("MOTO_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".cache/tf-registry-tools/moto/bin/python")
    });
    let has_moto = python.is_file()
        && Command::new(&python).args(["-c", "import moto.server, boto3"]).output().is_ok_and(|o| o.status.success());
    if !has_moto {
        let why = format!(
            "no moto at {} (python3 -m venv ~/.cache/tf-registry-tools/moto && its pip install 'moto[server]'; tests/setup.sh does it; MOTO_PYTHON names another)",
            python.display()
        );
        skipped(TEST, &why);
        return None;
    }
    let mirror = std::env::var_os("TF_PLUGIN_MIRROR").map(PathBuf::from).unwrap_or_else(|| "/opt/tf-plugins".into());
    if !mirror.join("registry.terraform.io/hashicorp/aws").is_dir() {
        skipped(TEST, &format!("no AWS provider at {} (and no network to fetch one)", mirror.display()));
        return None;
    }
    Some(Tools { terraform, python, mirror })
}

/// A terraform run in the copied root, against moto, with nothing from the user's environment.
fn terraform(tools: &Tools, moto: &moto::Moto, work: &TempDir, args: &[&str]) -> Output {
    let work = work.path();
    let root = work.join("infra/tests/deploy");
    let output = moto
        .aws_env(&mut Command::new(&tools.terraform))
        .current_dir(&root)
        .env("TF_CLI_CONFIG_FILE", work.join("tf.rc"))
        .env("TF_DATA_DIR", work.join(".terraform"))
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_VAR_lambda_dir", work.join("lambda"))
        .args(args)
        .output()
        .expect("terraform runs");
    assert!(output.status.success(), "terraform {args:?} failed:\n{}", support::text(&output));
    output
}

/// A copy of infra/ to apply (terraform writes its lock file and state beside the root), the
/// CLI configuration, and one dummy zip per function (moto stores code, never runs it here).
fn workspace(tools: &Tools) -> TempDir {
    let dir = TempDir::new("deploy-check");
    let work = dir.path();
    copy_dir(&repo().join("infra"), &work.join("infra"));
    let rc = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
        tools.mirror.display()
    );
    std::fs::write(work.join("tf.rc"), rc).unwrap();
    for function in lambda_binaries() {
        let dir = work.join("lambda").join(&function);
        std::fs::create_dir_all(&dir).unwrap();
        let mut zip = zip::ZipWriter::new(std::fs::File::create(dir.join("bootstrap.zip")).unwrap());
        zip.start_file("bootstrap", zip::write::SimpleFileOptions::default()).unwrap();
        std::io::Write::write_all(&mut zip, function.as_bytes()).unwrap();
        zip.finish().unwrap();
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        // A developer's own init of a root (.terraform, its lock file, state) is not the module.
        if name.to_string_lossy().starts_with(".terraform") || name.to_string_lossy().starts_with("terraform.tfstate") {
            continue;
        }
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &to.join(&name)),
            false => drop(std::fs::copy(entry.path(), to.join(&name)).unwrap()),
        }
    }
}

#[test]
fn infra_applies_against_moto_and_reads_back_as_the_code_says() {
    let Some(tools) = tools() else { return };
    let moto = moto::Moto::start(&tools.python);
    let work = workspace(&tools);
    terraform(&tools, &moto, &work, &["init", "-input=false", "-backend=false", "-no-color"]);
    terraform(&tools, &moto, &work, &["apply", "-auto-approve", "-input=false", "-no-color"]);
    let outputs: Value =
        serde_json::from_slice(&terraform(&tools, &moto, &work, &["output", "-json"]).stdout).expect("outputs");
    let bucket = outputs["bucket_name"]["value"].as_str().expect("bucket_name").to_string();
    let hostname = outputs["registry_hostname"]["value"].as_str().expect("registry_hostname").to_string();
    let topic = outputs["alarm_topic_arn"]["value"].as_str().expect("alarm_topic_arn").to_string();
    // The block README and DEPLOY.md show, for this deployment's host.
    let mirror = format!("https://{hostname}{}", registry::router::MIRROR_BASE_PATH_DEFAULT);
    assert_eq!(
        outputs["cli_config"]["value"].as_str(),
        Some(registry::cli_config::provider_installation(Some(&hostname), &mirror).as_str()),
        "the cli_config output vs registry::cli_config"
    );

    let deployed = moto.read_back(NAME, &bucket, &access::probes(&hostname));
    routes_are_the_routers(&deployed);
    functions_start_with_their_environment(&deployed, &bucket, &hostname);
    notifications_are_the_layouts(&deployed);
    download_records_reach_the_usage_function(&deployed);
    access::each_principal_reaches_what_the_layout_says(&deployed, &hostname);
    ci_trust::ci_roles_admit_only_the_listed_tags(&deployed, &moto, &outputs["publisher_role_arns"]["value"]);
    alarms_watch_every_function_and_queue(&deployed, &topic);

    replan_differs_only_where_moto_stores_nothing(&tools, &moto, &work);
    terraform(&tools, &moto, &work, &["destroy", "-auto-approve", "-input=false", "-no-color"]);
    let after = moto.read_back(NAME, &bucket, &access::probes(&hostname));
    assert_eq!(after["functions"], json!({}), "destroy left functions");
    assert_eq!(after["principals"], json!({}), "destroy left roles or policies");
    assert_eq!(after["api"], Value::Null, "destroy left the API");
    assert_eq!(after["monitoring"]["alarms"], json!({}), "destroy left alarms");
}

/// The log groups of exactly the functions that count downloads deliver exactly the download
/// record lines (`{"level":"INFO","usage":…}`) to the usage function.
fn download_records_reach_the_usage_function(deployed: &Value) {
    let wanted: serde_json::Map<String, Value> = registry::usage::COUNTING_FUNCTIONS
        .iter()
        .map(|f| (f.to_string(), json!([{"pattern": "{ $.usage.v = 1 }", "destination": format!("{NAME}-usage")}])))
        .collect();
    assert_eq!(deployed["log_subscriptions"], Value::Object(wanted), "log subscriptions as applied");
}

/// Every route key the router lists reaches the function of its service, through a Lambda
/// proxy integration with payload 2.0 (what `lambda::http::guard` reads), and nothing else is routed.
fn routes_are_the_routers(deployed: &Value) {
    let code: BTreeSet<(String, String)> = route_templates(&BasePaths::default())
        .into_iter()
        .map(|(service, key)| (key, format!("{NAME}-{}", service.function_name())))
        .collect();
    let routes = deployed["api"]["routes"].as_array().expect("routes");
    let applied: BTreeSet<(String, String)> = routes
        .iter()
        .map(|r| (r["key"].as_str().unwrap().to_string(), r["function"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(applied, code, "API Gateway routes as applied vs router::route_templates");
    for r in routes {
        assert_eq!((&r["integration_type"], &r["payload_format_version"]), (&"AWS_PROXY".into(), &"2.0".into()), "{r}");
        assert_eq!(r["authorization_type"], "NONE", "the functions authorise, not the gateway: {r}");
    }
    assert_eq!(deployed["api"]["stages"], json!(["$default"]));
}

/// One function per Lambda binary, each with a role of its own, and an environment its
/// configuration loads from (`Config::from_lookup`, as the function does at its cold start)
/// naming the bucket and the API's hostname.
fn functions_start_with_their_environment(deployed: &Value, bucket: &str, hostname: &str) {
    let functions = deployed["functions"].as_object().expect("functions");
    let names: BTreeSet<String> = functions.keys().cloned().collect();
    assert_eq!(names, lambda_binaries(), "functions as applied vs Lambda binaries in functions/");
    for (name, f) in functions {
        assert_eq!(f["role"], format!("{NAME}-{name}"), "{name} runs with a role of its own");
        assert_eq!((&f["runtime"], &f["handler"]), (&"provided.al2023".into(), &"bootstrap".into()), "{name}");
        assert_eq!(f["architectures"], json!(["arm64"]), "{name}");
        let env: BTreeMap<String, String> = serde_json::from_value(f["environment"].clone()).expect("variables");
        let asked = std::sync::Mutex::new(BTreeSet::new());
        let config = registry::Config::from_lookup(|k| {
            asked.lock().unwrap().insert(k.to_string());
            env.get(k).cloned()
        })
        .unwrap_or_else(|e| panic!("{name} would not start with its environment: {e}"));
        let asked = asked.into_inner().unwrap();
        let ignored: Vec<&String> = env.keys().filter(|k| !asked.contains(*k)).collect();
        assert!(ignored.is_empty(), "{name}'s environment sets variables the code never reads: {ignored:?}");
        assert_eq!(config.bucket, bucket, "{name}");
        assert_eq!(config.hostname.as_deref(), Some(hostname), "{name}");
        assert_eq!(config.upstream.hosts, ["registry.terraform.io"], "{name}: the upstream host the root sets");
    }
}

/// The writes that invoke the indexer and the puller are exactly the layout's (and so what the
/// local registry's embedded S3 delivers).
fn notifications_are_the_layouts(deployed: &Value) {
    let filters = |function: &str, events: &[&str]| -> BTreeSet<(String, String)> {
        deployed["notifications"]
            .as_array()
            .expect("notifications")
            .iter()
            .filter(|n| n["function"] == format!("{NAME}-{function}"))
            .map(|n| {
                assert_eq!(n["events"], json!(events), "{n}");
                (n["prefix"].as_str().unwrap().to_string(), n["suffix"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let pairs = |table: &[(&str, &str)]| table.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    let indexer = filters("indexer", &["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]);
    assert_eq!(indexer, pairs(&layout::NOTIFICATIONS), "indexer notifications vs layout::NOTIFICATIONS");
    let puller = filters("puller", &["s3:ObjectCreated:*"]);
    assert_eq!(puller, pairs(&layout::PULL_NOTIFICATIONS), "puller notifications vs layout::PULL_NOTIFICATIONS");
    assert_eq!(deployed["notifications"].as_array().unwrap().len(), indexer.len() + puller.len(), "no other");
}

/// The API's 5xx rate, each function's errors and throttles, and both dead-letter queues have
/// an alarm notifying the topic, each explained in docs/OPERATIONS.md under the heading its
/// description names; the dashboard shows every function.
fn alarms_watch_every_function_and_queue(deployed: &Value, topic: &str) {
    let alarms = deployed["monitoring"]["alarms"].as_object().expect("alarms");
    let mut wanted = BTreeSet::from([
        "api-5xx".to_string(),
        "indexer-dead-letters".into(),
        "puller-dead-letters".into(),
        "usage-dead-letters".into(),
    ]);
    for f in lambda_binaries() {
        wanted.insert(format!("{f}-errors"));
        wanted.insert(format!("{f}-throttles"));
    }
    assert_eq!(alarms.keys().cloned().collect::<BTreeSet<_>>(), wanted, "alarms as applied");
    let operations = std::fs::read_to_string(repo().join("docs/OPERATIONS.md")).expect("docs/OPERATIONS.md");
    for (name, alarm) in alarms {
        assert_eq!((&alarm["alarm_actions"], &alarm["ok_actions"]), (&json!([topic]), &json!([topic])), "{name}");
        let description = alarm["description"].as_str().unwrap();
        let heading = description.split("docs/OPERATIONS.md: ").nth(1).map(|h| h.trim_end_matches('.'));
        let heading = heading.unwrap_or_else(|| panic!("{name}'s description names no OPERATIONS.md section"));
        assert!(operations.contains(&format!("### {heading}")), "docs/OPERATIONS.md has no `### {heading}` ({name})");
        let metrics = alarm["metrics"].as_array().unwrap();
        if let Some(function) = name.strip_suffix("-errors").or_else(|| name.strip_suffix("-throttles")) {
            let watched = format!("FunctionName={NAME}-{function}");
            assert!(metrics.iter().all(|m| m.as_str().unwrap().ends_with(&watched)), "{name}: {metrics:?}");
        }
        if let Some(function) = name.strip_suffix("-dead-letters") {
            let watched = format!("QueueName={NAME}-{function}-dlq");
            assert!(metrics.iter().all(|m| m.as_str().unwrap().ends_with(&watched)), "{name}: {metrics:?}");
        }
    }
    let dashboard = deployed["monitoring"]["dashboards"][NAME].to_string();
    for f in lambda_binaries() {
        assert!(dashboard.contains(&format!("\"{NAME}-{f}\"")), "the dashboard shows {f}");
    }
}

/// moto does not store two attributes of `aws_lambda_function` (its `logging_config` and
/// `dead_letter_config` come back empty), so a second plan updates them in place on every
/// function. That, and only that, may differ: anything else is drift in infra/ itself.
fn replan_differs_only_where_moto_stores_nothing(tools: &Tools, moto: &moto::Moto, work: &TempDir) {
    const MOTO_GAPS: [&str; 2] = ["logging_config", "dead_letter_config"];
    let plan = work.path().join("replan");
    let plan_arg = format!("-out={}", plan.display());
    terraform(tools, moto, work, &["plan", "-input=false", "-no-color", &plan_arg]);
    let shown = terraform(tools, moto, work, &["show", "-json", plan.to_str().unwrap()]);
    let plan: Value = serde_json::from_slice(&shown.stdout).expect("plan JSON");
    let mut gaps = 0;
    for change in plan["resource_changes"].as_array().expect("resource_changes") {
        let (address, actions) = (change["address"].as_str().unwrap(), &change["change"]["actions"]);
        if *actions == json!(["no-op"]) || *actions == json!(["read"]) {
            continue;
        }
        let (before, after) = (&change["change"]["before"], &change["change"]["after"]);
        let keys: BTreeSet<&String> =
            before.as_object().into_iter().chain(after.as_object()).flat_map(|o| o.keys()).collect();
        let differing: Vec<&&String> =
            keys.iter().filter(|k| before.get(k.as_str()) != after.get(k.as_str())).collect();
        let only_gaps = change["type"] == "aws_lambda_function"
            && *actions == json!(["update"])
            && differing.iter().all(|k| MOTO_GAPS.contains(&k.as_str()));
        assert!(only_gaps, "the second plan changes {address} ({actions}): {differing:?}");
        gaps += 1;
    }
    assert!(gaps <= lambda_binaries().len(), "at most one known moto gap per function");
}
