package io.asofconnect.writer;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class JsonTextTest {
    @Test
    void nestedValuesBecomeJsonText() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("q\"uote", "line\nbreak\u0001");
        m.put("list", List.of(1, 2.5, true));
        m.put("nul", null);
        assertThat(JsonText.render(m)).isEqualTo("{\"q\\\"uote\":\"line\\nbreak\\u0001\",\"list\":[1,2.5,true],\"nul\":null}");
    }
}
