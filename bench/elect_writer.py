"""The work of a leader in `make bench-elect`'s pause test: writes `data` every 5 ms with its
epoch, through the gate (DLOCK.GUARD: refused once a newer epoch wrote) or after a check of its
own belief only (mode `check`, as client-go's elector: it is leading as long as it runs), and logs
`sent-ns replied-ns epoch ok|refused` per write (a write sent before a pause and answered after
it was made before the pause). usage: elect_writer.py gate|check PORT LOG PID_FILE"""
import os, socket, sys, time

from resp_util import command

mode, port, log, pid_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(pid_file, "w") as f:
    f.write(str(os.getpid()))
epoch = os.environ["DLOCK_EPOCH"]
server = socket.create_connection(("127.0.0.1", port))
with open(log, "a") as out:
    for i in range(1_000_000):
        value, sent = f"{epoch}:{i}", time.time_ns()
        if mode == "gate":
            reply = command(server, "DLOCK.GUARD", "gate", epoch, "SET", "data", value)
        else:
            reply = command(server, "SET", "data", value)
        verdict = "ok" if reply.startswith(b"+OK") else "refused"
        out.write(f"{sent} {time.time_ns()} {epoch} {verdict}\n")
        out.flush()
        time.sleep(0.005)
