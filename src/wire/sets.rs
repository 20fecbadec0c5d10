//! The arguments of the set commands (`DLOCK.ACQUIREALL`, `RELEASEALL`, `EXTENDALL`,
//! `FENCEALL`): `numkeys key [key ...]` first, as Redis's own multi-key commands (`ZUNION`,
//! `LMPOP`), so a key spec of the `keynum` kind names every key (ACL key patterns, Cluster
//! routing and `COMMAND GETKEYS` work), then the owner and what follows. Parsed from bytes
//! alone, so unit tests and the fuzz targets call it with anything; everything is checked
//! before a key is opened.

use dlock_core::sets::{check_keys, BadSet, MAX_SET};
use dlock_core::Want;
use redis_module::RedisError;

use super::args;
use super::errors;

/// A set's keys (positions in argv) and what follows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetArgs {
    /// argv[2 .. 2 + numkeys] are the keys.
    pub numkeys: usize,
    /// Where the owner is; the arguments after it follow.
    pub owner_at: usize,
}

/// `NAME numkeys key [key ...] owner ...`: `after_owner` arguments at least must follow the
/// owner (the name counts in argv).
pub fn set_args<A: AsRef<[u8]>>(
    argv: &[A],
    command: &str,
    after_owner: usize,
) -> Result<SetArgs, RedisError> {
    let raw = argv.get(1).ok_or_else(|| errors::arity(command))?.as_ref();
    let numkeys = args::integer(raw)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=MAX_SET).contains(n))
        .ok_or_else(|| errors::numkeys(raw, MAX_SET))?;
    let owner_at = 2 + numkeys;
    if argv.len() < owner_at + 1 + after_owner {
        return Err(errors::arity(command));
    }
    let keys: Vec<&[u8]> = argv[2..owner_at].iter().map(AsRef::as_ref).collect();
    match check_keys(&keys) {
        Ok(()) => {}
        Err(BadSet::Repeated(i)) => return Err(errors::key_twice(keys[i])),
        Err(BadSet::Empty | BadSet::TooMany) => return Err(errors::numkeys(raw, MAX_SET)),
    }
    args::owner(argv[owner_at].as_ref())?;
    Ok(SetArgs { numkeys, owner_at })
}

/// `MODES xs...`: one letter per key, `x` exclusive, `s` shared (either case); all exclusive
/// when absent.
pub fn modes(given: Option<&[u8]>, numkeys: usize) -> Result<Vec<Want>, RedisError> {
    let Some(letters) = given else {
        return Ok(vec![Want::Exclusive; numkeys]);
    };
    if letters.len() != numkeys {
        return Err(errors::modes(letters, numkeys));
    }
    letters
        .iter()
        .map(|letter| match letter.to_ascii_lowercase() {
            b'x' => Ok(Want::Exclusive),
            b's' => Ok(Want::Shared),
            _ => Err(errors::modes(letters, numkeys)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &str) -> Vec<&[u8]> {
        words.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn keys_come_first_counted_and_each_once() {
        let ok = set_args(&argv("dlock.acquireall 2 a b me 1000"), "c", 1);
        assert_eq!(
            ok.ok(),
            Some(SetArgs {
                numkeys: 2,
                owner_at: 4
            })
        );
        let twice = set_args(&argv("dlock.acquireall 2 a a me 1000"), "c", 1);
        assert!(format!("{:?}", twice.unwrap_err()).contains("given twice"));
        for bad in ["0", "17", "-1", "x", "02"] {
            let words = format!("dlock.acquireall {bad} a me 1000");
            let refused = set_args(&argv(&words), "c", 1).unwrap_err();
            assert!(format!("{refused:?}").contains("numkeys"), "{bad}");
        }
        // numkeys larger than what follows: an arity error, not a key taken for an owner.
        let short = set_args(&argv("dlock.acquireall 3 a b me"), "dlock.acquireall", 1);
        assert!(format!("{:?}", short.unwrap_err()).contains("wrong number"));
    }

    #[test]
    fn modes_are_one_letter_per_key() {
        assert_eq!(
            modes(Some(b"xS"), 2).ok(),
            Some(vec![Want::Exclusive, Want::Shared])
        );
        assert_eq!(modes(None, 1).ok(), Some(vec![Want::Exclusive]));
        assert!(modes(Some(b"x"), 2).is_err());
        assert!(modes(Some(b"xp"), 2).is_err());
    }
}
