package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;

/**
 * The shared conformance table (conformance/*.json, format in conformance/README.md), read as
 * the Go suite reads it (go/conformance_test.go): every case of a file becomes one dynamic test
 * named after the case, so a failure names it.
 */
final class Tables {
  static final ObjectMapper JSON = new ObjectMapper();

  private Tables() {}

  /** Every case of a file; Maven runs the tests in java/, the table is beside it. */
  static List<JsonNode> cases(String file) {
    Path path = Path.of("..", "conformance", file);
    try {
      JsonNode root = JSON.readTree(Files.readString(path));
      JsonNode cases = root.get("cases");
      assertTrue(cases != null && cases.isArray() && cases.size() > 0, file + " has no cases");
      List<JsonNode> out = new ArrayList<>();
      cases.forEach(out::add);
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(path.toAbsolutePath().toString(), e);
    }
  }

  /** One dynamic test per case of {@code file}, run by {@code check}. */
  static Stream<DynamicTest> each(String file, Consumer<JsonNode> check) {
    List<JsonNode> cases = cases(file);
    return IntStream.range(0, cases.size()).mapToObj(i -> {
      JsonNode c = cases.get(i);
      return DynamicTest.dynamicTest(file + " #" + i + ": " + label(c), () -> check.accept(c));
    });
  }

  /** A case's name, its "why", or its JSON. */
  static String label(JsonNode c) {
    if (c.hasNonNull("name")) {
      return c.get("name").asText();
    }
    if (c.hasNonNull("why")) {
      return c.get("why").asText();
    }
    return c.toString();
  }

  /** A token: a decimal string, unsigned 64 bits. */
  static long token(JsonNode v) {
    assertTrue(v.isTextual(), "a token is a decimal string: " + v);
    return Long.parseUnsignedLong(v.asText());
  }

  static List<Integer> ints(JsonNode v) {
    List<Integer> out = new ArrayList<>();
    v.forEach(n -> out.add(n.asInt()));
    return out;
  }

  static List<String> strings(JsonNode v) {
    List<String> out = new ArrayList<>();
    v.forEach(n -> out.add(n.asText()));
    return out;
  }

  static ArrayNode array(List<Integer> ns) {
    ArrayNode a = JSON.createArrayNode();
    ns.forEach(a::add);
    return a;
  }

  /** A boolean field, or its default when absent. */
  static boolean flag(JsonNode c, String field, boolean otherwise) {
    JsonNode v = c.get(field);
    return v == null || v.isNull() ? otherwise : v.asBoolean();
  }

  /** A list field, [] when absent. */
  static JsonNode listOrEmpty(JsonNode c, String field) {
    JsonNode v = c.get(field);
    return v == null || v.isNull() ? JSON.createArrayNode() : v;
  }

  /**
   * The same JSON, with both shown when not. Numbers compare by value: the table's are int
   * nodes, a {@code long} put is a long node.
   */
  static void same(JsonNode want, JsonNode got, String what) {
    Comparator<JsonNode> numbers = (a, b) -> a.isNumber() && b.isNumber()
        ? a.decimalValue().compareTo(b.decimalValue())
        : (a.equals(b) ? 0 : 1);
    assertTrue(want.equals(numbers, got), () -> what + "\n want " + want + "\n got  " + got);
  }
}
