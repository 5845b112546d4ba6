import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** A Kafka Connect consumer of cdc's records (tests/conformance/connect_reader.py): each stdin line is
 *  {"header_converter", "records": [{topic, key, value, headers}]} with key, value and header values as
 *  the text cdc wrote; each stdout line lists the problems found, one per record part: what Connect's
 *  JsonConverter (key, value) and the header converter say reading it into Connect data (a value that
 *  does not fit its schema is a DataException), and whether writing that data back gives the same JSON. */
public class ConnectReader {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Set<String> NON_FINITE = Set.of("NaN", "Infinity", "-Infinity");
    /** Numbers compared by value (Jackson prints 1.0E10 where orjson prints 10000000000.0), a float's
     *  digits as the same 32-bit float (Java 17 prints 1.17549435E-38 for 1.1754944E-38); and the
     *  strings Debezium writes for a non-finite double, which JsonConverter reads back as 0.0 (a
     *  limit of Connect's, the same for Debezium's records). */
    static final Comparator<JsonNode> NUMBERS = (a, b) -> {
        if (a.equals(b)) return 0;
        if (a.isNumber() && b.isNumber())
            return a.decimalValue().compareTo(b.decimalValue()) == 0 || a.floatValue() == b.floatValue() ? 0 : 1;
        if (a.isTextual() && NON_FINITE.contains(a.asText()) && b.isNumber() && b.doubleValue() == 0.0) return 0;
        if (b.isTextual() && NON_FINITE.contains(b.asText()) && a.isNumber() && a.doubleValue() == 0.0) return 0;
        return 1;
    };

    public static void main(String[] args) throws Exception {
        JsonConverter keys = new JsonConverter(); keys.configure(Map.of("schemas.enable", "true"), true);
        JsonConverter values = new JsonConverter();
        values.configure(Map.of("schemas.enable", "true", "replace.null.with.default", "false"), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode req = JSON.readTree(line);
            boolean jsonHeaders = req.get("header_converter").asText().endsWith("JsonConverter");
            JsonConverter jsonHeader = new JsonConverter();
            jsonHeader.configure(Map.of("schemas.enable", "true", "converter.type", "header"));
            SimpleHeaderConverter simpleHeader = new SimpleHeaderConverter();
            simpleHeader.configure(Map.of());
            ArrayNode problems = JSON.createArrayNode();
            int index = 0;
            for (JsonNode r : req.get("records")) {
                String topic = r.get("topic").asText();
                for (String side : List.of("key", "value")) {
                    JsonNode text = r.get(side);
                    if (text == null || text.isNull()) continue;
                    byte[] bytes = text.asText().getBytes(StandardCharsets.UTF_8);
                    JsonConverter conv = side.equals("key") ? keys : values;
                    try {
                        SchemaAndValue sv = conv.toConnectData(topic, bytes);
                        byte[] back = conv.fromConnectData(topic, sv.schema(), sv.value());
                        if (!JSON.readTree(back).equals(NUMBERS, JSON.readTree(bytes)))
                            problems.add(index + " " + topic + " " + side + ": written back differently: "
                                    + new String(back, StandardCharsets.UTF_8));
                    } catch (Exception e) {
                        problems.add(index + " " + topic + " " + side + ": " + e.getClass().getName() + ": " + e.getMessage());
                    }
                }
                JsonNode headers = r.get("headers");
                if (headers != null && !headers.isNull()) {
                    Iterator<Map.Entry<String, JsonNode>> it = headers.fields();
                    while (it.hasNext()) {
                        Map.Entry<String, JsonNode> h = it.next();
                        byte[] bytes = h.getValue().isNull() ? null : h.getValue().asText().getBytes(StandardCharsets.UTF_8);
                        try {
                            SchemaAndValue sv = jsonHeaders ? jsonHeader.toConnectHeader(topic, h.getKey(), bytes)
                                    : simpleHeader.toConnectHeader(topic, h.getKey(), bytes);
                            if (bytes != null && sv.value() == null)
                                problems.add(index + " " + topic + " header " + h.getKey() + ": read as null");
                        } catch (Exception e) {
                            problems.add(index + " " + topic + " header " + h.getKey() + ": " + e.getClass().getName()
                                    + ": " + e.getMessage());
                        }
                    }
                }
                index++;
            }
            ObjectNode result = JSON.createObjectNode();
            result.set("problems", problems);
            System.out.println(JSON.writeValueAsString(result));
            System.out.flush();
        }
    }
}
