package io.asofconnect.it.harness;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A small client for the Connect REST API. Every wait is bounded; status reads are polled because Connect's
 * status topic lags behind reality (a SIGKILLed worker's tasks stay RUNNING until the group notices).
 */
public final class ConnectRest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration POLL = Duration.ofMillis(500);

    private final URI base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public ConnectRest(String baseUrl) {
        this.base = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
    }

    public URI baseUri() {
        return base;
    }

    /** A response: HTTP status and parsed body (null when empty or not JSON). */
    public record Response(int status, JsonNode body, String raw) {
        public boolean ok() {
            return status >= 200 && status < 300;
        }
    }

    public Response get(String path) {
        return send(HttpRequest.newBuilder(base.resolve(path)).GET());
    }

    public Response put(String path, Object body) {
        return send(HttpRequest.newBuilder(base.resolve(path))
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(toJson(body))));
    }

    public Response post(String path, Object body) {
        return send(HttpRequest.newBuilder(base.resolve(path))
                .header("Content-Type", "application/json")
                .POST(body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(toJson(body))));
    }

    public Response delete(String path) {
        return send(HttpRequest.newBuilder(base.resolve(path)).DELETE());
    }

    /** Class names of every plugin the worker loaded, transforms and converters included. */
    public List<String> pluginClasses() {
        Response r = require(get("connector-plugins?connectorsOnly=false"), "list plugins");
        List<String> classes = new ArrayList<>();
        r.body().forEach(p -> classes.add(p.path("class").asText()));
        return classes;
    }

    /** PUT /connector-plugins/{class}/config/validate; the class name may be simple or fully qualified. */
    public JsonNode validate(String pluginClass, Map<String, ?> config) {
        return require(put("connector-plugins/" + pluginClass + "/config/validate", config), "validate config").body();
    }

    /**
     * Creates or updates a connector; retried (bounded) while the worker answers 409 during a rebalance or
     * 5xx while it joins the group.
     */
    public JsonNode putConnectorConfig(String name, Map<String, ?> config) {
        Instant deadline = Instant.now().plus(Duration.ofSeconds(90));
        Response last;
        do {
            last = put("connectors/" + name + "/config", config);
            if (last.ok()) {
                return last.body();
            }
            if (last.status() != 409 && last.status() < 500) {
                break;
            }
            Waits.pause(POLL);
        } while (Instant.now().isBefore(deadline));
        throw new IllegalStateException("PUT config of connector " + name + " failed: HTTP " + last.status() + " "
                + last.raw());
    }

    public Optional<JsonNode> status(String name) {
        Response r = get("connectors/" + name + "/status");
        return r.ok() ? Optional.of(r.body()) : Optional.empty();
    }

    public void deleteConnector(String name) {
        Response r = delete("connectors/" + name);
        if (!r.ok() && r.status() != 404) {
            throw new IllegalStateException("DELETE connector " + name + " failed: HTTP " + r.status() + " " + r.raw());
        }
    }

    public void restartConnector(String name, boolean includeTasks, boolean onlyFailed) {
        require(post("connectors/" + name + "/restart?includeTasks=" + includeTasks + "&onlyFailed=" + onlyFailed, null),
                "restart connector " + name);
    }

    /** POST /connectors/{name}/tasks/{task}/restart: the way out of FAILED once its cause is fixed. */
    public void restartTask(String name, int task) {
        require(post("connectors/" + name + "/tasks/" + task + "/restart", null), "restart task " + task + " of " + name);
    }

    /** Waits until the connector is RUNNING with exactly {@code tasks} tasks, all RUNNING. */
    public JsonNode awaitRunning(String name, int tasks, Duration timeout) {
        return awaitStatus(name, timeout, "connector RUNNING with exactly " + tasks + " RUNNING tasks",
                s -> allRunning(s, tasks));
    }

    /**
     * Waits until the connector and exactly {@code tasks} tasks are RUNNING and none of them is reported by
     * {@code goneWorkerId} any more: after a SIGKILL the old owner's RUNNING entries linger until reassignment.
     */
    public JsonNode awaitRunningAwayFrom(String name, int tasks, String goneWorkerId, Duration timeout) {
        return awaitStatus(name, timeout, "connector and " + tasks + " tasks RUNNING on workers other than "
                + goneWorkerId, s -> allRunning(s, tasks) && !mentionsWorker(s, goneWorkerId));
    }

    /** Waits until some task is FAILED; returns its status entry (with the trace). */
    public JsonNode awaitTaskFailed(String name, Duration timeout) {
        JsonNode status = awaitStatus(name, timeout, "a FAILED task", s -> firstFailedTask(s) != null);
        return firstFailedTask(status);
    }

    public JsonNode awaitStatus(String name, Duration timeout, String what, Predicate<JsonNode> condition) {
        Instant deadline = Instant.now().plus(timeout);
        JsonNode last = null;
        while (Instant.now().isBefore(deadline)) {
            Optional<JsonNode> status = status(name);
            if (status.isPresent()) {
                last = status.get();
                if (condition.test(last)) {
                    return last;
                }
            }
            Waits.pause(POLL);
        }
        throw new IllegalStateException("Timed out after " + timeout + " waiting for " + name + ": " + what
                + "; last status " + last);
    }

    /** Waits for the REST server to answer and, for a distributed worker, to have joined its group. */
    public void awaitReady(Duration timeout, ManagedProcess process) {
        Instant deadline = Instant.now().plus(timeout);
        while (Instant.now().isBefore(deadline)) {
            if (process != null && !process.isAlive()) {
                throw new IllegalStateException(process.name() + " exited during start-up; see " + process.logFile());
            }
            try {
                Response r = send(HttpRequest.newBuilder(base.resolve("connectors")).GET());
                if (r.ok()) {
                    return;
                }
            } catch (IllegalStateException notYet) {
                // connection refused until the REST server is up
            }
            Waits.pause(POLL);
        }
        throw new IllegalStateException("Connect REST at " + base + " not ready within " + timeout
                + (process == null ? "" : "; see " + process.logFile()));
    }

    public static String workerIdOf(JsonNode entry) {
        return entry.path("worker_id").asText();
    }

    private static boolean allRunning(JsonNode status, int tasks) {
        if (!"RUNNING".equals(status.path("connector").path("state").asText())) {
            return false;
        }
        JsonNode taskList = status.path("tasks");
        if (taskList.size() != tasks) {
            return false;
        }
        for (JsonNode task : taskList) {
            if (!"RUNNING".equals(task.path("state").asText())) {
                return false;
            }
        }
        return true;
    }

    private static boolean mentionsWorker(JsonNode status, String workerId) {
        if (workerId.equals(workerIdOf(status.path("connector")))) {
            return true;
        }
        for (JsonNode task : status.path("tasks")) {
            if (workerId.equals(workerIdOf(task))) {
                return true;
            }
        }
        return false;
    }

    private static JsonNode firstFailedTask(JsonNode status) {
        for (JsonNode task : status.path("tasks")) {
            if ("FAILED".equals(task.path("state").asText())) {
                return task;
            }
        }
        return null;
    }

    private Response require(Response r, String what) {
        if (!r.ok()) {
            throw new IllegalStateException("Connect REST call to " + what + " failed: HTTP " + r.status() + " " + r.raw());
        }
        return r;
    }

    private Response send(HttpRequest.Builder request) {
        try {
            HttpResponse<String> response = http.send(request.timeout(REQUEST_TIMEOUT).build(),
                    HttpResponse.BodyHandlers.ofString());
            String raw = response.body();
            JsonNode body = null;
            if (raw != null && !raw.isBlank()) {
                try {
                    body = JSON.readTree(raw);
                } catch (IOException notJson) {
                    body = null;
                }
            }
            return new Response(response.statusCode(), body, raw);
        } catch (IOException e) {
            throw new IllegalStateException("Connect REST request to " + base + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted during a Connect REST request", e);
        }
    }

    private static String toJson(Object body) {
        try {
            return JSON.writeValueAsString(body);
        } catch (IOException e) {
            throw new IllegalArgumentException("Cannot serialise a REST request body", e);
        }
    }
}
