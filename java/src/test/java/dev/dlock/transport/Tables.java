package dev.dlock.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The conformance tables every client runs (../conformance/*.json from java/). */
final class Tables {
    private Tables() {}

    static List<JsonNode> cases(String table) {
        try {
            JsonNode root = new ObjectMapper().readTree(Path.of("..", "conformance", table + ".json").toFile());
            List<JsonNode> out = new ArrayList<>();
            root.get("cases").forEach(out::add);
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
