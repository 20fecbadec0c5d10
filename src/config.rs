//! The module's `dlock.*` settings, registered with Redis's module config API so they work in
//! redis.conf, on the command line and with CONFIG SET / CONFIG GET. Module arguments
//! (`loadmodule libdlock.so max-ttl-ms 60000`) are validated by the same rules; a bad one stops
//! the load with a log line naming it.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};

use dlock_core::Settings;
use redis_module::configuration::{
    register_bool_configuration, register_i64_configuration, ConfigurationFlags,
};
use redis_module::{raw, Context, RedisString};

use crate::wire::args::integer;
use crate::wire::limits::LIMIT_MS;

pub const DEFAULT_MAX_TTL_MS: i64 = 24 * 60 * 60 * 1000;

pub static MAX_TTL_MS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_TTL_MS);
pub static QUARANTINE_MS: AtomicI64 = AtomicI64::new(0);
pub static CLOCK_FLOOR: AtomicBool = AtomicBool::new(true);
pub static ALLOW_EVICTION: AtomicBool = AtomicBool::new(false);
pub static MAX_WAITERS: AtomicI64 = AtomicI64::new(10_000);

enum Kind {
    Int {
        var: &'static AtomicI64,
        default: i64,
        min: i64,
        max: i64,
    },
    Bool {
        var: &'static AtomicBool,
        default: bool,
    },
}

/// Every setting, once: name (without the `dlock.` prefix), type, default and range.
#[rustfmt::skip]
const CONFIGS: &[(&str, Kind)] = &[
    ("max-ttl-ms",     Kind::Int { var: &MAX_TTL_MS,    default: DEFAULT_MAX_TTL_MS, min: 1, max: LIMIT_MS }),
    ("quarantine-ms",  Kind::Int { var: &QUARANTINE_MS, default: 0,                  min: 0, max: LIMIT_MS }),
    ("clock-floor",    Kind::Bool { var: &CLOCK_FLOOR,    default: true }),
    ("allow-eviction", Kind::Bool { var: &ALLOW_EVICTION, default: false }),
    ("max-waiters",    Kind::Int { var: &MAX_WAITERS,   default: 10_000,             min: 0, max: 100_000_000 }),
];

pub fn max_ttl_ms() -> i64 {
    MAX_TTL_MS.load(Relaxed)
}

/// Clients that may wait on one key at once.
pub fn max_waiters() -> usize {
    usize::try_from(MAX_WAITERS.load(Relaxed)).unwrap_or(0)
}

pub fn allow_eviction() -> bool {
    ALLOW_EVICTION.load(Relaxed)
}

pub fn settings() -> Settings {
    Settings {
        quarantine_ms: QUARANTINE_MS.load(Relaxed).max(0) as u64,
        clock_floor: CLOCK_FLOOR.load(Relaxed),
    }
}

/// A validated value for one setting.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(i64),
    Bool(bool),
}

/// Registers every setting, with module arguments as defaults, then applies redis.conf and
/// command-line values (`RedisModule_LoadConfigs`). Errors name the offending argument.
pub fn register(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    let words: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    let overrides = parse_module_args(&words)?;
    for (i, (name, kind)) in CONFIGS.iter().enumerate() {
        let given = overrides[i];
        match *kind {
            Kind::Int {
                var,
                default,
                min,
                max,
            } => {
                let value = match given {
                    Some(Value::Int(v)) => v,
                    _ => default,
                };
                register_i64_configuration(
                    ctx,
                    name,
                    var,
                    value,
                    min,
                    max,
                    ConfigurationFlags::DEFAULT,
                    None,
                );
            }
            Kind::Bool { var, default } => {
                let value = match given {
                    Some(Value::Bool(v)) => v,
                    _ => default,
                };
                register_bool_configuration(
                    ctx,
                    name,
                    var,
                    value,
                    ConfigurationFlags::DEFAULT,
                    None,
                );
            }
        }
    }
    let load =
        crate::api!(RedisModule_LoadConfigs).ok_or("this server has no module config API")?;
    // SAFETY: the module's load context, during OnLoad.
    if unsafe { load(ctx.ctx) } != raw::REDISMODULE_OK as i32 {
        return Err(
            "a dlock.* setting in the server configuration was refused (see the line above)".into(),
        );
    }
    Ok(())
}

/// `name value` pairs, each name with or without the `dlock.` prefix, each value checked like
/// CONFIG SET would. One entry per [`CONFIGS`] row.
fn parse_module_args(words: &[&[u8]]) -> Result<Vec<Option<Value>>, String> {
    let mut values = vec![None; CONFIGS.len()];
    if !words.len().is_multiple_of(2) {
        return Err(format!(
            "module arguments come in 'name value' pairs, got {} words (settings: {})",
            words.len(),
            names()
        ));
    }
    for pair in words.chunks(2) {
        let (name, value) = (shown(pair[0]), pair[1]);
        let bare = name
            .strip_prefix("dlock.")
            .unwrap_or(&name)
            .to_ascii_lowercase();
        let index = CONFIGS
            .iter()
            .position(|(n, _)| *n == bare)
            .ok_or_else(|| format!("unknown module argument '{name}' (settings: {})", names()))?;
        let parsed = parse_value(&CONFIGS[index].1, value)
            .map_err(|why| format!("module argument '{name} {}' refused: {why}", shown(value)))?;
        values[index] = Some(parsed);
    }
    Ok(values)
}

fn parse_value(kind: &Kind, value: &[u8]) -> Result<Value, String> {
    match *kind {
        Kind::Int { min, max, .. } => integer(value)
            .filter(|v| (min..=max).contains(v))
            .map(Value::Int)
            .ok_or_else(|| format!("must be an integer from {min} to {max}")),
        Kind::Bool { .. } => match value.to_ascii_lowercase().as_slice() {
            b"yes" => Ok(Value::Bool(true)),
            b"no" => Ok(Value::Bool(false)),
            _ => Err("must be yes or no".into()),
        },
    }
}

fn names() -> String {
    CONFIGS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

fn shown(bytes: &[u8]) -> String {
    bytes[..bytes.len().min(64)].escape_ascii().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Vec<Option<Value>>, String> {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        parse_module_args(&words)
    }

    #[test]
    fn valid_arguments_with_or_without_prefix() {
        let v = parse(&[
            "max-ttl-ms",
            "60000",
            "dlock.quarantine-ms",
            "30000",
            "CLOCK-FLOOR",
            "no",
        ])
        .unwrap();
        assert_eq!(
            v,
            vec![
                Some(Value::Int(60_000)),
                Some(Value::Int(30_000)),
                Some(Value::Bool(false)),
                None,
                None
            ]
        );
        assert_eq!(parse(&[]).unwrap(), vec![None; 5]);
    }

    #[test]
    fn bad_arguments_name_themselves_and_the_rule() {
        let cases = [
            (
                &["clock-floor", "on"][..],
                "'clock-floor on' refused: must be yes or no",
            ),
            (
                &["max-ttl-ms", "0"][..],
                "'max-ttl-ms 0' refused: must be an integer from 1 to 315360000000",
            ),
            (
                &["max-ttl-ms", "9223372036854775807"][..],
                "from 1 to 315360000000",
            ),
            (&["quarantine-ms", "-1"][..], "'quarantine-ms -1' refused"),
            (&["quarantine-ms", "1.5"][..], "must be an integer"),
            (&["max-ttl"][..], "come in 'name value' pairs"),
            (&["max-ttl", "5"][..], "unknown module argument 'max-ttl'"),
        ];
        for (words, expected) in cases {
            let error = parse(words).unwrap_err();
            assert!(error.contains(expected), "{words:?}: {error}");
        }
    }
}
