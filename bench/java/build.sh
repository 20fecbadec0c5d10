#!/usr/bin/env bash
# Builds the Java harness (bench/java) for `make bench`, `make bench-java` and `make bench-multi`:
# dlock's Java client installed into the local Maven repository from java/ (its tests skipped:
# `make java-test` runs them), then `mvn package` here (Redisson 3.52.0 and the rest into
# target/lib). Offline (-o) first, online when offline mode lacks something (the first build).
# Fails with a notice when Maven or a JDK is missing: the Java contenders are then skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 \
  || { echo "bench: mvn or java missing (Maven and a JDK 17+): Redisson and dlock (java) skipped" >&2; exit 1; }
mvn_offline_first() {
  local log; log=$(mktemp)
  mvn -B -q -o "$@" >"$log" 2>&1; local rc=$?
  if [ $rc -ne 0 ] && grep -q "offline mode" "$log"; then
    mvn -B -q "$@" >"$log" 2>&1; rc=$?
  fi
  [ $rc -eq 0 ] || cat "$log" >&2
  rm -f "$log"; return $rc
}
mvn_offline_first install -DskipTests -f "$here/../../java/pom.xml" \
  || { echo "bench: installing java/ into the local Maven repository failed: dlock (java) skipped" >&2; }
# Compiled afresh: DlockSubject.class must not outlive a client without LockManager.
rm -rf "$here/target/classes"
mvn_offline_first package -f "$here/pom.xml" \
  || { echo "bench: building bench/java failed: Redisson and dlock (java) skipped" >&2; exit 1; }
