//! A walker over the span-carrying TOML tree that records every type error
//! and unknown field instead of stopping at the first.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diag::{Code, Sink};
use crate::span::{At, L};

/// A spanned TOML value.
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// One TOML table being read. Fields are taken one by one; [`Table::finish`]
/// reports every key that was not taken.
#[derive(Debug)]
pub(crate) struct Table<'a, 'i> {
    table: &'a DeTable<'i>,
    pub(crate) at: At,
    known: &'static [&'static str],
}

impl<'a, 'i> Table<'a, 'i> {
    /// Read `table` at `at`, accepting only `known` keys.
    pub(crate) fn new(table: &'a DeTable<'i>, at: At, known: &'static [&'static str]) -> Self {
        Table { table, at, known }
    }

    /// The same table, accepting `known` keys instead.
    pub(crate) fn new_like(other: &Table<'a, 'i>, known: &'static [&'static str]) -> Self {
        Table::new(other.table, other.at.clone(), known)
    }

    /// Read the value at `at` as a table; records a type error otherwise.
    pub(crate) fn of(
        value: &'a Val<'i>,
        at: At,
        known: &'static [&'static str],
        sink: &mut Sink<'_>,
    ) -> Option<Self> {
        match value.get_ref() {
            DeValue::Table(t) => Some(Table::new(t, at, known)),
            other => {
                wrong_type(sink, &at, "a table", other);
                None
            }
        }
    }

    /// Whether `key` is present.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entry(key).is_some()
    }

    fn entry(&self, key: &str) -> Option<(&'a Spanned<std::borrow::Cow<'i, str>>, &'a Val<'i>)> {
        self.table.iter().find(|(k, _)| k.get_ref() == key)
    }

    /// The raw value of `key` and its location.
    pub(crate) fn get(&self, key: &str) -> Option<(&'a Val<'i>, At)> {
        debug_assert!(self.known.contains(&key), "`{key}` is not a known field");
        self.entry(key)
            .map(|(_, v)| (v, self.at.key(key, v.span())))
    }

    /// Every entry: (key, value, location of the value).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'a str, &'a Val<'i>, At)> + '_ {
        self.table
            .iter()
            .map(|(k, v)| (k.get_ref().as_ref(), v, self.at.key(k.get_ref(), v.span())))
    }

    /// Record `key` as missing.
    pub(crate) fn missing(&self, sink: &mut Sink<'_>, key: &str) {
        sink.error(
            Code::MissingField,
            &self.at,
            format!("missing field `{key}`{}", self.in_where()),
        )
        .help(format!("add `{key} = ...`{}", self.in_where()));
    }

    fn in_where(&self) -> String {
        if self.at.path.is_empty() {
            " at the top of the manifest".to_owned()
        } else {
            format!(" in `{}`", self.at.path)
        }
    }

    /// A string field.
    pub(crate) fn str(&self, sink: &mut Sink<'_>, key: &str) -> Option<L<String>> {
        let (v, at) = self.get(key)?;
        match v.get_ref() {
            DeValue::String(s) => Some(L {
                v: s.to_string(),
                at,
            }),
            other => {
                wrong_type(sink, &at, "a string", other);
                None
            }
        }
    }

    /// A required string field.
    pub(crate) fn req_str(&self, sink: &mut Sink<'_>, key: &str) -> Option<L<String>> {
        if !self.has(key) {
            self.missing(sink, key);
        }
        self.str(sink, key)
    }

    /// A boolean field.
    pub(crate) fn bool(&self, sink: &mut Sink<'_>, key: &str) -> Option<L<bool>> {
        let (v, at) = self.get(key)?;
        match v.get_ref() {
            DeValue::Boolean(b) => Some(L { v: *b, at }),
            other => {
                wrong_type(sink, &at, "a boolean", other);
                None
            }
        }
    }

    /// A non-negative integer field.
    pub(crate) fn u64(&self, sink: &mut Sink<'_>, key: &str) -> Option<L<u64>> {
        let (v, at) = self.get(key)?;
        match v.get_ref() {
            DeValue::Integer(i) => match u64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Some(L { v: n, at }),
                Err(_) => {
                    sink.error(
                        Code::Limit,
                        &at,
                        format!("`{key}` must be a non-negative integer"),
                    );
                    None
                }
            },
            other => {
                wrong_type(sink, &at, "an integer", other);
                None
            }
        }
    }

    /// An array of strings (`None` when absent or not an array).
    pub(crate) fn str_array(&self, sink: &mut Sink<'_>, key: &str) -> Option<L<Vec<L<String>>>> {
        let (v, at) = self.get(key)?;
        let items = array(v, &at, sink)?;
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_at = at.index(i, item.span());
            match item.get_ref() {
                DeValue::String(s) => out.push(L {
                    v: s.to_string(),
                    at: item_at,
                }),
                other => wrong_type(sink, &item_at, "a string", other),
            }
        }
        Some(L { v: out, at })
    }

    /// A sub-table.
    pub(crate) fn table(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        known: &'static [&'static str],
    ) -> Option<Table<'a, 'i>> {
        let (v, at) = self.get(key)?;
        Table::of(v, at, known, sink)
    }

    /// An array of tables (`[[key]]` or an inline array of inline tables).
    pub(crate) fn tables(
        &self,
        sink: &mut Sink<'_>,
        key: &str,
        known: &'static [&'static str],
    ) -> Vec<Table<'a, 'i>> {
        let Some((v, at)) = self.get(key) else {
            return Vec::new();
        };
        let Some(items) = array(v, &at, sink) else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| Table::of(item, at.index(i, item.span()), known, sink))
            .collect()
    }

    /// Report every key outside the known fields.
    pub(crate) fn finish(&self, sink: &mut Sink<'_>) {
        for (key, _) in self.table.iter() {
            let name: &str = key.get_ref();
            if !self.known.contains(&name) {
                let at = self.at.key(name, key.span());
                sink.error(
                    Code::UnknownField,
                    &at,
                    format!("unknown field `{name}`{}", self.in_where()),
                )
                .note(format!("expected one of: {}", self.known.join(", ")));
            }
        }
    }
}

/// The items of an array value; records a type error otherwise.
pub(crate) fn array<'a, 'i>(
    value: &'a Val<'i>,
    at: &At,
    sink: &mut Sink<'_>,
) -> Option<&'a [Val<'i>]> {
    match value.get_ref() {
        DeValue::Array(a) => Some(a),
        other => {
            wrong_type(sink, at, "an array", other);
            None
        }
    }
}

/// Record that the value at `at` should have been `expected`.
pub(crate) fn wrong_type(sink: &mut Sink<'_>, at: &At, expected: &str, found: &DeValue<'_>) {
    sink.error(
        Code::WrongType,
        at,
        format!("expected {expected}, found {}", found.type_str()),
    )
    .help(format!("write {expected} here"));
}
