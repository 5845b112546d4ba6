// Runs one Debezium connector in its embedded engine and writes every record it emits as one JSON
// line {topic, key, value, headers}, each part serialized by Kafka Connect's JsonConverter with
// schemas on: the same shape as cdc's file sink, so the two can be compared field for field.
//
//   java -cp 'lib/*:classes' DebeziumRunner CONNECTOR.properties OUT.jsonl READY DONE [IDLE_MS]
//
// READY is created once the connector's streaming metrics say it is connected (the workload may
// start); after DONE appears, the engine stops when no record has come for IDLE_MS (default 3000).
// Exit status 0 on a clean stop, 2 when the connector failed, 3 on a time-out.

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.embedded.Connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.BufferedWriter;
import java.io.FileReader;
import java.io.FileWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.MBeanServer;
import javax.management.ObjectName;

public class DebeziumRunner {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: DebeziumRunner CONNECTOR.properties OUT.jsonl READY DONE [IDLE_MS]");
            System.exit(64);
        }
        Properties props = new Properties();
        try (FileReader reader = new FileReader(args[0])) {
            props.load(reader);
        }
        Path ready = Path.of(args[2]);
        Path done = Path.of(args[3]);
        long idleMs = args.length > 4 ? Long.parseLong(args[4]) : 3000;

        JsonConverter keys = converter("key");
        JsonConverter values = converter("value");
        JsonConverter headers = new JsonConverter();
        headers.configure(Map.of("schemas.enable", "true", "converter.type", "header"));

        AtomicLong lastRecord = new AtomicLong(System.currentTimeMillis());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        BufferedWriter out = new BufferedWriter(new FileWriter(args[1]));

        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine
            .create(ChangeEventFormat.of(Connect.class))
            .using(props)
            .notifying(event -> {
                SourceRecord record = event.record();
                try {
                    ObjectNode line = JSON.createObjectNode();
                    line.put("topic", record.topic());
                    line.set("key", parse(keys.fromConnectData(record.topic(), record.keySchema(), record.key())));
                    line.set("value", parse(values.fromConnectData(record.topic(), record.valueSchema(), record.value())));
                    ObjectNode hs = JSON.createObjectNode();
                    for (Header h : record.headers()) {
                        hs.set(h.key(), parse(headers.fromConnectHeader(record.topic(), h.key(), h.schema(), h.value())));
                    }
                    line.set("headers", hs.isEmpty() ? null : hs);
                    synchronized (out) {
                        out.write(JSON.writeValueAsString(line));
                        out.write('\n');
                        out.flush();
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
                lastRecord.set(System.currentTimeMillis());
            })
            .using((success, message, error) -> {
                if (!success) {
                    failure.compareAndSet(null, error != null ? error : new RuntimeException(message));
                }
            })
            .build();

        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        long deadline = System.currentTimeMillis() + 300_000;
        boolean announced = false;
        int status = 0;
        while (true) {
            Thread.sleep(100);
            if (failure.get() != null) {
                failure.get().printStackTrace();
                status = 2;
                break;
            }
            if (!announced && streamingConnected()) {
                Thread.sleep(500);  // the binlog client / replication stream settles
                Files.writeString(ready, "ready\n");
                announced = true;
            }
            if (announced && Files.exists(done) && System.currentTimeMillis() - lastRecord.get() > idleMs) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                System.err.println("timed out");
                status = 3;
                break;
            }
        }
        engine.close();
        executor.shutdown();
        executor.awaitTermination(30, TimeUnit.SECONDS);
        synchronized (out) {
            out.close();
        }
        System.exit(status);
    }

    private static JsonConverter converter(String type) {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "true"), type.equals("key"));
        return converter;
    }

    private static JsonNode parse(byte[] bytes) throws Exception {
        return bytes == null ? null : JSON.readTree(bytes);
    }

    /** True once a connector's streaming metrics MBean reports Connected (bench/debezium uses it too). */
    static boolean streamingConnected() {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            Set<ObjectName> names = server.queryNames(new ObjectName("debezium.*:type=connector-metrics,context=streaming,*"), null);
            for (ObjectName name : names) {
                Object connected = server.getAttribute(name, "Connected");
                if (Boolean.TRUE.equals(connected)) {
                    return true;
                }
            }
        } catch (Exception e) {
            // not registered yet
        }
        return false;
    }
}
