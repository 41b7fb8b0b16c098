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
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP relay in front of the real Postgres that makes the outcome of the next COMMIT unknown to the client,
 * one of two ways: the COMMIT reaches the server and the connection is cut as its reply comes back (it
 * committed), or the connection is cut instead of passing the COMMIT on (the server rolls back). Either way
 * the client sees only a lost connection. Needs {@code prepareThreshold=0} on the client so COMMIT always
 * travels as text.
 */
final class CommitDroppingProxy implements AutoCloseable {
    private static final byte[] COMMIT = "COMMIT".getBytes(StandardCharsets.US_ASCII);

    private enum Cut { AFTER_COMMIT_REACHED_THE_SERVER, BEFORE_COMMIT_REACHES_THE_SERVER }

    private final ServerSocket server;
    private final int upstreamPort;
    private final AtomicReference<Cut> armed = new AtomicReference<>();
    final AtomicBoolean fired = new AtomicBoolean();
    /** What clients sent after the cut, one entry per read, as ISO-8859-1 text: shows which statements came in which order. */
    final List<String> sentAfterCut = new CopyOnWriteArrayList<>();
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

    /** The next COMMIT reaches the server; the connection is cut when the server answers it, so the client never hears. */
    void cutAfterNextCommit() {
        armed.set(Cut.AFTER_COMMIT_REACHED_THE_SERVER);
    }

    /** The next COMMIT never reaches the server: the connection is cut in its place. */
    void dropNextCommit() {
        armed.set(Cut.BEFORE_COMMIT_REACHES_THE_SERVER);
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
                sockets.add(client);
                sockets.add(upstream);
                AtomicBoolean commitInFlight = new AtomicBoolean();
                pump(client, upstream, true, commitInFlight);
                pump(upstream, client, false, commitInFlight);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean clientToServer, AtomicBoolean commitInFlight) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (clientToServer) {
                        if (fired.get()) {
                            sentAfterCut.add(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                        }
                        Cut cut = contains(buf, n, COMMIT) ? armed.getAndSet(null) : null;
                        if (cut == Cut.BEFORE_COMMIT_REACHES_THE_SERVER) {
                            fired.set(true);
                            return;
                        }
                        commitInFlight.compareAndSet(false, cut == Cut.AFTER_COMMIT_REACHED_THE_SERVER);
                    } else if (commitInFlight.get()) {
                        // The server answers COMMIT only once it has committed (synchronous_commit=on): cut before the client hears.
                        fired.set(true);
                        return;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
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
