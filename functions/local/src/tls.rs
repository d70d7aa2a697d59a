//! A local certificate authority (made once per data directory) and a leaf certificate for
//! the listen address (made at every start). Terraform trusts it through `SSL_CERT_FILE`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::LocalError;

pub const CA_FILE: &str = "ca.pem";
const CA_KEY_FILE: &str = "ca-key.pem";

/// A leaf certificate from the data directory's CA (made if missing), valid for `ip`,
/// `127.0.0.1`, `::1` and `localhost`: (certificate PEM, CA PEM, leaf key).
fn issue(data_dir: &Path, ip: IpAddr) -> Result<(String, String, KeyPair), LocalError> {
    let err = |what: &str, e: &dyn std::fmt::Display| LocalError(format!("TLS {what}: {e}"));
    let ca_path = data_dir.join(CA_FILE);
    let key_path = data_dir.join(CA_KEY_FILE);
    // The issuer needs only the CA's subject and key, so the parameters are rebuilt the same
    // way each start and only the key and the certificate are kept on disk.
    let ca_params = || -> Result<CertificateParams, LocalError> {
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| err("CA", &e))?;
        params.distinguished_name.push(DnType::CommonName, "registry-local development CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        Ok(params)
    };
    let (ca_pem, ca_key) = match (std::fs::read_to_string(&ca_path), std::fs::read_to_string(&key_path)) {
        (Ok(pem), Ok(key)) => (pem, KeyPair::from_pem(&key).map_err(|e| err("CA key", &e))?),
        _ => {
            let key = KeyPair::generate().map_err(|e| err("CA key", &e))?;
            let cert = ca_params()?.self_signed(&key).map_err(|e| err("CA", &e))?;
            crate::write_private(&key_path, key.serialize_pem().as_bytes())?;
            std::fs::write(&ca_path, cert.pem()).map_err(|e| err("write ca.pem", &e))?;
            (cert.pem(), key)
        }
    };
    let issuer = Issuer::new(ca_params()?, ca_key);

    let leaf_key = KeyPair::generate().map_err(|e| err("leaf key", &e))?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).map_err(|e| err("leaf", &e))?;
    params.distinguished_name.push(DnType::CommonName, "registry-local");
    for addr in [ip, IpAddr::from([127, 0, 0, 1]), IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])] {
        if !params.subject_alt_names.contains(&SanType::IpAddress(addr)) {
            params.subject_alt_names.push(SanType::IpAddress(addr));
        }
    }
    let leaf = params.signed_by(&leaf_key, &issuer).map_err(|e| err("leaf", &e))?;
    Ok((leaf.pem(), ca_pem, leaf_key))
}

/// Write a leaf certificate (with the CA after it) and its key as PEM files in `dir`, for
/// another local server to present, e.g. nginx in the benchmarks: (certificate, key).
pub fn write_leaf(data_dir: &Path, ip: IpAddr, dir: &Path) -> Result<(PathBuf, PathBuf), LocalError> {
    let (leaf_pem, ca_pem, leaf_key) = issue(data_dir, ip)?;
    let (cert, key) = (dir.join("leaf.pem"), dir.join("leaf-key.pem"));
    std::fs::write(&cert, format!("{leaf_pem}{ca_pem}"))
        .map_err(|e| LocalError(format!("write {}: {e}", cert.display())))?;
    crate::write_private(&key, leaf_key.serialize_pem().as_bytes())?;
    Ok((cert, key))
}

/// A TLS config presenting a fresh leaf certificate from the data directory's CA.
pub fn server_config(data_dir: &Path, ip: IpAddr) -> Result<Arc<rustls::ServerConfig>, LocalError> {
    let err = |what: &str, e: &dyn std::fmt::Display| LocalError(format!("TLS {what}: {e}"));
    let (leaf_pem, ca_pem, leaf_key) = issue(data_dir, ip)?;
    let leaf_der = CertificateDer::from_pem_slice(leaf_pem.as_bytes()).map_err(|e| err("leaf", &e))?;
    let ca_der = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| err("ca.pem", &e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err("protocols", &e))?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf_der, ca_der],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .map_err(|e| err("certificate", &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
