//! How a Go type is encoded by `encoding/json`: the vocabulary of the generated [`super::go_types`].

/// A Go type, as far as its JSON encoding goes. Numbers in variants are indexes into
/// [`super::go_types::TYPES`].
#[derive(Debug)]
pub enum Ty {
    /// `bool`.
    Bool,
    /// Any integer type.
    Int,
    /// `string` and every named string type.
    Str,
    /// `resource.Quantity`: its canonical string.
    Quantity,
    /// `metav1.Time`: RFC 3339 in UTC to the second, or `null` when zero.
    Time,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// A type whose JSON is the raw JSON it was decoded from (`metav1.FieldsV1`).
    Raw,
    /// A pointer to the type.
    Ptr(usize),
    /// A slice of the type.
    Slice(usize),
    /// A map from strings to the type; Go writes its keys sorted.
    Map(usize),
    /// A struct: its JSON members in Go's order (declaration order, embedded structs in place).
    Struct(&'static [Field]),
}

/// One JSON member of a Go struct.
#[derive(Debug)]
pub struct Field {
    /// The JSON name.
    pub name: &'static str,
    /// The type, an index into [`super::go_types::TYPES`].
    pub ty: usize,
    /// `omitempty`: left out when false, 0, "", nil, or an empty slice or map.
    pub omit_empty: bool,
    /// `omitzero`: left out when the Go zero value.
    pub omit_zero: bool,
}

impl Field {
    /// A field of the generated table.
    pub const fn new(name: &'static str, ty: usize, omit_empty: bool, omit_zero: bool) -> Self {
        Self {
            name,
            ty,
            omit_empty,
            omit_zero,
        }
    }
}
