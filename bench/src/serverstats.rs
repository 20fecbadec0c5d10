//! What a server says about itself: CPU time used (INFO cpu) and calls and time per command
//! (INFO commandstats).

use std::collections::BTreeMap;

use redis::Connection;

/// Calls and total µs of one command, as INFO commandstats counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CommandStat {
    pub calls: u64,
    pub usec: u64,
}

/// The server process's CPU seconds so far, user + system, all threads.
pub fn cpu_seconds(c: &mut Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(c).expect("INFO cpu");
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO cpu has no {name}"))
    };
    field("used_cpu_user:") + field("used_cpu_sys:")
}

/// Every command's stats since the last `CONFIG RESETSTAT`, by lower-case name
/// (`dlock.acquire`, `evalsha`, ...).
pub fn command_stats(c: &mut Connection) -> BTreeMap<String, CommandStat> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(c)
        .expect("INFO commandstats");
    info.lines().filter_map(parse_line).collect()
}

/// `cmdstat_set:calls=3,usec=12,usec_per_call=4.00,...` into ("set", stat).
fn parse_line(line: &str) -> Option<(String, CommandStat)> {
    let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
    let field = |key: &str| -> Option<u64> {
        fields
            .split(',')
            .find_map(|f| f.strip_prefix(key))?
            .parse()
            .ok()
    };
    let stat = CommandStat {
        calls: field("calls=")?,
        usec: field("usec=")?,
    };
    Some((name.to_string(), stat))
}

pub fn reset_stats(c: &mut Connection) {
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .exec(c)
        .expect("CONFIG RESETSTAT");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_commandstats_line() {
        let line = "cmdstat_dlock.acquire:calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0";
        let (name, stat) = parse_line(line).expect("a stat line");
        assert_eq!(name, "dlock.acquire");
        assert_eq!(
            stat,
            CommandStat {
                calls: 12,
                usec: 30
            }
        );
        assert!(parse_line("# Commandstats").is_none());
    }
}
