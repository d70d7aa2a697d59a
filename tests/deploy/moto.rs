//! moto's server over TLS on loopback, and the AWS environment that points clients at it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::TempDir;

pub struct Moto {
    child: Child,
    endpoint: String,
    /// The CA that signed moto's certificate: AWS_CA_BUNDLE, as for a TLS-inspecting proxy.
    ca: PathBuf,
    python: PathBuf,
    /// The certificates, moto's log and the clients' HOME.
    dir: TempDir,
}

fn script(name: &str) -> PathBuf {
    super::repo().join("infra/tests/deploy").join(name)
}

impl Moto {
    /// Start moto on a free loopback port with a certificate from a CA of its own.
    pub fn start(python: &Path) -> Moto {
        let dir = TempDir::new("moto");
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let (cert, key) = registry_local::tls::write_leaf(dir.path(), ip, dir.path()).expect("certificate");
        let port = TcpListener::bind((ip, 0)).and_then(|l| l.local_addr()).expect("a free port").port();
        let log = std::fs::File::create(dir.path().join("moto.log")).unwrap();
        let child = Command::new(python)
            .arg(script("moto_tls.py"))
            .args([&port.to_string(), cert.to_str().unwrap(), key.to_str().unwrap()])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("moto starts");
        let moto = Moto {
            child,
            endpoint: format!("https://127.0.0.1:{port}"),
            ca: dir.path().join(registry_local::tls::CA_FILE),
            python: python.to_path_buf(),
            dir,
        };
        moto.wait_until_listening(SocketAddr::new(ip, port));
        moto
    }

    fn wait_until_listening(&self, addr: SocketAddr) {
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            let log = std::fs::read_to_string(self.dir.path().join("moto.log")).unwrap_or_default();
            assert!(started.elapsed() < Duration::from_secs(30), "moto did not listen on {addr} within 30 s:\n{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `command` with only what an AWS client needs to reach moto: fixed test credentials
    /// (moto accepts any), the endpoint, its CA, the region, and no instance metadata lookups.
    pub fn aws_env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_CA_BUNDLE", &self.ca)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", super::REGION)
            .env("AWS_DEFAULT_REGION", super::REGION)
            .env("AWS_EC2_METADATA_DISABLED", "true")
    }

    /// The Python that runs moto, with boto3.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// The deployment as boto3 reads it back (infra/tests/deploy/read_back.py), with each
    /// principal's verdicts on `probes`.
    pub fn read_back(&self, name: &str, bucket: &str, probes: &Value) -> Value {
        let input = self.dir.path().join("probes.json");
        std::fs::write(&input, probes.to_string()).unwrap();
        let output = self
            .aws_env(&mut Command::new(&self.python))
            .arg(script("read_back.py"))
            .args([name, bucket])
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .expect("read_back.py runs");
        assert!(output.status.success(), "read_back.py failed:\n{}", support::text(&output));
        serde_json::from_slice(&output.stdout).expect("read_back.py prints JSON")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
