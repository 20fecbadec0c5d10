package dev.dlock.testkit;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * One real redis-server process with the freshly built module for the Java tests (the twin of
 * go/internal/servers): a free port, a temp dir, killed on {@link #close()} and, should a test
 * run die, by a JVM shutdown hook. DLOCK_MODULE and DLOCK_REDIS_SERVER override where things are.
 */
public final class RedisProcess implements AutoCloseable {
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
    }

    /** How a server listens and how the harness's own redis-cli reaches it. */
    public record Flavour(boolean tlsOnly, List<String> args, List<String> cliArgs, boolean module) {
        /** A plain server with the module. */
        public static Flavour plain(String... args) {
            return new Flavour(false, List.of(args), List.of(), true);
        }
    }

    public final int port;
    public final Path dir;
    public final Flavour flavour;
    private Process process;

    private RedisProcess(int port, Path dir, Flavour flavour) {
        this.port = port;
        this.dir = dir;
        this.flavour = flavour;
    }

    /** @return the dlock module to load */
    public static Path module() {
        String env = System.getenv("DLOCK_MODULE");
        return env != null && !env.isEmpty() ? Path.of(env) : Path.of("..", "target", "release", "libdlock.so").toAbsolutePath().normalize();
    }

    static String binary() {
        String env = System.getenv("DLOCK_REDIS_SERVER");
        return env != null && !env.isEmpty() ? env : "redis-server";
    }

    /** @return a TCP port nothing listens on now */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Starts a server on a free port and waits until it answers. */
    public static RedisProcess start(Flavour f) {
        return start(f, freePort());
    }

    /** Starts a server on port and waits until it answers (tries other ports if it loses a race). */
    public static RedisProcess start(Flavour f, int port) {
        if (f.module() && !Files.exists(module())) {
            throw new IllegalStateException(module() + " is missing: run `make build` (or set DLOCK_MODULE)");
        }
        try {
            RedisProcess s = new RedisProcess(port, Files.createTempDirectory("dlock-java-"), f);
            s.spawn(null);
            s.awaitReady();
            return s;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Starts redis-server with a config file (a sentinel), without the module. */
    public static RedisProcess startConfig(int port, Path dir, List<String> lines, List<String> cliArgs, boolean sentinel) {
        RedisProcess s = new RedisProcess(port, dir, new Flavour(false, List.of(), cliArgs, false));
        try {
            Path conf = dir.resolve(sentinel ? "sentinel.conf" : "redis.conf");
            Files.write(conf, lines, StandardCharsets.UTF_8);
            s.spawn(sentinel ? List.of(conf.toString(), "--sentinel") : List.of(conf.toString()));
            s.awaitReady();
            return s;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private void spawn(List<String> given) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary());
        if (given != null) {
            cmd.addAll(given);
        } else {
            cmd.addAll(flavour.tlsOnly() ? List.of("--port", "0", "--tls-port", "" + port) : List.of("--port", "" + port));
            cmd.addAll(List.of("--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                    "--logfile", "redis.log"));
            cmd.addAll(flavour.args());
            if (flavour.module()) {
                cmd.addAll(List.of("--loadmodule", module().toString()));
            }
        }
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
        LIVE.add(process);
    }

    private void awaitReady() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (cli("INFO", "server").contains("process_id:" + process.pid())) {
                return;
            }
            sleep(50);
        }
        throw new IllegalStateException("redis-server on " + port + " would not start (see " + dir + "/redis.log)");
    }

    /** @return redis://127.0.0.1:port */
    /** Sends the server a signal ("STOP" freezes it, "CONT" thaws it), as the Go and Rust tests do. */
    public void signal(String name) {
        run(List.of("kill", "-" + name, Long.toString(process.pid())));
    }

    public String url() {
        return (flavour.tlsOnly() ? "rediss" : "redis") + "://127.0.0.1:" + port;
    }

    /** Runs redis-cli against this server (its stdout and stderr). */
    public String cli(String... args) {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", "" + port));
        cmd.addAll(flavour.cliArgs());
        cmd.addAll(List.of(args));
        return run(cmd);
    }

    /** Runs a command to its end: its output. */
    public static String run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(30, TimeUnit.SECONDS);
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(String.join(" ", cmd), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Kills the process and removes its directory. */
    @Override
    public void close() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            LIVE.remove(process);
        }
        run(List.of("rm", "-rf", dir.toString()));
    }
}
