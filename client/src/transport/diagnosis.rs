//! Why a server could not be used, in the words every dlock client uses (conformance/errors.json):
//! what failed, then what to do about it. The node's URL is put in front by the caller.
//! No text here carries a credential.

use std::time::Duration;

use redis::{ErrorKind, RedisError};

use crate::errors::Incurable;

/// A connection that could not be made (or set up: `AUTH`, `CLIENT SETNAME`; a `SELECT` refused is [`database_refused`]).
pub fn cannot_connect(e: &RedisError, tls: bool, timeout: Duration, login: &str) -> String {
    if let Some(auth) = authentication(e, login) {
        return auth;
    }
    let text = e.to_string();
    // (The io::Error inside is not public: redis says which kind it was.)
    if e.is_connection_refusal() && text.contains("No such file") {
        return "no such socket: is the server running, and is the path right?".into();
    }
    if e.is_connection_refusal() {
        return "connection refused: is the server running, and is the port right?".into();
    }
    let dropped = e.is_connection_dropped() || text.contains("reset by peer");
    if !tls && dropped {
        return "connection reset during the handshake: is it a TLS port? then use rediss://"
            .into();
    }
    if tls && e.is_timeout() {
        return format!(
            "no TLS handshake within {timeout:?}: a port without TLS? then use redis:// \
             (or the server is paused or overloaded)"
        );
    }
    if tls && (text.contains("certificate") || text.contains("alert")) {
        return format!("TLS: {text}: {}", tls_hint(&text));
    }
    format!("cannot connect: {text}")
}

/// The `SELECT` of a URL's database refused: redis-rs says so in its own words, the server's
/// error code lost (it answers `ERR DB index is out of range` for a database it does not have).
pub fn database_refused(e: &RedisError) -> Option<String> {
    if !e.to_string().contains("refused to switch database") {
        return None;
    }
    let detail = e.detail().unwrap_or("no reason given");
    let code = if detail.contains("out of range") {
        "ERR "
    } else {
        ""
    };
    Some(format!("refused by the server ({code}{detail})"))
}

/// Whether `e`, met while setting a connection up, is a refusal waiting cannot cure: a login
/// or a permission refused, a database the server does not have.
pub fn incurable(e: &RedisError) -> Option<Incurable> {
    if e.to_string().contains("refused to switch database") {
        let missing = e.detail().is_some_and(|d| d.contains("out of range"));
        return Some(if missing {
            Incurable::NoDatabase
        } else {
            Incurable::Refused
        });
    }
    let noperm = e.code() == Some("NOPERM");
    (about_login(e) || noperm).then_some(Incurable::Refused)
}

/// An error reply, as the server wrote it (`TRYAGAIN ...`), except the ones about logging in.
pub fn reply_error(e: &RedisError, login: &str) -> String {
    if let Some(auth) = authentication(e, login) {
        return auth;
    }
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}

/// Whether `e` is about logging in (a missing or wrong password).
pub fn about_login(e: &RedisError) -> bool {
    authentication(e, "").is_some()
}

/// A wrong or a missing password, with how to give one.
fn authentication(e: &RedisError, login: &str) -> Option<String> {
    let code = e.code().unwrap_or_default();
    if code == "NOAUTH" {
        return Some(format!(
            "authentication required (NOAUTH): give a user and password ({login})"
        ));
    }
    if code == "WRONGPASS" || e.kind() == ErrorKind::AuthenticationFailed {
        return Some(format!(
            "authentication failed (wrong user or password): give the right user and password ({login})"
        ));
    }
    None
}

fn tls_hint(text: &str) -> &'static str {
    if text.contains("UnknownIssuer") {
        "the server's certificate is not signed by a CA given (or, without one, the system's)"
    } else if text.contains("NotValidForName") || text.contains("not valid for name") {
        "the server's certificate is not for the host in the URL"
    } else if text.contains("CertificateRequired") {
        "the server wants a client certificate: give a certificate and its key"
    } else {
        "check the CA, the client certificate and the host name"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::LOGIN_HINT;

    fn io(kind: std::io::ErrorKind) -> RedisError {
        RedisError::from(std::io::Error::from(kind))
    }

    #[test]
    fn refused_says_what_to_check() {
        let why = cannot_connect(
            &io(std::io::ErrorKind::ConnectionRefused),
            false,
            Duration::ZERO,
            LOGIN_HINT,
        );
        assert_eq!(
            why,
            "connection refused: is the server running, and is the port right?"
        );
    }

    #[test]
    fn a_reset_plain_connection_suggests_tls_only_when_plain() {
        let reset = io(std::io::ErrorKind::ConnectionReset);
        assert!(cannot_connect(&reset, false, Duration::ZERO, LOGIN_HINT).contains("use rediss://"));
        assert!(!cannot_connect(&reset, true, Duration::ZERO, LOGIN_HINT).contains("rediss://"));
    }

    #[test]
    fn authentication_names_the_way_to_give_credentials() {
        let wrong = RedisError::from((
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        ));
        let why = cannot_connect(&wrong, false, Duration::ZERO, "--user and DLOCK_PASSWORD");
        assert!(why.starts_with("authentication failed"), "{why}");
        assert!(why.contains("--user and DLOCK_PASSWORD"), "{why}");
    }
}
