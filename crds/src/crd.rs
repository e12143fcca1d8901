//! The CRDs, rendered from the types.
