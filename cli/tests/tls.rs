//! `dlock` against production connections: mutual TLS from flags and from the environment,
//! an ACL user whose password never appears on a command line, a sentinel-managed master; and
//! each refusal with its exit code (2: bad files, before any node is asked; 4: the node refused,
//! naming why).

mod common;
use common::*;

use std::process::{Command, Output, Stdio};

use dlock_testkit::{tls_supported, Certificates, Sentinels};

/// Certificates, or `None` (said on stderr) where the server was built without TLS (the
/// `make compat` builds): the TLS tests then check nothing.
fn certificates() -> Option<Certificates> {
    let certs = Certificates::new();
    if tls_supported(&certs) {
        return Some(certs);
    }
    eprintln!("skipped: this redis-server was built without TLS");
    None
}

fn dlock(nodes: &[String], args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlock"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DLOCK_NODES", nodes.join(","))
        .env("DLOCK_TIMEOUT", "1s")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dlock")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

fn tls_nodes(certs: &Certificates) -> (Vec<Server>, Vec<String>) {
    (0..3)
        .map(|_| {
            let (builder, port) = Server::builder().tls(certs);
            (builder.start(), format!("rediss://127.0.0.1:{port}"))
        })
        .unzip()
}

#[test]
fn mutual_tls_from_flags_and_from_the_environment() {
    let Some(certs) = certificates() else {
        return;
    };
    let (servers, nodes) = tls_nodes(&certs);
    let file = |name: &str| certs.path(name).display().to_string();
    let flags = [
        "--cacert",
        &file("ca.crt"),
        "--cert",
        &file("client.crt"),
        "--key",
        &file("client.key"),
    ];
    let out = dlock(
        &nodes,
        &[&flags[..], &["acquire", "a", "--ttl", "30s"]].concat(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(servers.iter().all(|s| token_on(s, "a").is_some()));

    let env = [
        ("DLOCK_CACERT", file("ca.crt")),
        ("DLOCK_CERT", file("client.crt")),
        ("DLOCK_KEY", file("client.key")),
    ];
    let out = dlock(
        &nodes,
        &["run", "b", "--", "sh", "-c", "echo $DLOCK_TOKEN"],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).parse::<u64>().is_ok());
    let status = dlock(&nodes, &["status", "a"], &env);
    assert_eq!(
        text(&status.stdout)
            .lines()
            .filter(|l| l.contains("token="))
            .count(),
        3
    );
}

#[test]
fn tls_refusals_exit_2_for_bad_files_and_4_for_nodes_naming_the_failure() {
    let Some(certs) = certificates() else {
        return;
    };
    let (_servers, nodes) = tls_nodes(&certs);
    let file = |name: &str| certs.path(name).display().to_string();
    let usage = [
        (
            vec!["--cert".to_string(), file("client.crt")],
            "given without its key",
        ),
        (
            vec!["--key".to_string(), file("client.key")],
            "given without its certificate",
        ),
        (
            vec!["--cacert".to_string(), file("nope.pem")],
            "cannot read",
        ),
        (
            vec!["--cacert".to_string(), file("client.key")],
            "no PEM certificate",
        ),
    ];
    for (flags, expected) in usage {
        let args: Vec<&str> = flags
            .iter()
            .map(String::as_str)
            .chain(["acquire", "r", "--ttl", "5s"])
            .collect();
        let out = dlock(&nodes, &args, &[]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flags:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(expected),
            "{}",
            text(&out.stderr)
        );
    }
    let refused = [
        (vec!["--cacert", "other-ca.crt"], "UnknownIssuer"),
        (vec!["--cacert", "ca.crt"], "CertificateRequired"),
        (vec![], "invalid peer certificate"),
    ];
    for (flags, expected) in refused {
        let mut args: Vec<String> = Vec::new();
        for pair in flags.chunks(2) {
            args.push(pair[0].to_string());
            args.push(file(pair[1]));
        }
        args.extend(["acquire", "r", "--ttl", "5s"].map(String::from));
        let out = dlock(
            &nodes,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(4),
            "{args:?}: {}",
            text(&out.stderr)
        );
        // A round ends once a majority has failed: two or three nodes are named.
        assert!(
            text(&out.stderr).matches(expected).count() >= 2,
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn an_acl_user_with_its_password_from_the_environment_or_a_file_never_from_argv() {
    let servers = nodes(3);
    for server in &servers {
        // The least a dlock user needs (docs/connecting.md), by command name (Redis 7.0 has no
        // module ACL categories); DLOCK.RUNID for the server's run_id (one server never counts
        // twice), not INFO.
        let rules = [
            "on",
            ">s3cret-pass",
            "resetkeys",
            "~*",
            "-@all",
            "+dlock.acquire",
            "+dlock.release",
            "+dlock.extend",
            "+dlock.fence",
            "+dlock.status",
            "+dlock.waiters",
            "+wait",
            "+dlock.runid",
        ];
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("app")
            .arg(&rules[..])
            .exec(&mut server.conn())
            .unwrap();
    }
    let nodes = urls(&servers);
    let user = ("DLOCK_USER", "app".to_string());
    let env = [user.clone(), ("DLOCK_PASSWORD", "s3cret-pass".to_string())];
    // The command sees the lock, not the password.
    let out = dlock(
        &nodes,
        &[
            "run",
            "r",
            "--",
            "sh",
            "-c",
            "echo pw=$DLOCK_PASSWORD; cat /proc/$PPID/cmdline",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("pw=\n") || text(&out.stdout).starts_with("pw="),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stdout).contains("s3cret"),
        "the password reached the command or argv"
    );

    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("password");
    std::fs::write(&password_file, "s3cret-pass\n").unwrap();
    let file_arg = password_file.display().to_string();
    let out = dlock(
        &nodes,
        &["--password-file", &file_arg, "acquire", "f", "--ttl", "5s"],
        std::slice::from_ref(&user),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let wrong = [user, ("DLOCK_PASSWORD", "not-the-password".to_string())];
    let out = dlock(&nodes, &["acquire", "w", "--ttl", "5s"], &wrong);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("authentication failed (wrong user or password)"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("not-the-password"),
        "the password leaked"
    );
    let help = text(&dlock(&nodes, &["--help"], &[]).stdout);
    assert!(
        !help.contains("--password ") && help.contains("--password-file"),
        "no password flag"
    );
}

#[test]
fn a_sentinel_node_from_the_cli() {
    let set = Sentinels::start();
    let out = dlock(
        &[set.url()],
        &["acquire", "s", "--ttl", "30s", "--ack-timeout", "2s"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let master = set.master().expect("a master");
    assert!(token_on(&set.nodes[master], "s").is_some());
    let status = dlock(&[set.url()], &["status", "s"], &[]);
    assert!(
        text(&status.stdout).contains("token="),
        "{}",
        text(&status.stdout)
    );
}
