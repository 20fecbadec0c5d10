//! How `dlock` reaches production nodes: TLS files (named as in `redis-cli`) and an ACL user,
//! each also from the environment. The password is never an argument (it would show in `ps`):
//! `DLOCK_PASSWORD` or `--password-file`; sentinels' own credentials: `DLOCK_SENTINEL_USER`,
//! `DLOCK_SENTINEL_PASSWORD`.

use std::path::PathBuf;

use clap::Args;
use dlock_client::{Error, LockManagerBuilder, Tls};

#[derive(Args)]
pub struct ConnectionArgs {
    /// CA bundle (PEM) that rediss:// nodes' certificates must chain to (default: the system's
    /// roots).
    #[arg(long, env = "DLOCK_CACERT", value_name = "FILE", global = true)]
    cacert: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs --key.
    #[arg(long, env = "DLOCK_CERT", value_name = "FILE", global = true)]
    cert: Option<PathBuf>,
    /// Private key (PEM) of --cert.
    #[arg(long, env = "DLOCK_KEY", value_name = "FILE", global = true)]
    key: Option<PathBuf>,
    /// UNSAFE: skip every check of rediss:// servers' certificates (anyone on the path can then
    /// read and forge the traffic). For tests only.
    #[arg(long, global = true)]
    insecure: bool,
    /// ACL user for every node whose URL names no credentials (its password: DLOCK_PASSWORD or
    /// --password-file).
    #[arg(long, env = "DLOCK_USER", global = true)]
    user: Option<String>,
    /// File whose first line is the password (for every node whose URL names no credentials).
    /// Or set DLOCK_PASSWORD. Never given on the command line, where `ps` would show it.
    #[arg(long, value_name = "FILE", global = true)]
    password_file: Option<PathBuf>,
}

impl ConnectionArgs {
    /// `builder` with these settings; every file is read and checked first, so a bad one is a
    /// usage error (exit 2) naming it before any node is asked.
    pub fn apply(&self, mut builder: LockManagerBuilder) -> Result<LockManagerBuilder, Error> {
        let tls = Tls::from_files(
            self.cacert.as_deref(),
            self.cert.as_deref(),
            self.key.as_deref(),
        )?;
        builder = builder.tls(tls.insecure(self.insecure));
        if let Some(user) = &self.user {
            builder = builder.username(user);
        }
        if let Some(password) = self.password()? {
            builder = builder.password(password);
        }
        // Sentinels with a password of their own (environment only, like every secret here).
        let sentinel = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let (user, password) = (
            sentinel("DLOCK_SENTINEL_USER"),
            sentinel("DLOCK_SENTINEL_PASSWORD"),
        );
        if user.is_some() || password.is_some() {
            builder = builder.sentinel_credentials(user, password);
        }
        Ok(builder)
    }

    fn password(&self) -> Result<Option<String>, Error> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::InvalidArgument(format!("cannot read {}: {e}", path.display()))
            })?;
            let first = text.lines().next().unwrap_or_default();
            if first.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{}: the first line (the password) is empty",
                    path.display()
                )));
            }
            return Ok(Some(first.to_string()));
        }
        Ok(std::env::var("DLOCK_PASSWORD")
            .ok()
            .filter(|p| !p.is_empty()))
    }
}
