//! Who signed: what Fulcio wrote into the leaf certificate, read from its signed parts only
//! (never from the bundle's unsigned JSON). The subject alternative name is the workflow's or
//! the person's identity; Fulcio's extensions (OID 1.3.6.1.4.1.57264.1.N) say which OIDC
//! issuer vouched for it and, for CI issuers, the repository, commit, ref, workflow and run.
//! Extensions 1 to 6 are raw bytes (Fulcio's first format), 8 and later DER UTF8Strings.
//! Text that could read as something else where it is shown (control and format characters,
//! invisible ones: `printed::refused`) makes the certificate unusable.

use serde::Serialize;

use super::Refused;
use super::der::{Der, UTF8_STRING};
use super::x509::{Certificate, FULCIO};

/// The identity a Fulcio certificate states.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Identity {
    /// The subject alternative name: a workflow URI (`https://github.com/OWNER/REPO/.github/
    /// workflows/release.yml@refs/tags/v1.2.0`), an e-mail address, or a username.
    pub subject: String,
    /// The OIDC issuer (`https://token.actions.githubusercontent.com`).
    pub issuer: String,
    /// Source repository URI (extension 12), e.g. `https://github.com/acme/network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Source repository digest (13): the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Source repository ref (14), e.g. `refs/tags/v1.2.0`.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Build config URI (18): the workflow file at its ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Run invocation URI (21): the run that signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Build signer URI (9): the workflow (perhaps reusable) that holds the signing step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<String>,
    /// Build trigger (20), e.g. `push`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Runner environment (11): `github-hosted` or `self-hosted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// Source repository identifier (15): the CI's number for it, which a rename or a new
    /// repository of the old name does not keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_id: Option<String>,
    /// Source repository owner identifier (17), likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<String>,
    /// Source repository visibility at signing (22): `public`, `private` or `internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// Longest value read from one extension.
const VALUE_MAX: usize = 2048;

impl Identity {
    pub(crate) fn of(leaf: &Certificate<'_>) -> Result<Identity, Refused> {
        let names = leaf.alternative_names()?;
        let [subject] = names.as_slice() else {
            return Err(Refused::new("certificate: not exactly one subject alternative name"));
        };
        let issuer = fulcio(leaf, 8)?
            .or(fulcio(leaf, 1)?)
            .ok_or_else(|| Refused::new("certificate: no OIDC issuer extension"))?;
        Ok(Identity {
            subject: subject.clone(),
            issuer,
            repository: fulcio(leaf, 12)?,
            commit: fulcio(leaf, 13)?.or(fulcio(leaf, 3)?),
            git_ref: fulcio(leaf, 14)?.or(fulcio(leaf, 6)?),
            workflow: fulcio(leaf, 18)?,
            run: fulcio(leaf, 21)?,
            builder: fulcio(leaf, 9)?,
            trigger: fulcio(leaf, 20)?.or(fulcio(leaf, 2)?),
            runner: fulcio(leaf, 11)?,
            repository_id: fulcio(leaf, 15)?,
            owner_id: fulcio(leaf, 17)?,
            visibility: fulcio(leaf, 22)?,
        })
    }
}

/// Fulcio extension `arc` as text.
fn fulcio(leaf: &Certificate<'_>, arc: u8) -> Result<Option<String>, Refused> {
    let oid = [FULCIO, &[arc]].concat();
    let Some(ext) = leaf.extension(&oid) else { return Ok(None) };
    let bytes = if arc <= 6 {
        ext.value
    } else {
        let mut der = Der::new(ext.value);
        let value = der.take(UTF8_STRING, "Fulcio extension")?;
        der.end("Fulcio extension")?;
        value
    };
    if bytes.len() > VALUE_MAX {
        return Err(Refused::new("certificate: a Fulcio extension too long"));
    }
    let text =
        String::from_utf8(bytes.to_vec()).map_err(|_| Refused::new("certificate: a Fulcio extension not UTF-8"))?;
    if let Some(what) = text.chars().find_map(crate::printed::refused) {
        return Err(Refused::new(format!("certificate: a Fulcio extension holds {what}")));
    }
    Ok(Some(text))
}
