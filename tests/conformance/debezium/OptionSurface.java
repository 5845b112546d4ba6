// Prints every option of one Debezium connector, one tab-separated line each: name, default, type,
// and where it is declared. The options are the config class's ALL_FIELDS, the static Field
// constants of that class and its superclasses (options such as field.name.adjustment.mode or
// skip.messages.without.change are read through CommonConnectorConfig without being in ALL_FIELDS),
// and those of the extra classes named after it (the topic naming strategy's, the schema history's).
//
//   java -cp 'lib/*:classes' OptionSurface CONFIG_CLASS [EXTRA_CLASS...]

import io.debezium.config.Field;

import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.TreeMap;

public class OptionSurface {
    public static void main(String[] args) throws Exception {
        Map<String, String> out = new TreeMap<>();
        Class<?> config = Class.forName(args[0]);
        for (Field field : (Field.Set) config.getField("ALL_FIELDS").get(null)) {
            add(out, field, "ALL_FIELDS");
        }
        for (String name : args) {
            for (Class<?> c = Class.forName(name); c != null; c = c.getSuperclass()) {
                for (java.lang.reflect.Field member : c.getDeclaredFields()) {
                    if (Modifier.isStatic(member.getModifiers()) && Field.class.isAssignableFrom(member.getType())) {
                        member.setAccessible(true);
                        add(out, (Field) member.get(null), c.getSimpleName());
                    }
                }
            }
        }
        out.values().forEach(System.out::println);
    }

    private static void add(Map<String, String> out, Field field, String origin) {
        if (field == null || out.containsKey(field.name())) {
            return;
        }
        String value = field.defaultValueAsString();
        String clean = value == null ? "" : value.replace("\t", " ").replace("\n", " ");
        out.put(field.name(), String.join("\t", field.name(), clean, String.valueOf(field.type()), origin));
    }
}
