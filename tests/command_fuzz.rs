//! Whole commands against a real master with a replica: generated DLOCK.* commands (GUARDs
//! nested up to hundreds deep, OBSERVE and PROCLAIM with every option, ACQUIRE with WAIT and
//! TICKET, the effect commands) mixed with the generic commands that move, expire, restore and
//! flush their keys, alone, inside MULTI and inside scripts, as a user whose key patterns make
//! Redis extract every command's keys, and through `COMMAND GETKEYS` (GUARDs 5,000 deep), every argument drawn from the
//! extremes (0, -1, 2^63, 2^64, " 5", +5, 05, empty, binary, 300 bytes). Afterwards the server
//! answers, its log shows no crash or panic, every gate stands at or below the counter, and the
//! replica's `DEBUG DIGEST` is the master's.
//!
//! `make test` runs it for a few seconds; `make fuzz` for minutes (`DLOCK_FUZZ_SECS`), with a
//! seed it prints (`DLOCK_FUZZ_SEED` replays one).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::*;

const KEYS: [&[u8]; 8] = [
    b"k1",
    b"k2",
    b"g1",
    b"g2",
    b"{t}a",
    b"{t}b",
    b"",
    b"k\x00\xff",
];
const OWNERS: [&[u8]; 5] = [b"o1", b"o2", b"", b"\xff\xfe", &[b'x'; 257]];
const WRAPPED: [&str; 9] = [
    "SET",
    "DEL",
    "INCR",
    "GET",
    "EXPIRE",
    "RENAME",
    "DLOCK.ACQUIRE",
    "MULTI",
    "HSET",
];

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A number as an attacker would spell one.
fn number(rng: &mut StdRng) -> Vec<u8> {
    let now = now_us();
    let picks: [String; 16] = [
        "0".into(),
        "1".into(),
        "-1".into(),
        "1.5".into(),
        " 5".into(),
        "+5".into(),
        "05".into(),
        "".into(),
        "9223372036854775807".into(),
        "9223372036854775808".into(),
        "18446744073709551616".into(),
        now.to_string(),
        (now + 365 * 86_400_000_000).to_string(),
        rng.random_range(1..100u64).to_string(),
        rng.random_range(1..2_000u64).to_string(),
        "abc".into(),
    ];
    picks[rng.random_range(0..picks.len())].clone().into_bytes()
}

fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// One generated command.
fn command(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let key = pick(rng, &KEYS).to_vec();
    let owner = pick(rng, &OWNERS).to_vec();
    let mut argv: Vec<Vec<u8>> = match rng.random_range(0..22) {
        0..=2 => vec![b"DLOCK.ACQUIRE".to_vec(), key, owner, number(rng)],
        3 => vec![b"DLOCK.RELEASE".to_vec(), key, owner],
        4 => vec![b"DLOCK.EXTEND".to_vec(), key, owner, number(rng)],
        5 => vec![b"DLOCK.FENCE".to_vec(), key, owner, number(rng)],
        6 => vec![
            b"DLOCK.PROCLAIM".to_vec(),
            key,
            owner,
            number(rng),
            pick(rng, &OWNERS).to_vec(),
        ],
        7 => vec![b"DLOCK.OBSERVE".to_vec(), key],
        8 => vec![b"DLOCK.STATUS".to_vec(), key],
        9 => vec![b"DLOCK.CHECK".to_vec(), key, number(rng)],
        10 => vec![b"DLOCK.RAISEGATE".to_vec(), key, number(rng)],
        11 => vec![
            b"DLOCK.APPLY".to_vec(),
            key,
            owner,
            number(rng),
            number(rng),
        ],
        12 => vec![b"DLOCK.TOP".to_vec()],
        13 | 14 => return guard(rng),
        15 => {
            // Key extraction, as every ACL key check and Cluster routing asks it.
            let mut asked = vec![b"COMMAND".to_vec(), b"GETKEYS".to_vec()];
            asked.extend(guard(rng));
            return asked;
        }
        16 => vec![b"RENAME".to_vec(), key, pick(rng, &KEYS).to_vec()],
        17 => vec![b"PEXPIRE".to_vec(), key, number(rng)],
        18 => vec![b"MOVE".to_vec(), key, b"1".to_vec()],
        19 => vec![b"DEL".to_vec(), key],
        20 => vec![b"SWAPDB".to_vec(), b"0".to_vec(), b"1".to_vec()],
        _ => vec![b"PERSIST".to_vec(), key],
    };
    // Options, any of them, any number of times, with values or without.
    let options: [&[u8]; 11] = [
        b"REENTRANT",
        b"WAIT",
        b"TICKET",
        b"SHARED",
        b"LIMIT",
        b"AFTER",
        b"OWNER",
        b"TIMEOUT",
        b"PX",
        b"COUNT",
        b"PXAT",
    ];
    for _ in 0..rng.random_range(0..4) {
        argv.push(pick(rng, &options).to_vec());
        if rng.random_bool(0.8) {
            argv.push(small_timeout(rng));
        }
    }
    argv
}

/// Blocking options stay short, so the fuzz moves on (the block is the point, not its length).
fn small_timeout(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..4) {
        0 => number(rng),
        _ => rng.random_range(1..30u64).to_string().into_bytes(),
    }
}

/// A GUARD, nested up to 5,000 deep, around a data command or something it must refuse.
fn guard(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let depth = match rng.random_range(0..20) {
        0 => rng.random_range(300..5_000),
        1 | 2 => rng.random_range(2..300),
        _ => 1,
    };
    let mut argv = Vec::new();
    for _ in 0..depth {
        argv.push(b"DLOCK.GUARD".to_vec());
        argv.push(pick(rng, &[b"g1".as_slice(), b"g2", b"k1", b""]).to_vec());
        argv.push(number(rng));
    }
    argv.push(pick(rng, &WRAPPED).as_bytes().to_vec());
    for _ in 0..rng.random_range(0..4) {
        argv.push(pick(rng, &KEYS).to_vec());
    }
    argv
}

/// Sends one command; `false` when the connection is done for (a wait with no limit, `WAIT 0`,
/// outlived the read timeout: the fuzz takes a new connection).
fn send(c: &mut Connection, argv: &[Vec<u8>]) -> bool {
    let mut cmd = redis::cmd(std::str::from_utf8(&argv[0]).unwrap_or("PING"));
    for a in &argv[1..] {
        cmd.arg(a.as_slice());
    }
    // Errors are answers; only a lost connection matters here, and a crash at the end.
    !matches!(cmd.query::<Value>(c), Err(e) if e.is_io_error() || e.is_timeout())
}

/// A batch inside MULTI, or one command through EVAL (neither blocks).
fn wrapped(rng: &mut StdRng, c: &mut Connection) -> bool {
    if rng.random_bool(0.5) {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for _ in 0..rng.random_range(1..6) {
            let argv = command(rng);
            let cmd = pipe.cmd(std::str::from_utf8(&argv[0]).unwrap_or("PING"));
            for a in &argv[1..] {
                cmd.arg(a.as_slice());
            }
        }
        !matches!(pipe.query::<Value>(c), Err(e) if e.is_io_error() || e.is_timeout())
    } else {
        let argv = command(rng);
        let mut eval = redis::cmd("EVAL");
        eval.arg("return redis.pcall(unpack(ARGV))").arg(0);
        for a in &argv {
            eval.arg(a.as_slice());
        }
        !matches!(eval.query::<Value>(c), Err(e) if e.is_io_error() || e.is_timeout())
    }
}

/// A connection as the default user, or as `app`, whose key patterns make Redis extract the
/// keys of every command it sends (the path a nested GUARD once crashed).
fn connect(server: &Server, restricted: bool) -> Connection {
    let c = match restricted {
        false => server.conn(),
        true => redis::Client::open(format!("redis://app:pw@127.0.0.1:{}", server.port()))
            .and_then(|client| client.get_connection())
            .expect("connect as app"),
    };
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    c
}

/// Every gate in databases 0 and 1 stands at or below the node counter.
fn gates_below_the_counter(c: &mut Connection) {
    let counter = counter(c) as u64;
    for db in [0, 1] {
        redis::cmd("SELECT").arg(db).exec(c).unwrap();
        let gates: Vec<Vec<u8>> = redis::cmd("SCAN")
            .arg(&["0", "COUNT", "10000", "TYPE", "dlockgate"])
            .query::<(String, Vec<Vec<u8>>)>(c)
            .unwrap()
            .1;
        for gate in gates {
            let name = String::from_utf8_lossy(&gate).into_owned();
            assert!(
                gate_token(c, &name) <= counter,
                "gate {name:?} above the counter"
            );
        }
    }
    redis::cmd("SELECT").arg(0).exec(c).unwrap();
}

/// A PING every 10 ms from its own connection, the slowest answer kept: no command may hold
/// the event loop.
struct Probe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Duration>,
}

fn ping_probe(server: &Server) -> Probe {
    let mut c = server.conn();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut slowest = Duration::ZERO;
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            let sent = Instant::now();
            let _ = redis::cmd("PING").query::<String>(&mut c);
            slowest = slowest.max(sent.elapsed());
            std::thread::sleep(Duration::from_millis(10));
        }
        slowest
    });
    Probe { stop, thread }
}

impl Probe {
    fn stop(self) -> Duration {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(Duration::MAX)
    }
}

#[test]
fn generated_commands_never_crash_the_server_or_split_master_and_replica() {
    let secs = std::env::var("DLOCK_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let seed = std::env::var("DLOCK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(now_us);
    println!("command fuzz: seed {seed} (DLOCK_FUZZ_SEED), {secs} s (DLOCK_FUZZ_SECS)");
    let mut rng = StdRng::seed_from_u64(seed);
    let master = Server::builder()
        .config("enable-debug-command", "yes")
        .start();
    let replica = replica_built(
        &master,
        Server::builder().config("enable-debug-command", "yes"),
    );
    redis::cmd("ACL")
        .arg(&[
            "SETUSER", "app", "on", ">pw", "~k*", "~g*", "~{t}*", "+@all",
        ])
        .exec(&mut master.conn())
        .unwrap();
    let probe = ping_probe(&master);
    let mut c = connect(&master, false);
    let (end, mut sent, mut lost) = (Instant::now() + Duration::from_secs(secs), 0u64, 0u64);
    while Instant::now() < end {
        let alive = match rng.random_range(0..10) {
            0 => wrapped(&mut rng, &mut c),
            _ => send(&mut c, &command(&mut rng)),
        };
        if !alive || sent % 500 == 0 {
            lost += u64::from(!alive);
            c = connect(&master, rng.random_bool(0.5));
        }
        sent += 1;
    }
    let slowest = probe.stop();
    println!("command fuzz: {sent} commands or batches, {lost} connections left blocked, slowest PING {slowest:?}");
    assert!(
        slowest < Duration::from_secs(1),
        "seed {seed}: the event loop stalled {slowest:?}"
    );
    let mut c = master.conn();
    let pong: String = redis::cmd("PING")
        .query(&mut c)
        .unwrap_or_else(|e| panic!("seed {seed}: the server died: {e}\n{}", master.log_tail()));
    assert_eq!(pong, "PONG");
    master.assert_no_crash();
    gates_below_the_counter(&mut c);
    crate::matrix::same_digest(&mut c, &mut replica.conn());
    replica.assert_no_crash();
}
