package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Picks free TCP ports on the loopback address so parallel runs never collide on fixed ports. A port is
 * handed out once per JVM: the kernel may give the same ephemeral port to two binds in a row once the first
 * socket is closed, and a broker given one port for both its listeners refuses to start.
 */
public final class FreePorts {
    private static final int ATTEMPTS = 1_000;
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private FreePorts() {
    }

    public static int pick() {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = bindAny();
            if (HANDED_OUT.add(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no port on 127.0.0.1 that this JVM has not handed out already in "
                + ATTEMPTS + " attempts (" + HANDED_OUT.size() + " handed out)");
    }

    private static int bindAny() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free port on 127.0.0.1", e);
        }
    }
}
