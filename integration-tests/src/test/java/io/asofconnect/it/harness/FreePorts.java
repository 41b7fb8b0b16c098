package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Picks free TCP ports on the loopback address so parallel runs never collide on fixed ports. */
public final class FreePorts {

    private FreePorts() {
    }

    public static int pick() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find a free port on 127.0.0.1", e);
        }
    }
}
