//! The web pages in a real browser: Debian's chromium driven by playwright-core
//! (`browser/ui.mjs`), against the local registry over HTTPS. Sign in, search, a module's
//! inputs table (a long name shown whole, on a wide and a phone-sized screen), changes that
//! break nothing out of the alarm colour, the copied snippet, a provider page, sign out, the pages without JavaScript,
//! an XSS corpus that must stay inert (no dialog, no request: a canary server on loopback
//! counts any that gets through), and a token that sees nothing of another namespace.
//! SKIPPED, loudly, where chromium, node or playwright-core is missing (`.ci/run` installs
//! them).

// Test code: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use support::Harness;
use tokio::io::AsyncWriteExt;

const TOKEN: &str = "trg_browser_acme_0123456789abcdef0123456789abcdef";

/// The browser, node, and the script's node_modules; `None` (and SKIPPED) when one is missing.
fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    let chromium = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    let missing = if !chromium.is_file() {
        Some(format!("{} not found (apt-get install chromium)", chromium.display()))
    } else if std::process::Command::new("node").arg("--version").output().is_err() {
        Some("node not found".to_string())
    } else if !dir.join("node_modules/playwright-core").is_dir() {
        Some("playwright-core not installed (npm ci --prefix tests/browser)".to_string())
    } else {
        None
    };
    if let Some(why) = missing {
        support::skipped("browser tests", &format!("{why}; .ci/run installs it"));
        return None;
    }
    Some((chromium, dir))
}

/// A server no page may reach: it counts every connection.
async fn canary() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n").await;
        }
    });
    (address, hits)
}

/// READMEs, descriptions and defaults that would run script, open a dialog or reach the canary
/// if anything of them survived.
fn xss_module(canary: &str) -> Vec<u8> {
    let readme = format!(
        "# XSS\n\nHostile README.\n\n\
         <script>window.__xss = 1; alert('script')</script>\n\n\
         <script src=\"http://{canary}/script.js\"></script>\n\n\
         <img src=\"http://{canary}/img.png\" onerror=\"window.__xss = 1; alert('onerror')\">\n\n\
         <img src=x onerror=\"alert('img')\">\n\n\
         [click me](javascript:alert('link')) and [data](data:text/html,<script>alert(1)</script>)\n\n\
         <a href=\"JaVaScRiPt:alert('mixed case')\">mixed</a>\n\n\
         <div onmouseover=\"alert('hover')\" style=\"background:url(http://{canary}/style.png)\">hover me</div>\n\n\
         <svg onload=\"alert('svg')\"><script>alert('svg script')</script><image href=\"http://{canary}/svg.png\"/></svg>\n\n\
         <!-- --><script>alert('comment breakout')</script><!-- -->\n\n\
         --!><script>alert('comment 2')</script>\n\n\
         <iframe src=\"http://{canary}/frame\"></iframe>\n\n\
         <object data=\"http://{canary}/object\"></object>\n\n\
         <link rel=\"stylesheet\" href=\"http://{canary}/style.css\">\n\n\
         <meta http-equiv=\"refresh\" content=\"0;url=http://{canary}/refresh\">\n\n\
         <form action=\"http://{canary}/form\"><input name=x><button>go</button></form>\n\n\
         <details open ontoggle=\"alert('toggle')\"><summary>s</summary>x</details>\n\n\
         <base href=\"http://{canary}/\">\n\n\
         ![pixel](http://{canary}/pixel.png)\n"
    );
    let variables = format!(
        "variable \"name\" {{\n  description = \"<img src=x onerror=alert('description')>\"\n  type = string\n}}\n\
         variable \"script\" {{\n  description = \"</td></tr></table><script>alert('cell')</script>\"\n  \
         default = \"<script>alert('default')</script><img src=http://{canary}/default.png>\"\n}}\n\
         variable \"quote\" {{\n  description = \"\\\" onmouseover=\\\"alert('attribute')\"\n  default = \"'><svg onload=alert(1)>\"\n}}\n"
    );
    registry::testing::module_tar_gz(&[
        ("README.md", readme.as_str()),
        ("variables.tf", variables.as_str()),
        ("outputs.tf", "output \"x\" {\n  value = 1\n  description = \"<script>alert('output')</script>\"\n}\n"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_pages_in_a_real_browser() {
    let Some((chromium, dir)) = browser_or_skip() else { return };
    let h = Harness::start().await;
    let (canary, hits) = canary().await;
    // Before any request: the registry keeps the token store it read for a while.
    let record = registry::auth::manage::record(
        "browser",
        TOKEN,
        vec!["acme".into()],
        vec!["registry.terraform.io/hashicorp/*".into()],
        None,
    );
    registry::auth::manage::upsert(&h.running.storage, record).await.unwrap();

    // 1.2.0 adds an optional input with a long name (and a description with a long URL): a
    // change that breaks no caller, and a name the inputs table must show whole.
    let vpc = |added: &str| {
        let variables = format!(
            "variable \"cidr_block\" {{\n  type = string\n  description = \"The VPC's CIDR block.\"\n}}\n\
             variable \"azs\" {{\n  type = list(string)\n  description = \"Availability zones.\"\n  default = [\"eu-west-1a\"]\n}}\n\
             variable \"token\" {{\n  type = string\n  sensitive = true\n  default = null\n}}\n{added}"
        );
        registry::testing::module_tar_gz(&[
            (
                "README.md",
                "# VPC\n\nA network with public and private subnets.\n\n| Subnet | Size |\n|---|---|\n| public | /24 |\n",
            ),
            ("variables.tf", variables.as_str()),
            ("outputs.tf", "output \"vpc_id\" {\n  value = 1\n  description = \"The VPC.\"\n}\n"),
            ("modules/subnet/main.tf", "variable \"az\" {\n  type = string\n}\n"),
        ])
    };
    let sized = "variable \"instance_size_for_the_primary_database_cluster\" {\n  type = map(object({ size = string, count = number }))\n  \
                 description = \"See https://docs.example.com/a/very/long/path/without/any/spaces/for_the_instance_size_documentation_page.\"\n  \
                 default = {}\n}\n";
    let secret = registry::testing::module_tar_gz(&[("README.md", "Hidden treasure of globex."), ("main.tf", "")]);
    for (key, bytes) in [
        ("modules/acme/vpc/aws/1.1.0.tar.gz", vpc("")),
        ("modules/acme/vpc/aws/1.2.0.tar.gz", vpc(sized)),
        ("modules/acme/xss/aws/1.0.0.tar.gz", xss_module(&canary)),
        ("modules/globex/secret/aws/1.0.0.tar.gz", secret),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
            registry::testing::provider_zip("null", "3.2.1", "browser"),
        ),
    ] {
        h.upload(key, bytes).await;
    }
    // Each upload answers after its indexing pass has updated the catalog: nothing to wait for.
    let (status, list) = h.get_json("/v1/modules?limit=10").await;
    assert_eq!((status, list["modules"].as_array().map(Vec::len)), (200, Some(3)), "the catalog: {list}");

    let screenshots = match std::env::var("SCREENSHOTS_DIR") {
        Ok(d) => PathBuf::from(d),
        Err(_) => h.dir.path().join("screenshots"),
    };
    std::fs::create_dir_all(&screenshots).unwrap();
    let script = dir.join("ui.mjs");
    let (base, chromium) = (h.running.base_url(), chromium.display().to_string());
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .arg(script)
            .env("BASE_URL", base)
            .env("TOKEN", TOKEN)
            .env("CANARY", canary)
            .env("SCREENSHOTS", &screenshots)
            .env("CHROMIUM", chromium)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    eprintln!("{text}");
    assert!(output.status.success(), "the browser checks failed:\n{text}");
    assert!(text.contains("browser: ok"), "{text}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a page reached the canary server");
    h.running.stop().await;
}
