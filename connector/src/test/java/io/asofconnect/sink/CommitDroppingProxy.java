package io.asofconnect.sink;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A TCP relay in front of the real Postgres that, when armed, lets the next COMMIT reach the server and
 * then cuts the connection before the reply comes back: the client cannot know whether it committed.
 * Needs {@code prepareThreshold=0} on the client so COMMIT always travels as text.
 */
final class CommitDroppingProxy implements AutoCloseable {
    private static final byte[] COMMIT = "COMMIT".getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket server;
    private final int upstreamPort;
    private final AtomicBoolean armed = new AtomicBoolean();
    final AtomicBoolean fired = new AtomicBoolean();
    private final AtomicBoolean swallowReplies = new AtomicBoolean();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    CommitDroppingProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "commit-dropping-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    void arm() {
        armed.set(true);
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, true);
                pump(upstream, client, false);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean clientToServer) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    boolean commit = clientToServer && armed.get() && contains(buf, n, COMMIT);
                    if (commit) {
                        swallowReplies.set(true);
                    }
                    if (!clientToServer && swallowReplies.get()) {
                        continue;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                    if (commit) {
                        armed.set(false);
                        // Give the server time to commit, then drop both sides before the client hears back.
                        Thread.sleep(500);
                        fired.set(true);
                        from.close();
                        to.close();
                        swallowReplies.set(false);
                        return;
                    }
                }
            } catch (IOException | InterruptedException e) {
                // The other direction closed the sockets; this pump is done.
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static boolean contains(byte[] buf, int n, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= n; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (buf[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // Already closed.
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
