//! Guarded writes: a command sent to the data's Redis wrapped in `DLOCK.GUARD gate token ...`,
//! so the data refuses it once a newer holder has written (docs/fencing.md). A `STALE` reply
//! marks the lock lost: a newer holder exists, whatever the lease says.

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, FromRedisValue};
use tokio_util::sync::CancellationToken;

use crate::errors::Error;
use crate::lock::{LockContext, LockGuard};

/// `DLOCK.GUARD gate token <cmd's arguments>`.
fn wrapped(gate: &str, token: u64, cmd: &Cmd) -> Cmd {
    let mut guarded = redis::cmd("DLOCK.GUARD");
    guarded.arg(gate).arg(token);
    for arg in cmd.args_iter() {
        if let Arg::Simple(bytes) = arg {
            guarded.arg(bytes);
        }
    }
    guarded
}

/// Runs `cmd` through `gate` under `token`; a `STALE` reply cancels `lost`.
async fn run<T: FromRedisValue>(
    conn: &mut impl ConnectionLike,
    (gate, token, resource): (&str, u64, &str),
    cmd: &Cmd,
    lost: &CancellationToken,
) -> Result<T, Error> {
    if lost.is_cancelled() {
        // Known lost (a failed extension, an earlier STALE): not even a first write may go.
        return Err(Error::LockLost {
            resource: resource.to_string(),
        });
    }
    match wrapped(gate, token, cmd).query_async(conn).await {
        Ok(reply) => Ok(reply),
        Err(e) if e.code() == Some("STALE") => {
            lost.cancel();
            Err(Error::Stale {
                resource: resource.to_string(),
                gate: gate.to_string(),
                token,
            })
        }
        Err(e) => Err(Error::Guarded {
            resource: resource.to_string(),
            gate: gate.to_string(),
            message: e.to_string(),
        }),
    }
}

impl LockGuard {
    /// Runs `cmd` on `conn` (the data's Redis, with the module) only if this lock's token is
    /// still current at `gate`, and raises the gate to it, in one step on that server. A newer
    /// holder's write at the gate makes it [`Error::Stale`] (nothing changed) and marks this
    /// lock lost ([`LockGuard::is_lost`], and a watchdog's [`LockContext::is_lost`]); a lock
    /// already known lost gets [`Error::LockLost`] and nothing is sent. Another error of that
    /// server's (the command's own, an ACL refusal, no module) is [`Error::Guarded`].
    ///
    /// ```no_run
    /// # async fn demo(guard: &dlock_client::LockGuard, data: &mut redis::aio::MultiplexedConnection)
    /// # -> Result<(), dlock_client::Error> {
    /// let _: () = guard.guarded(data, "report:gate", redis::cmd("SET").arg("report").arg("v1")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn guarded<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
        gate: &str,
        cmd: &Cmd,
    ) -> Result<T, Error> {
        let place = (gate, self.token().await?, self.resource());
        run(conn, place, cmd, self.lost_signal()).await
    }
}

impl LockContext {
    /// [`LockGuard::guarded`] for work running under a watchdog: a `STALE` reply fires the
    /// context's loss signal.
    pub async fn guarded<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
        gate: &str,
        cmd: &Cmd,
    ) -> Result<T, Error> {
        let place = (gate, self.token().await?, self.resource());
        run(conn, place, cmd, &self.cancellation_token()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_follows_the_gate_and_the_token() {
        let cmd = redis::cmd("SET").arg("k").arg(b"v\x00").clone();
        let packed = wrapped("g", 42, &cmd).get_packed_command();
        let expected = redis::cmd("DLOCK.GUARD")
            .arg("g")
            .arg(42u64)
            .arg("SET")
            .arg("k")
            .arg(b"v\x00")
            .get_packed_command();
        assert_eq!(packed, expected);
    }
}
