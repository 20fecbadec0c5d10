#!/usr/bin/env bash
# Runs the Java harness (built by `mvn package` in bench/java): run.sh SUBJECT --nodes ... --scenario ...
# (Main.java says the arguments). A small heap and the defaults otherwise.
here=$(cd "$(dirname "$0")" && pwd)
exec java -Xmx512m -XX:+UseSerialGC -cp "$here/target/classes:$here/target/lib/*" dev.dlock.bench.Main "$@"
