//! Vendors several packages share (format §7.4): Google's four packages
//! each carry an `[auth.google]` recipe, and one Google account serves them
//! all.
//!
//! - Every active package declaring a recipe for a vendor must declare a
//!   compatible one ([`AuthRecipe::shares_account_with`]; OAuth recipes
//!   bound to the same resource): a package that does not is refused at
//!   install ([`HostError::VendorRecipeConflict`]), so the active packages
//!   of a vendor are always one *family*.
//! - Connecting asks for the family's scope ceiling and declared scopes
//!   (the union), so the one account covers every member.
//! - Each member still needs the user's consent to use it, and the
//!   account goes only to the audiences consented to: connecting through a
//!   member gives both for it, naming the vendor (`warden auth connect
//!   google`) gives both for every member at once, and `warden secret allow
//!   <ext> <vendor>` gives consent without adding an audience (enough for a
//!   member whose hosts the account already reaches). A package outside
//!   the family gets nothing from the family's accounts beyond what
//!   consent to it gives.

use warden_core::spec::AuthRecipe;
use warden_manifest::{Implementation, Package};

use crate::error::HostError;
use crate::location::Location;

/// The resource an OAuth account of `vendor` is bound to in `package`: its
/// MCP server, when the server's credentials use the vendor.
pub(crate) fn oauth_resource<'p>(package: &'p Package, vendor: &str) -> Option<&'p str> {
    match &package.implementation {
        Implementation::Mcp(mcp) if mcp.credentials.iter().any(|c| c.vendor == vendor) => {
            Some(mcp.server.as_str())
        }
        _ => None,
    }
}

/// Whether one account of `vendor` may serve both `a` and `b`: both have a
/// recipe for it, the recipes are compatible, and an OAuth account would
/// be bound to the same resource in both.
pub(crate) fn shares_vendor(a: &Package, b: &Package, vendor: &str) -> bool {
    let (Some(left), Some(right)) = (a.auth.get(vendor), b.auth.get(vendor)) else {
        return false;
    };
    let same_resource = match left {
        AuthRecipe::Oauth2Code(_) => oauth_resource(a, vendor) == oauth_resource(b, vendor),
        _ => true,
    };
    left.shares_account_with(right) && same_resource
}

/// The first recipe of `package` incompatible with one of `active` (other
/// ids only: a package replacing one of its id is not its own rival).
pub(crate) fn recipe_conflict<'a>(
    active: impl IntoIterator<Item = &'a Package>,
    package: &Package,
) -> Option<HostError> {
    let active: Vec<&Package> = active.into_iter().filter(|p| p.id != package.id).collect();
    for vendor in package.auth.keys() {
        if let Some(rival) = active
            .iter()
            .find(|other| other.auth.contains_key(vendor) && !shares_vendor(other, package, vendor))
        {
            return Some(HostError::VendorRecipeConflict {
                vendor: vendor.clone(),
                package: package.id.clone(),
                installed: rival.id.clone(),
            });
        }
    }
    None
}

impl Location {
    /// Why `package` could not be installed beside the active packages
    /// because of a vendor recipe (what install refuses and `warden check`
    /// reports), if it could not.
    pub fn vendor_conflict(&self, package: &Package) -> Option<HostError> {
        let active = self.packages();
        recipe_conflict(active.iter().map(|p| p.as_ref()), package)
    }

    /// The active packages with a recipe for `vendor` (one family: install
    /// keeps them compatible), by id.
    pub fn vendor_family(&self, vendor: &str) -> Vec<std::sync::Arc<Package>> {
        self.packages()
            .into_iter()
            .filter(|p| p.auth.contains_key(vendor))
            .collect()
    }

    /// The family's effective recipe for `vendor`, `base` with every
    /// member's scope ceiling added.
    pub(crate) fn family_recipe(&self, vendor: &str, base: &AuthRecipe) -> AuthRecipe {
        self.vendor_family(vendor)
            .iter()
            .filter_map(|p| p.auth.get(vendor))
            .fold(base.clone(), |recipe, other| recipe.with_scopes_of(other))
    }

    /// Whether `extension` may take over or share the account of `vendor`
    /// that `other` connected: both are active members of the vendor's
    /// family.
    pub(crate) fn same_family(&self, vendor: &str, extension: &str, other: &str) -> bool {
        let family = self.vendor_family(vendor);
        let find = |id: &str| family.iter().find(|p| p.id == id).cloned();
        match (find(extension), find(other)) {
            (Some(a), Some(b)) => shares_vendor(&a, &b, vendor),
            _ => false,
        }
    }
}
