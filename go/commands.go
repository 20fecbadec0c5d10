package dlock

import (
	"strconv"
	"time"
)

// Every DLOCK.* command the client sends, built here and nowhere else (client/src/commands.rs,
// node/src/commands.ts). Durations are whole milliseconds.

func ms(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// cmdAcquire is `DLOCK.ACQUIRE resource owner ttl [REENTRANT] [kind]`: a token, or nil when
// held by another owner.
func cmdAcquire(resource, owner string, ttl time.Duration, kind Kind, reentrant bool) []string {
	args := []string{"DLOCK.ACQUIRE", resource, owner, ms(ttl)}
	if reentrant {
		args = append(args, "REENTRANT")
	}
	return append(args, kind.args()...)
}

// cmdWait is `DLOCK.ACQUIRE resource owner ttl WAIT timeout [TICKET t] [kind]`: a token, or nil
// when the wait ended without a grant. It blocks its connection on the node.
func cmdWait(resource, owner string, ttl, timeout time.Duration, ticket uint64, kind Kind) []string {
	args := []string{"DLOCK.ACQUIRE", resource, owner, ms(ttl), "WAIT", ms(timeout)}
	if ticket != 0 {
		args = append(args, "TICKET", strconv.FormatUint(ticket, 10))
	}
	return append(args, kind.args()...)
}

// cmdFence is `DLOCK.FENCE resource owner token [PX ttl]`: 1 committed, 0 not held. ttl 0: no PX.
func cmdFence(resource, owner string, token uint64, ttl time.Duration) []string {
	args := []string{"DLOCK.FENCE", resource, owner, strconv.FormatUint(token, 10)}
	if ttl > 0 {
		args = append(args, "PX", ms(ttl))
	}
	return args
}

// cmdExtend is `DLOCK.EXTEND resource owner ttl`: 1 extended, 0 not held.
func cmdExtend(resource, owner string, ttl time.Duration) []string {
	return []string{"DLOCK.EXTEND", resource, owner, ms(ttl)}
}

// cmdRelease is `DLOCK.RELEASE resource owner`: 1 released (one hold), 0 not held.
func cmdRelease(resource, owner string) []string {
	return []string{"DLOCK.RELEASE", resource, owner}
}

// cmdProclaim is `DLOCK.PROCLAIM resource owner token new-owner`: 1 when owner held the plain
// lock with token (new-owner holds it now, same token and lease), 0 when not.
func cmdProclaim(resource, owner string, token uint64, newOwner string) []string {
	return []string{"DLOCK.PROCLAIM", resource, owner, strconv.FormatUint(token, 10), newOwner}
}

// cmdStatus is `DLOCK.STATUS resource`: nil when free, else the holder's fields in pairs.
func cmdStatus(resource string) []string {
	return []string{"DLOCK.STATUS", resource}
}

// cmdObserve is `DLOCK.OBSERVE resource [AFTER token OWNER owner] TIMEOUT ms`: the plain lock's
// holder (nil when free), at once when it differs from after (nil: at once), else when it
// changes, its lease ends, or at the timeout. It blocks its connection on the node.
func cmdObserve(resource string, after *seen, timeout time.Duration) []string {
	args := []string{"DLOCK.OBSERVE", resource}
	if after != nil {
		args = append(args, "AFTER", strconv.FormatUint(after.token, 10), "OWNER", after.owner)
	}
	return append(args, "TIMEOUT", ms(timeout))
}

// The commands of a set (several keys all or nothing, one token: docs/commands.md): `numkeys
// key...` where a single lock names its resource; modes "" is every key exclusive.

func setArgs(name string, keys []string) []string {
	return append([]string{name, strconv.Itoa(len(keys))}, keys...)
}

// cmdAcquireAll is `DLOCK.ACQUIREALL numkeys key... owner ttl [MODES m] [WAIT timeout [TICKET
// t]]`: the set's token, or nil when not every key is available (with wait, when the wait ended
// without a grant; it blocks its connection on the node).
func cmdAcquireAll(keys []string, modes, owner string, ttl time.Duration, wait *queued) []string {
	args := append(setArgs("DLOCK.ACQUIREALL", keys), owner, ms(ttl))
	if modes != "" {
		args = append(args, "MODES", modes)
	}
	if wait != nil {
		args = append(args, "WAIT", ms(wait.timeout))
		if wait.ticket != 0 {
			args = append(args, "TICKET", strconv.FormatUint(wait.ticket, 10))
		}
	}
	return args
}

// cmdReleaseAll is `DLOCK.RELEASEALL numkeys key... owner`: how many of the keys owner held (its
// queued wait withdrawn too).
func cmdReleaseAll(keys []string, owner string) []string {
	return append(setArgs("DLOCK.RELEASEALL", keys), owner)
}

// cmdExtendAll is `DLOCK.EXTENDALL numkeys key... owner ttl`: 1 extended, 0 not held whole (the
// node gives back what is left).
func cmdExtendAll(keys []string, owner string, ttl time.Duration) []string {
	return append(setArgs("DLOCK.EXTENDALL", keys), owner, ms(ttl))
}

// cmdFenceAll is `DLOCK.FENCEALL numkeys key... owner token [PX ttl]`: 1 committed on every
// key, 0 not held whole. ttl 0: no PX.
func cmdFenceAll(keys []string, owner string, token uint64, ttl time.Duration) []string {
	args := append(setArgs("DLOCK.FENCEALL", keys), owner, strconv.FormatUint(token, 10))
	if ttl > 0 {
		args = append(args, "PX", ms(ttl))
	}
	return args
}
