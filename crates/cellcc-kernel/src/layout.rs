//! Struct layouts read from an object's BTF, so that parameters and statistics of any
//! algorithm can be parsed and printed by field name without a Rust mirror per algorithm.
//!
//! The convention (bpf/cellcc.h, docs/kernel.md) allows only `__u32`, `__u64`, `__s32` and
//! `__s64` fields in `struct ALGO_params` and `struct ALGO_stats`; a struct with any other
//! member is rejected when the object is opened. Padding members (`pad`, `pad_*`, `_*`)
//! are skipped.

use libbpf_rs::btf::types::{Int, IntEncoding, MemberAttr, Struct};
use libbpf_rs::btf::BtfType;
use libbpf_rs::{Btf, HasSize};

use crate::bail;
use crate::error::{Error, Result};

/// One integer member of a struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    /// Member name, with its unit suffix (`alpha_x100`, `srtt_us`).
    pub name: String,
    /// Byte offset in the struct.
    pub offset: usize,
    /// 4 or 8 bytes.
    pub size: usize,
    /// Whether the member is `__s32`/`__s64`.
    pub signed: bool,
}

/// A value of a [`Field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// `__u32` or `__u64`.
    Unsigned(u64),
    /// `__s32` or `__s64`.
    Signed(i64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Unsigned(v) => write!(f, "{v}"),
            Value::Signed(v) => write!(f, "{v}"),
        }
    }
}

impl Value {
    /// As a JSON number.
    pub(crate) fn to_json(self) -> serde_json::Value {
        match self {
            Value::Unsigned(v) => v.into(),
            Value::Signed(v) => v.into(),
        }
    }

    /// As an unsigned number (negative values clamp to 0).
    pub(crate) fn as_u64(self) -> u64 {
        match self {
            Value::Unsigned(v) => v,
            Value::Signed(v) => u64::try_from(v).unwrap_or(0),
        }
    }
}

/// The layout of `struct NAME` in one object.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// `struct` tag, e.g. `c2tcp_params`.
    pub name: String,
    /// `sizeof(struct NAME)`.
    pub size: usize,
    /// Members in declaration order.
    pub fields: Vec<Field>,
}

impl Layout {
    /// Reads `struct name` from `btf`.
    pub(crate) fn from_btf(btf: &Btf<'_>, name: &str) -> Result<Self> {
        let Some(st) = btf.type_by_name::<Struct<'_>>(name) else {
            bail!("struct {name} is not in the object's BTF (the convention requires it)");
        };
        let mut fields = Vec::new();
        for m in st.iter() {
            let member = m
                .name
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if is_padding(&member) {
                continue;
            }
            let where_ = format!("struct {name} member {member:?}");
            let offset_bits = match m.attr {
                MemberAttr::Normal { offset } => offset,
                MemberAttr::BitField { .. } => bail!("{where_} is a bitfield; use __u32/__u64"),
            };
            let ty = btf
                .type_by_id::<BtfType<'_>>(m.ty)
                .ok_or_else(|| Error::new(format!("{where_}: type missing from BTF")))?
                .skip_mods_and_typedefs();
            let Ok(int) = Int::try_from(ty) else {
                bail!("{where_} is not an integer; only __u32/__u64/__s32/__s64 are allowed");
            };
            let size = int.size();
            if size != 4 && size != 8 {
                bail!("{where_} has {size} bytes; only __u32/__u64/__s32/__s64 are allowed");
            }
            fields.push(Field {
                name: member,
                offset: (offset_bits / 8) as usize,
                size,
                signed: matches!(int.encoding, IntEncoding::Signed),
            });
        }
        Ok(Layout {
            name: name.to_string(),
            size: st.size(),
            fields,
        })
    }

    /// The field called `name`.
    pub(crate) fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field names, comma-separated (for error messages).
    pub(crate) fn names(&self) -> String {
        let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        names.join(", ")
    }

    /// `field`'s value in `bytes` (a struct of this layout).
    pub(crate) fn get(&self, bytes: &[u8], field: &Field) -> Value {
        let raw = &bytes[field.offset..field.offset + field.size];
        match (field.size, field.signed) {
            (4, false) => Value::Unsigned(u64::from(u32::from_ne_bytes(raw.try_into().unwrap()))),
            (4, true) => Value::Signed(i64::from(i32::from_ne_bytes(raw.try_into().unwrap()))),
            (_, false) => Value::Unsigned(u64::from_ne_bytes(raw.try_into().unwrap())),
            (_, true) => Value::Signed(i64::from_ne_bytes(raw.try_into().unwrap())),
        }
    }

    /// The value of the field called `name`, if there is one.
    pub(crate) fn get_by_name(&self, bytes: &[u8], name: &str) -> Option<Value> {
        self.field(name).map(|f| self.get(bytes, f))
    }

    /// Sets field `name` from its text `value` (decimal, or hex with `0x`), checking the
    /// range of the field's type.
    pub(crate) fn set(&self, bytes: &mut [u8], name: &str, value: &str) -> Result<()> {
        let Some(field) = self.field(name) else {
            bail!(
                "unknown key {name:?} for struct {}; valid keys: {}",
                self.name,
                self.names()
            );
        };
        let parsed = parse_int(value).ok_or_else(|| {
            Error::new(format!(
                "{name}={value}: not an integer (decimal or 0x hex)"
            ))
        })?;
        let (lo, hi): (i128, i128) = match (field.size, field.signed) {
            (4, false) => (0, u32::MAX.into()),
            (4, true) => (i32::MIN.into(), i32::MAX.into()),
            (_, false) => (0, u64::MAX.into()),
            (_, true) => (i64::MIN.into(), i64::MAX.into()),
        };
        if parsed < lo || parsed > hi {
            let ty = format!("{}{}", if field.signed { "s" } else { "u" }, field.size * 8);
            bail!("{name}={value}: out of range for a {ty} ({lo}..={hi})");
        }
        let dst = &mut bytes[field.offset..field.offset + field.size];
        // In range, so the truncating casts are exact.
        if field.size == 4 {
            dst.copy_from_slice(&(parsed as u32).to_ne_bytes());
        } else {
            dst.copy_from_slice(&(parsed as u64).to_ne_bytes());
        }
        Ok(())
    }

    /// Sets an unsigned field by name (internal callers; the name must exist).
    pub(crate) fn set_u64(&self, bytes: &mut [u8], name: &str, value: u64) -> Result<()> {
        self.set(bytes, name, &value.to_string())
    }

    /// `name=value` pairs of every field.
    pub(crate) fn format(&self, bytes: &[u8]) -> String {
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|f| format!("{}={}", f.name, self.get(bytes, f)))
            .collect();
        parts.join(" ")
    }

    /// A JSON object of every field.
    pub(crate) fn to_json(&self, bytes: &[u8]) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for f in &self.fields {
            map.insert(f.name.clone(), self.get(bytes, f).to_json());
        }
        serde_json::Value::Object(map)
    }
}

/// Explicit padding (`pad`, `pad_*`, `_*`): kept out of keys, tables and JSON.
fn is_padding(member: &str) -> bool {
    member.is_empty() || member == "pad" || member.starts_with("pad_") || member.starts_with('_')
}

/// Decimal (optionally negative) or `0x` hex.
fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i128::from_str_radix(hex, 16).ok();
    }
    s.parse::<i128>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            name: "demo_params".into(),
            size: 16,
            fields: vec![
                Field {
                    name: "valid".into(),
                    offset: 0,
                    size: 4,
                    signed: false,
                },
                Field {
                    name: "gain_s32".into(),
                    offset: 4,
                    size: 4,
                    signed: true,
                },
                Field {
                    name: "rate_bps".into(),
                    offset: 8,
                    size: 8,
                    signed: false,
                },
            ],
        }
    }

    #[test]
    fn set_and_get_by_name() {
        let l = layout();
        let mut b = vec![0u8; l.size];
        l.set(&mut b, "gain_s32", "-5").unwrap();
        l.set(&mut b, "rate_bps", "0x10").unwrap();
        assert_eq!(l.get_by_name(&b, "gain_s32"), Some(Value::Signed(-5)));
        assert_eq!(l.get_by_name(&b, "rate_bps"), Some(Value::Unsigned(16)));
        assert_eq!(l.format(&b), "valid=0 gain_s32=-5 rate_bps=16");
    }

    #[test]
    fn unknown_keys_and_ranges_are_errors() {
        let l = layout();
        let mut b = vec![0u8; l.size];
        let e = l.set(&mut b, "alpha", "1").unwrap_err().to_string();
        assert!(e.contains("valid keys: valid, gain_s32, rate_bps"), "{e}");
        let e = l.set(&mut b, "valid", "-1").unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = l
            .set(&mut b, "valid", "4294967296")
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
        assert!(l.set(&mut b, "valid", "x").is_err());
    }
}
