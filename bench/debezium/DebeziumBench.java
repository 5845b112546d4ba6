// Times Debezium's embedded engine on a benchmark's workload: every record is serialized by
// Kafka Connect's JsonConverter (schemas on unless bench.schemas.enable=false, as cdc's run) and written to a
// buffered file, as a sink would; the run ends after COUNT records of TOPIC.
//
//   java -cp 'lib/*:classes' DebeziumBench CONNECTOR.properties OUT TOPIC COUNT [READY]
//
// READY (a path), when given, is created once the connector's streaming metrics say it is
// connected: a workload written after it is streamed (MySQL/MariaDB start at the binlog's end).
// Prints one JSON line: {"count", "first_ms", "last_ms", "started_ms"} (epoch milliseconds), so
// the caller can give the rate from the first record to the last (the JVM's start-up left out).
// Exit status 0 when COUNT records came, 2 when the connector failed, 3 on a time-out (600 s).

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.FileReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

public class DebeziumBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: DebeziumBench CONNECTOR.properties OUT TOPIC COUNT [READY]");
            System.exit(64);
        }
        Properties props = new Properties();
        try (FileReader reader = new FileReader(args[0])) {
            props.load(reader);
        }
        String topic = args[2];
        long target = Long.parseLong(args[3]);
        // bench.schemas.enable=false: as cdc's --no-schemas runs (the connector ignores the property)
        String schemas = props.getProperty("bench.schemas.enable", "true");
        JsonConverter keys = new JsonConverter();
        keys.configure(Map.of("schemas.enable", schemas), true);
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", schemas), false);
        BufferedOutputStream out = new BufferedOutputStream(new FileOutputStream(args[1]), 1 << 20);
        AtomicLong count = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long started = System.currentTimeMillis();

        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine
            .create(ChangeEventFormat.of(io.debezium.embedded.Connect.class))
            .using(props)
            .notifying(event -> {
                SourceRecord record = event.record();
                try {
                    byte[] key = keys.fromConnectData(record.topic(), record.keySchema(), record.key());
                    byte[] value = values.fromConnectData(record.topic(), record.valueSchema(), record.value());
                    synchronized (out) {
                        out.write(("{\"topic\":\"" + record.topic() + "\",\"key\":").getBytes(StandardCharsets.UTF_8));
                        out.write(key == null ? "null".getBytes(StandardCharsets.UTF_8) : key);
                        out.write(",\"value\":".getBytes(StandardCharsets.UTF_8));
                        out.write(value == null ? "null".getBytes(StandardCharsets.UTF_8) : value);
                        out.write("}\n".getBytes(StandardCharsets.UTF_8));
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
                if (topic.equals(record.topic())) {
                    long now = System.currentTimeMillis();
                    first.compareAndSet(0, now);
                    last.set(now);
                    count.incrementAndGet();
                }
            })
            .using((success, message, error) -> {
                if (!success) {
                    failure.compareAndSet(null, error != null ? error : new RuntimeException(message));
                }
            })
            .build();

        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        long deadline = System.currentTimeMillis() + 600_000;
        int status = 0;
        boolean announced = args.length < 5;
        while (count.get() < target) {
            Thread.sleep(20);
            if (!announced && DebeziumRunner.streamingConnected()) {
                Thread.sleep(500);  // the binlog client settles
                Files.writeString(Path.of(args[4]), "ready\n");
                announced = true;
            }
            if (failure.get() != null) {
                failure.get().printStackTrace();
                status = 2;
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                System.err.println("timed out after " + count.get() + " records");
                status = 3;
                break;
            }
        }
        System.out.println("{\"count\":" + count.get() + ",\"first_ms\":" + first.get() + ",\"last_ms\":" + last.get()
                           + ",\"started_ms\":" + started + "}");
        System.out.flush();
        engine.close();
        executor.shutdown();
        executor.awaitTermination(30, TimeUnit.SECONDS);
        synchronized (out) {
            out.close();
        }
        System.exit(status);
    }
}
