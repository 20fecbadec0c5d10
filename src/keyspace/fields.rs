//! The fields a stored value is written as: the two traits every encoding reads and writes
//! through (Redis's RDB loader and saver implement them, [`super::types`]), and [`Payload`], a
//! reader of the same fields from bytes as a `DUMP` payload holds them — free of the Redis API,
//! so decoders can be driven by any bytes at all (the in-process fuzz targets, `fuzz/`).
// The module reads fields through Redis's loader; `Payload` is for the tests and for the fuzz
// targets, which include this file (fuzz/src/lib.rs).
#![cfg_attr(not(test), allow(dead_code))]

/// Where decoded fields come from (Redis's RDB loader, or a test's byte stream). `None` means
/// the input ended or held something else than the field asked for.
pub trait Source {
    type Bytes: AsRef<[u8]>;
    fn unsigned(&mut self) -> Option<u64>;
    fn bytes(&mut self) -> Option<Self::Bytes>;
}

/// Where encoded fields go.
pub trait Sink {
    fn unsigned(&mut self, value: u64);
    fn bytes(&mut self, value: &[u8]);
}

/// Field markers of a module value in an RDB (`RDB_MODULE_OPCODE_UINT`, `_STRING`).
const UNSIGNED: u8 = 2;
const STRING: u8 = 5;

/// Module value fields as an RDB (and a `DUMP` body) holds them: a marker byte, then an RDB
/// length-encoded number, or a length and that many bytes.
pub struct Payload<'a>(pub &'a [u8]);

impl Payload<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let taken = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(taken)
    }

    /// RDB's length encoding: 6 bits, 14 bits, then 32 or 64 bits big-endian.
    fn length(&mut self) -> Option<u64> {
        let first = self.byte()?;
        match first >> 6 {
            0 => Some(u64::from(first & 0x3f)),
            1 => Some(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            2 if first == 0x80 => Some(u64::from(u32::from_be_bytes(
                self.take(4)?.try_into().ok()?,
            ))),
            2 if first == 0x81 => Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            _ => None,
        }
    }
}

impl Source for Payload<'_> {
    type Bytes = Vec<u8>;
    fn unsigned(&mut self) -> Option<u64> {
        (self.byte()? == UNSIGNED).then_some(())?;
        self.length()
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        (self.byte()? == STRING).then_some(())?;
        let n = usize::try_from(self.length()?).ok()?;
        Some(self.take(n)?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_an_rdb_writes_them() {
        let bytes = [
            2, 0x05, 2, 0x41, 0x00, 2, 0x80, 0, 1, 0, 0, 5, 2, b'h', b'i', 2,
        ];
        let mut payload = Payload(&bytes);
        assert_eq!(payload.unsigned(), Some(5));
        assert_eq!(payload.unsigned(), Some(0x100));
        assert_eq!(payload.unsigned(), Some(0x1_0000));
        assert_eq!(payload.bytes().as_deref(), Some(&b"hi"[..]));
        assert_eq!(payload.unsigned(), None, "ended");
        assert_eq!(
            Payload(&[5, 9, b'x']).bytes(),
            None,
            "shorter than its length"
        );
        assert_eq!(
            Payload(&[5, 1, b'x']).unsigned(),
            None,
            "a string where a number was asked"
        );
    }
}
