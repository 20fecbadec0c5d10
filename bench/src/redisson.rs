//! Redisson's lock, as Redisson sends it: the hash-based reentrant lock's scripts, for
//! `make bench-capacity`'s server CPU per cycle. (`make bench-multi` and `make bench-java` run
//! Redisson itself, through the Java harness in bench/java.)

/// Redisson's `RedissonLock.tryLockInnerAsync` (3.x and 4.x master, 2026-08), verbatim.
pub const LOCK: &str = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
/// Redisson's `RedissonLock.unlockInnerAsync` since 3.24.0 (the unlock latch, #4871), verbatim.
pub const UNLOCK: &str = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ";
/// Redisson's `RedissonLock.unlockInnerAsync` up to 3.23.5, verbatim.
pub const UNLOCK_3_23: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1; end; return nil;";
