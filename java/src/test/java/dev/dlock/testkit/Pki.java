package dev.dlock.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, made with the
 * openssl CLI in a temp dir (as the Go, Node and Python suites make theirs).
 */
public record Pki(Path dir, Path ca, Path serverCert, Path serverKey, Path clientCert, Path clientKey) {
    /** Makes the files. */
    public static Pki make() {
        try {
            Path dir = Files.createTempDirectory("dlock-java-pki-");
            List<String> key = List.of("-newkey", "rsa:2048", "-nodes");
            openssl(dir, concat(List.of("req", "-x509"), key, List.of("-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
                    "-subj", "/CN=dlock java test ca")));
            Files.writeString(dir.resolve("server.ext"), "subjectAltName=IP:127.0.0.1\n");
            for (String name : List.of("server", "client")) {
                openssl(dir, concat(List.of("req"), key, List.of("-keyout", name + ".key", "-out", name + ".csr",
                        "-subj", "/CN=dlock java test " + name)));
                List<String> args = new ArrayList<>(List.of("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey",
                        "ca.key", "-CAcreateserial", "-days", "1", "-out", name + ".crt"));
                if (name.equals("server")) {
                    args.addAll(List.of("-extfile", "server.ext"));
                }
                openssl(dir, args);
            }
            return new Pki(dir, dir.resolve("ca.crt"), dir.resolve("server.crt"), dir.resolve("server.key"),
                    dir.resolve("client.crt"), dir.resolve("client.key"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @SafeVarargs
    private static List<String> concat(List<String>... parts) {
        List<String> out = new ArrayList<>();
        for (List<String> p : parts) {
            out.addAll(p);
        }
        return out;
    }

    private static void openssl(Path dir, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        try {
            if (p.waitFor() != 0) {
                throw new IllegalStateException("openssl " + args + ": " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A TLS-only module server; clientCerts: it asks for a client certificate. */
    public RedisProcess.Flavour flavour(boolean clientCerts) {
        return new RedisProcess.Flavour(true,
                List.of("--tls-cert-file", serverCert.toString(), "--tls-key-file", serverKey.toString(),
                        "--tls-ca-cert-file", ca.toString(), "--tls-auth-clients", clientCerts ? "yes" : "no"),
                List.of("--tls", "--cacert", ca.toString(), "--cert", clientCert.toString(), "--key", clientKey.toString()),
                true);
    }

    /** Removes the files. */
    public void remove() {
        RedisProcess.run(List.of("rm", "-rf", dir.toString()));
    }
}
