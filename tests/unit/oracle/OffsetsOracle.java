import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.storage.FileOffsetBackingStore;

/** test_connect_offsets.py's oracle: Kafka Connect's own FileOffsetBackingStore.
 *  {@code write FILE K V [K V...]} sets those entries (as Debezium's worker saves offsets);
 *  {@code read FILE K [K...]} prints each key's value as Connect reads it back ("null" when absent). */
public class OffsetsOracle {
    public static void main(String[] args) throws Exception {
        JsonConverter keys = new JsonConverter();
        keys.configure(Map.of("schemas.enable", "false"), true);
        FileOffsetBackingStore store = new FileOffsetBackingStore(keys);
        store.configure(new StandaloneConfig(Map.of(
                "offset.storage.file.filename", args[1], "bootstrap.servers", "localhost:9",
                "key.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter", "org.apache.kafka.connect.json.JsonConverter")));
        store.start();
        if (args[0].equals("write")) {
            Map<ByteBuffer, ByteBuffer> entries = new HashMap<>();
            for (int i = 2; i < args.length; i += 2)
                entries.put(bytes(args[i]), bytes(args[i + 1]));
            store.set(entries, null).get();
        } else {
            List<ByteBuffer> wanted = new ArrayList<>();
            for (int i = 2; i < args.length; i++) wanted.add(bytes(args[i]));
            Map<ByteBuffer, ByteBuffer> found = store.get(wanted).get();
            for (ByteBuffer key : wanted) {
                ByteBuffer value = found.get(key);
                System.out.println(value == null ? "null" : StandardCharsets.UTF_8.decode(value.duplicate()).toString());
            }
        }
        store.stop();
    }

    static ByteBuffer bytes(String text) { return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)); }
}
