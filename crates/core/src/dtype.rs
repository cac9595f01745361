//! Element types, named as numpy names them so spaces round-trip through Python tools.

use crate::{Error, Result};

/// The element type of an array leaf. Names follow numpy (`"uint8"`, `"float32"`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum DType {
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    /// IEEE half precision (numpy's `float16`), as `half::f16`.
    F16,
    F32,
    F64,
}

/// Runs `$body` with `$T` the Rust type of dtype `$d`'s values (`bool` for `Bool`, or
/// `bool => expr` instead): the one dispatch from a run-time dtype to its value type,
/// for code generic over it (numpy arrays, HDF5 reads).
#[macro_export]
macro_rules! with_dtype {
    ($d:expr, $T:ident => $body:expr, bool => $b:expr) => {
        match $d {
            $crate::DType::Bool => $b,
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
    ($d:expr, $T:ident => $body:expr) => {
        $crate::with_dtype!($d, $T => $body, bool => {
            type $T = bool;
            $body
        })
    };
}

impl DType {
    /// Every dtype, in the order above.
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        with_dtype!(self, T => std::mem::size_of::<T>())
    }

    /// The numpy name (`"float32"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::U64 => "uint64",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parses a numpy dtype name.
    pub fn parse(s: &str) -> Result<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s).ok_or_else(|| Error::InvalidSpace(format!("unknown dtype `{s}`")))
    }

    /// True for `float16`/`float32`/`float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }

    /// The representable range as f64 (bool is 0..=1).
    pub fn range(self) -> (f64, f64) {
        match self {
            DType::Bool => (0.0, 1.0),
            DType::U8 => (0.0, u8::MAX as f64),
            DType::I8 => (i8::MIN as f64, i8::MAX as f64),
            DType::U16 => (0.0, u16::MAX as f64),
            DType::I16 => (i16::MIN as f64, i16::MAX as f64),
            DType::U32 => (0.0, u32::MAX as f64),
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::U64 => (0.0, u64::MAX as f64),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64),
            DType::F16 | DType::F32 | DType::F64 => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }

    /// Reads element `i` of a native-endian byte buffer as f64.
    pub fn read_f64(self, bytes: &[u8], i: usize) -> f64 {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        match self {
            DType::Bool | DType::U8 => b[0] as f64,
            DType::I8 => b[0] as i8 as f64,
            DType::U16 => u16::from_ne_bytes([b[0], b[1]]) as f64,
            DType::I16 => i16::from_ne_bytes([b[0], b[1]]) as f64,
            DType::U32 => u32::from_ne_bytes(b.try_into().unwrap()) as f64,
            DType::I32 => i32::from_ne_bytes(b.try_into().unwrap()) as f64,
            DType::F16 => half::f16::from_ne_bytes([b[0], b[1]]).to_f64(),
            DType::F32 => f32::from_ne_bytes(b.try_into().unwrap()) as f64,
            DType::U64 => u64::from_ne_bytes(b.try_into().unwrap()) as f64,
            DType::I64 => i64::from_ne_bytes(b.try_into().unwrap()) as f64,
            DType::F64 => f64::from_ne_bytes(b.try_into().unwrap()),
        }
    }

    /// Writes `v` (already in range, integral for integer types) as element `i`.
    pub fn write_f64(self, bytes: &mut [u8], i: usize, v: f64) {
        let s = self.size();
        let b = &mut bytes[i * s..(i + 1) * s];
        match self {
            DType::Bool => b[0] = (v != 0.0) as u8,
            DType::U8 => b[0] = v as u8,
            DType::I8 => b[0] = v as i8 as u8,
            DType::U16 => b.copy_from_slice(&(v as u16).to_ne_bytes()),
            DType::I16 => b.copy_from_slice(&(v as i16).to_ne_bytes()),
            DType::U32 => b.copy_from_slice(&(v as u32).to_ne_bytes()),
            DType::I32 => b.copy_from_slice(&(v as i32).to_ne_bytes()),
            DType::F16 => b.copy_from_slice(&half::f16::from_f64(v).to_ne_bytes()),
            DType::F32 => b.copy_from_slice(&(v as f32).to_ne_bytes()),
            DType::U64 => b.copy_from_slice(&(v as u64).to_ne_bytes()),
            DType::I64 => b.copy_from_slice(&(v as i64).to_ne_bytes()),
            DType::F64 => b.copy_from_slice(&v.to_ne_bytes()),
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_is_listed_once_and_names_round_trip() {
        let names: std::collections::BTreeSet<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        assert_eq!(names.len(), DType::ALL.len());
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()).unwrap(), d);
            // The macro's type for each dtype is the one of its size and kind.
            let (size, name) = with_dtype!(d, T => (std::mem::size_of::<T>(), std::any::type_name::<T>()));
            let float = name.rsplit("::").next().is_some_and(|n| n.starts_with('f'));
            assert_eq!((size, float), (d.size(), d.is_float()), "{}", d.name());
        }
        assert!(DType::parse("float8").is_err());
        let mut b = [0u8; 2];
        DType::F16.write_f64(&mut b, 0, 1.5);
        assert_eq!(DType::F16.read_f64(&b, 0), 1.5);
    }
}
