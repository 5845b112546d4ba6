import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.apicurio.registry.utils.converter.avro.AvroData;
import io.apicurio.registry.utils.converter.avro.AvroDataConfig;
import io.debezium.converters.CloudEventsConverter;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** test_converters_oracle.py's oracle: each stdin line {"kind", "props", "records"} becomes one
 *  stdout line {"out": [...]}, one entry per record side (key, then value): for kind "avro" the Avro
 *  schema Apicurio's fork of Confluent's AvroData derives and the datum's binary encoding (base64);
 *  for kind "cloudevents" what Debezium's CloudEventsConverter writes for the value; for kind
 *  "simpleheader" what Kafka Connect's default header converter writes for the key, the value and each
 *  header (in the record's order) read as Connect data. */
public class ConverterOracle {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        JsonConverter keys = new JsonConverter(); keys.configure(Map.of("schemas.enable", "true"), true);
        JsonConverter values = new JsonConverter(); values.configure(Map.of("schemas.enable", "true", "replace.null.with.default", "false"), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode result = JSON.createObjectNode();
            JsonNode req = JSON.readTree(line);
            Map<String, Object> props = new HashMap<>();
            req.get("props").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
            String kind = req.get("kind").asText();
            ArrayNode out = JSON.createArrayNode();
            AvroData avro = kind.equals("avro") ? new AvroData(new AvroDataConfig(props)) : null;
            CloudEventsConverter ce = null;
            if (kind.equals("cloudevents")) { ce = new CloudEventsConverter(); ce.configure(props, false); }
            for (JsonNode r : req.get("records")) {
                String topic = r.get("topic").asText();
                if (kind.equals("simpleheader")) {
                    simpleHeaders(topic, r, keys, values, out);
                    continue;
                }
                for (String side : List.of("key", "value")) {
                    JsonNode part = r.get(side);
                    ObjectNode o = JSON.createObjectNode();
                    try {
                        JsonConverter conv = side.equals("key") ? keys : values;
                        SchemaAndValue sv = conv.toConnectData(topic, part == null || part.isNull() ? null : JSON.writeValueAsBytes(part));
                        if (kind.equals("avro")) {
                            if (sv.schema() == null || sv.value() == null) { out.addNull(); continue; }
                            org.apache.avro.Schema schema = avro.fromConnectSchema(sv.schema());
                            Object datum = avro.fromConnectData(sv.schema(), sv.value());
                            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                            BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(bytes, null);
                            new GenericDatumWriter<Object>(schema).write(datum, encoder);
                            encoder.flush();
                            o.put("schema", schema.toString());
                            o.put("datum", Base64.getEncoder().encodeToString(bytes.toByteArray()));
                        } else {
                            if (side.equals("key")) continue;
                            byte[] b = ce.fromConnectData(topic, sv.schema(), sv.value());
                            if (b == null) { out.addNull(); continue; }
                            o.put("text", new String(b, StandardCharsets.UTF_8));
                        }
                    } catch (Exception e) {
                        o.put("error", e.getClass().getName() + ": " + e.getMessage());
                    }
                    out.add(o);
                }
            }
            result.set("out", out);
            System.out.println(JSON.writeValueAsString(result));
            System.out.flush();
        }
    }

    /** Key, value, then each header of one record through SimpleHeaderConverter: its text, or null. */
    static void simpleHeaders(String topic, JsonNode r, JsonConverter keys, JsonConverter values, ArrayNode out)
            throws Exception {
        SimpleHeaderConverter simple = new SimpleHeaderConverter();
        simple.configure(Map.of());
        List<SchemaAndValue> parts = new ArrayList<>();
        for (String side : List.of("key", "value")) {
            JsonNode part = r.get(side);
            parts.add((side.equals("key") ? keys : values).toConnectData(topic,
                    part == null || part.isNull() ? null : JSON.writeValueAsBytes(part)));
        }
        JsonNode headers = r.get("headers");
        if (headers != null && !headers.isNull()) {
            Iterator<Map.Entry<String, JsonNode>> it = headers.fields();
            while (it.hasNext()) parts.add(keys.toConnectData(topic, JSON.writeValueAsBytes(it.next().getValue())));
        }
        for (SchemaAndValue sv : parts) {
            try {
                byte[] b = simple.fromConnectHeader(topic, "h", sv.schema(), sv.value());
                if (b == null) out.addNull(); else out.add(new String(b, StandardCharsets.UTF_8));
            } catch (Exception e) {
                out.add(JSON.createObjectNode().put("error", e.getClass().getName() + ": " + e.getMessage()));
            }
        }
    }
}
