//! The Warden host: composes manifest, registry, authorization, runtime and egress into one embeddable API.
