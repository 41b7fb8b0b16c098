package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.MemoryUsage;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;

/**
 * Reads a worker JVM's MBeans (Connect's task metrics, the heap) through the attach API: the worker needs no JMX
 * port of its own, and what is read is what an operator's JMX console would show.
 */
public final class WorkerJmx implements AutoCloseable {

    private final JMXConnector connector;
    private final MBeanServerConnection mbeans;

    private WorkerJmx(JMXConnector connector) throws IOException {
        this.connector = connector;
        this.mbeans = connector.getMBeanServerConnection();
    }

    public static WorkerJmx attach(ManagedProcess process) {
        try {
            VirtualMachine vm = VirtualMachine.attach(Long.toString(process.pid()));
            try {
                String address = vm.startLocalManagementAgent();
                return new WorkerJmx(JMXConnectorFactory.connect(new JMXServiceURL(address)));
            } finally {
                vm.detach();
            }
        } catch (AttachNotSupportedException e) {
            throw new IllegalStateException("Cannot attach to " + process.name() + " (pid " + process.pid() + ")", e);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot reach the MBeans of " + process.name(), e);
        }
    }

    /**
     * An attribute of {@code kafka.connect:type=sink-task-metrics} for one task, e.g. {@code sink-record-read-total}
     * (records the task's consumer has handed to Connect since the task started).
     */
    public double sinkTaskMetric(String connectorName, int task, String attribute) {
        try {
            Set<ObjectName> names = mbeans.queryNames(new ObjectName("kafka.connect:type=sink-task-metrics,*"), null);
            for (ObjectName name : names) {
                if (unquoted(name.getKeyProperty("connector")).equals(connectorName)
                        && unquoted(name.getKeyProperty("task")).equals(Integer.toString(task))) {
                    return ((Number) mbeans.getAttribute(name, attribute)).doubleValue();
                }
            }
            throw new IllegalStateException("No sink-task-metrics for task " + task + " of " + connectorName
                    + " among " + names);
        } catch (JMException e) {
            throw new IllegalStateException("Cannot read " + attribute + " of " + connectorName + "-" + task, e);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + attribute + " of " + connectorName + "-" + task, e);
        }
    }

    /**
     * One of our plugin's metrics (KIP-877) for one task: an attribute of
     * {@code kafka.connect:type=plugins,connector=<name>,task=<n>}, e.g. {@code sink-rows-written-total}.
     */
    public double pluginMetric(String connectorName, int task, String attribute) {
        try {
            Set<ObjectName> names = mbeans.queryNames(new ObjectName("kafka.connect:type=plugins,*"), null);
            for (ObjectName name : names) {
                if (connectorName.equals(unquoted(name.getKeyProperty("connector")))
                        && Integer.toString(task).equals(unquoted(name.getKeyProperty("task")))
                        && Set.of("connector", "task").containsAll(name.getKeyPropertyList().keySet().stream()
                                .filter(k -> !k.equals("type")).toList())) {
                    return ((Number) mbeans.getAttribute(name, attribute)).doubleValue();
                }
            }
            throw new IllegalStateException("No plugin metrics for task " + task + " of " + connectorName + " among " + names);
        } catch (JMException e) {
            throw new IllegalStateException("Cannot read " + attribute + " of " + connectorName + "-" + task, e);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + attribute + " of " + connectorName + "-" + task, e);
        }
    }

    /**
     * Every plugin metric of one connector's tasks (whatever their extra tags: a replica's name, a transform's
     * alias), each attribute summed over the tasks: what a dashboard summing by connector shows.
     */
    public Map<String, Double> pluginMetrics(String connectorName) {
        try {
            Map<String, Double> out = new TreeMap<>();
            for (ObjectName name : mbeans.queryNames(new ObjectName("kafka.connect:type=plugins,*"), null)) {
                if (!connectorName.equals(unquoted(name.getKeyProperty("connector")))) {
                    continue;
                }
                for (var attribute : mbeans.getMBeanInfo(name).getAttributes()) {
                    Object v = mbeans.getAttribute(name, attribute.getName());
                    if (v instanceof Number n) {
                        out.merge(attribute.getName(), n.doubleValue(), Double::sum);
                    }
                }
            }
            return out;
        } catch (JMException e) {
            throw new IllegalStateException("Cannot read the plugin metrics of " + connectorName, e);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the plugin metrics of " + connectorName, e);
        }
    }

    public MemoryUsage heap() {
        try {
            return MemoryUsage.from((CompositeData) mbeans.getAttribute(new ObjectName("java.lang:type=Memory"),
                    "HeapMemoryUsage"));
        } catch (JMException e) {
            throw new IllegalStateException("Cannot read the heap usage", e);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the heap usage", e);
        }
    }

    private static String unquoted(String value) {
        return value != null && value.length() >= 2 && value.startsWith("\"") ? ObjectName.unquote(value)
                : String.valueOf(value);
    }

    @Override
    public void close() {
        try {
            connector.close();
        } catch (IOException ignored) {
            // the worker may be gone already; nothing is left open on this side
        }
    }
}
