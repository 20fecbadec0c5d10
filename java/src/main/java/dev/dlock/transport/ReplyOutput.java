package dev.dlock.transport;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Any reply as the seam's value (server.go's part that redigo's normalize does): a bulk or
 * status as String, an integer as Long, nil as null, an array as List, an error reply as a
 * {@link RedisError} in its place — the top one too, so that one command's error does not fail
 * its pipeline. RESP3's doubles and booleans (a server speaking it) come as Double and Boolean,
 * maps as flat lists; the transport speaks RESP2, where none occur.
 *
 * <p>The tree is built from the array headers' counts, not from the decoder's depth callbacks,
 * so it holds however the decoder reports nesting.
 */
final class ReplyOutput extends CommandOutput<String, String, Object> {
    /** An array being filled, and how many elements it takes. */
    private record Open(List<Object> list, int want) {}

    private final Deque<Open> open = new ArrayDeque<>();
    private boolean root;

    ReplyOutput() {
        super(StringCodec.UTF8, null);
    }

    private void add(Object value) {
        if (open.isEmpty()) {
            if (!root) {
                output = value;
                root = true;
            }
            return;
        }
        open.peek().list().add(value);
        while (!open.isEmpty() && open.peek().list().size() >= open.peek().want()) {
            open.pop();
        }
    }

    @Override
    public void set(ByteBuffer bytes) {
        add(bytes == null ? null : decodeString(bytes));
    }

    @Override
    public void setSingle(ByteBuffer bytes) {
        set(bytes);
    }

    @Override
    public void setBigNumber(ByteBuffer bytes) {
        set(bytes);
    }

    @Override
    public void set(long integer) {
        add(integer);
    }

    @Override
    public void set(double number) {
        add(number);
    }

    @Override
    public void set(boolean value) {
        add(value);
    }

    @Override
    public void setError(ByteBuffer bytes) {
        add(new RedisError(decodeString(bytes)));
    }

    @Override
    public void setError(String text) {
        add(new RedisError(text));
    }

    @Override
    public void multi(int count) {
        if (count < 0) {
            add(null); // a nil array
            return;
        }
        List<Object> list = new ArrayList<>(count);
        add(list);
        if (count > 0) {
            open.push(new Open(list, count));
        }
    }

    @Override
    public void multiMap(int count) {
        multi(count < 0 ? count : count * 2);
    }
}
