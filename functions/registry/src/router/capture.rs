//! What a route's path and query captured, and each value's grammar: a row of the route table
//! names its values by type, and each type reads its own placeholders (`ModuleAddress` reads
//! `{namespace}/{name}/{system}`), so a new route needs no parsing code of its own.

use crate::address::{ModuleAddress, ProviderAddress, ProviderName, UpstreamModule, parse_version, printable};
use crate::error::Error;
use crate::layout::Platform;
use crate::oci::name::OciRoute;
use crate::query::Listing;

use super::{Asset, Query, UI_PATH};

/// The placeholders a path filled, the rest of the path for a `{proxy+}`, and the raw query.
#[derive(Debug)]
pub struct Captures<'a> {
    pub(super) filled: super::fit::Filled<'a>,
    pub(super) rest: &'a str,
    pub(super) query: Option<&'a str>,
    pub(super) query_use: Query,
}

impl<'a> Captures<'a> {
    /// The segment that filled `{name}`. Missing means a row names a value its path does not
    /// hold: a bug in the table, which `router::tests` catches for every row.
    fn get(&self, name: &str) -> Result<&'a str, Error> {
        let (filled, count) = &self.filled;
        let found = filled[..*count].iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
        found.ok_or_else(|| Error::internal(format!("the route table has no {{{name}}} in this path")))
    }
}

/// A value a route carries, read from what its path and query captured.
pub trait Capture: Sized {
    /// The value of field `field` (a one-segment value reads the placeholder of that name).
    fn capture(captures: &Captures<'_>, field: &str) -> Result<Self, Error>;
}

impl Capture for ModuleAddress {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        ModuleAddress::parse(c.get("namespace")?, c.get("name")?, c.get("system")?)
    }
}

impl Capture for ProviderAddress {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        ProviderAddress::parse(c.get("hostname")?, c.get("namespace")?, c.get("type")?)
    }
}

impl Capture for UpstreamModule {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        UpstreamModule::parse(c.get("hostname")?, c.get("namespace")?, c.get("name")?, c.get("system")?)
    }
}

impl Capture for ProviderName {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        ProviderName::parse(c.get("namespace")?, c.get("type")?)
    }
}

impl Capture for Platform {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        Platform::parse(c.get("os")?, c.get("arch")?)
    }
}

impl Capture for semver::Version {
    fn capture(c: &Captures<'_>, field: &str) -> Result<Self, Error> {
        parse_version(c.get(field)?)
    }
}

impl Capture for Asset {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        match c.get("file")? {
            "style.css" => Ok(Asset::Style),
            "copy.js" => Ok(Asset::Script),
            _ => Err(Error::NotFound(format!("no page at {UI_PATH}{:?}", printable(c.rest)))),
        }
    }
}

impl Capture for Listing {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        match c.query_use {
            Query::List => Listing::parse(c.query, false),
            Query::Search => Listing::parse(c.query, true),
            Query::Catalog => Listing::parse_page(c.query),
            Query::None | Query::Oci => Err(Error::internal("the route table reads no listing here")),
        }
    }
}

impl Capture for OciRoute {
    fn capture(c: &Captures<'_>, _: &str) -> Result<Self, Error> {
        crate::oci::name::parse(c.rest, c.query)
    }
}
