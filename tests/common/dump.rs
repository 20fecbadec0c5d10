//! DUMP payloads of lock values, taken apart and put back together with a valid checksum, so
//! tests can hand RESTORE exactly the malformed value they mean to.
//!
//! Layout: type `RDB_TYPE_MODULE_2` (7) | module id (54-bit type name + 10-bit encoding version,
//! length-encoded) | fields, each an opcode (2 unsigned, 5 string) and a value | EOF opcode 0 |
//! RDB version (u16 LE) | CRC64 (Jones, LE) of everything before it.

use crc::{Crc, CRC_64_REDIS};

pub const UINT: u8 = 2;
pub const STRING: u8 = 5;

/// RDB length encoding.
pub fn len(n: u64) -> Vec<u8> {
    match n {
        0..=63 => vec![n as u8],
        64..=16_383 => vec![0x40 | (n >> 8) as u8, n as u8],
        16_384..=0xFFFF_FFFF => {
            let mut v = vec![0x80];
            v.extend((n as u32).to_be_bytes());
            v
        }
        _ => {
            let mut v = vec![0x81];
            v.extend(n.to_be_bytes());
            v
        }
    }
}

pub fn uint(n: u64) -> Vec<u8> {
    let mut v = vec![UINT];
    v.extend(len(n));
    v
}

pub fn string(bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![STRING];
    v.extend(len(bytes.len() as u64));
    v.extend(bytes);
    v
}

/// A valid DUMP payload's parts: the 9-byte header (type + module id), the RDB version bytes.
pub struct Parts {
    pub header: Vec<u8>,
    pub version: [u8; 2],
}

impl Parts {
    /// Splits a DUMP of a lock written by this module.
    pub fn of(dump: &[u8]) -> Parts {
        assert_eq!(dump[0], 7, "a module value");
        assert_eq!(dump[1], 0x81, "a 64-bit module id");
        let n = dump.len();
        Parts {
            header: dump[..10].to_vec(),
            version: [dump[n - 10], dump[n - 9]],
        }
    }

    /// The header with another encoding version in the module id's low 10 bits.
    pub fn with_encver(&self, encver: u16) -> Vec<u8> {
        let mut header = self.header.clone();
        let id = u64::from_be_bytes(header[2..10].try_into().unwrap());
        let id = (id & !0x3FF) | u64::from(encver & 0x3FF);
        header[2..10].copy_from_slice(&id.to_be_bytes());
        header
    }

    /// header + fields + EOF + version + CRC.
    pub fn payload(&self, header: &[u8], fields: &[u8], eof: bool) -> Vec<u8> {
        let mut body = header.to_vec();
        body.extend(fields);
        if eof {
            body.push(0);
        }
        seal(body, self.version)
    }
}

/// Appends the RDB version and the checksum RESTORE verifies.
pub fn seal(mut body: Vec<u8>, version: [u8; 2]) -> Vec<u8> {
    body.extend(version);
    let crc = Crc::<u64>::new(&CRC_64_REDIS).checksum(&body);
    body.extend(crc.to_le_bytes());
    body
}

/// Re-seals a payload whose body (everything before version + CRC) was changed.
pub fn reseal(payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    seal(
        payload[..n - 10].to_vec(),
        [payload[n - 10], payload[n - 9]],
    )
}

/// The five version-2 fields of a lock.
pub fn lock_fields(owner: &[u8], token: u64, holds: u64, deadline_ms: u64, place: u64) -> Vec<u8> {
    [
        string(owner),
        uint(token),
        uint(holds),
        uint(deadline_ms),
        uint(place),
    ]
    .concat()
}

pub fn dump(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(c).expect("DUMP")
}

/// RESTORE key 0 payload REPLACE: the error text, or None on success.
pub fn restore(c: &mut redis::Connection, key: &str, payload: &[u8]) -> Option<String> {
    let result: redis::RedisResult<redis::Value> = redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .arg("REPLACE")
        .query(c);
    result.err().map(|e| {
        format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
            .trim()
            .to_string()
    })
}
